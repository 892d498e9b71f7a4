// SPDX-License-Identifier: GPL-2.0
/*
 * tsq_probe: its parameters, its per-CPU counters and its files in
 * /sys/kernel/tsq_probe/ (stats, histograms, reset).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kobject.h>
#include <linux/module.h>
#include <linux/percpu.h>
#include <linux/string.h>
#include <linux/sysfs.h>

#include "tsq_probe.h"

/* ---- parameters --------------------------------------------------------- */

bool tsq_recover = true;
module_param_named(recover, tsq_recover, bool, 0644);
MODULE_PARM_DESC(recover, "push sockets found stalled by a lost wake-up (default 1)");

bool tsq_fault_inject;
module_param_named(fault_inject, tsq_fault_inject, bool, 0444);
MODULE_PARM_DESC(fault_inject, "allow fault injection through fault_ppm (load time only, default 0)");

/*
 * What an injected fault does (load time, with fault_inject=1):
 *   flag       the completion's hook clears TSQ_THROTTLED before it looks
 *              (the flag never reached the completer);
 *   completer  tcp_wfree() itself does not see the flag and the flag is
 *              left set, as 6.1's completer-side race leaves it: cleared
 *              after the hook has looked, set again when tcp_wfree()
 *              returns (completer_entry()).
 */
const char *const tsq_fault_mode_names[FAULT_NR] = {
	[FAULT_FLAG]		= "flag",
	[FAULT_COMPLETER]	= "completer",
};

int tsq_fault_mode = FAULT_FLAG;

static int fault_mode_set(const char *val, const struct kernel_param *kp)
{
	int i = sysfs_match_string(tsq_fault_mode_names, val);

	if (i < 0) {
		pr_err("fault_mode=%s refused: must be flag or completer\n", val);
		return -EINVAL;
	}
	tsq_fault_mode = i;
	return 0;
}

static int fault_mode_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%s\n", tsq_fault_mode_names[tsq_fault_mode]);
}

static const struct kernel_param_ops fault_mode_ops = {
	.set = fault_mode_set,
	.get = fault_mode_get,
};
module_param_cb(fault_mode, &fault_mode_ops, &tsq_fault_mode, 0444);
MODULE_PARM_DESC(fault_mode, "load time, with fault_inject=1: flag (the hook clears TSQ_THROTTLED, default) or completer (tcp_wfree() misses it and it stays set)");

/* Load-time constants: the completer fault's kretprobe hooks tcp_wfree. */
bool tsq_fault_completer(void)
{
	return tsq_fault_inject && tsq_fault_mode == FAULT_COMPLETER;
}

/*
 * How the hooks attach (see attach_cheapest()):
 * asked for at load time; once loaded, each parameter reads as the
 * mechanism in use.
 */
const char *const tsq_attach_names[ATTACH_NR] = {
	[ATTACH_AUTO]		= "auto",
	[ATTACH_TRACEPOINT]	= "tracepoint",
	[ATTACH_FTRACE]		= "ftrace",
	[ATTACH_KPROBE]		= "kprobe",
};

/* One attach parameter: where it is kept and what it may be set to. */
struct attach_param {
	int *val;
	unsigned int allowed;	/* bit per ATTACH_* */
	const char *choices;	/* for the refusal */
};

static int attach_set(const char *val, const struct kernel_param *kp)
{
	const struct attach_param *a = kp->arg;
	int i = sysfs_match_string(tsq_attach_names, val);

	if (i < 0 || !(a->allowed & BIT(i))) {
		pr_err("%s=%s refused: must be %s\n", kp->name, val, a->choices);
		return -EINVAL;
	}
	*a->val = i;
	return 0;
}

static int attach_get(char *buf, const struct kernel_param *kp)
{
	const struct attach_param *a = kp->arg;

	return sysfs_emit(buf, "%s\n", tsq_attach_names[*a->val]);
}

static const struct kernel_param_ops attach_ops = {
	.set = attach_set,
	.get = attach_get,
};

int tsq_xmit_attach = ATTACH_AUTO;
static const struct attach_param xmit_attach_param = {
	.val		= &tsq_xmit_attach,
	.allowed	= BIT(ATTACH_AUTO) | BIT(ATTACH_TRACEPOINT) | BIT(ATTACH_KPROBE),
	.choices	= "auto, tracepoint or kprobe",
};
module_param_cb(xmit_attach, &attach_ops, (void *)&xmit_attach_param, 0444);
MODULE_PARM_DESC(xmit_attach, "load time: hook __dev_queue_xmit through auto (tracepoint net_dev_queue, else kprobe), tracepoint or kprobe; reads as the one in use");

int tsq_wfree_attach = ATTACH_AUTO;
static const struct attach_param wfree_attach_param = {
	.val		= &tsq_wfree_attach,
	.allowed	= BIT(ATTACH_AUTO) | BIT(ATTACH_FTRACE) | BIT(ATTACH_KPROBE),
	.choices	= "auto, ftrace or kprobe",
};
module_param_cb(wfree_attach, &attach_ops, (void *)&wfree_attach_param, 0444);
MODULE_PARM_DESC(wfree_attach, "load time: hook tcp_wfree through auto (ftrace, else kprobe), ftrace or kprobe; reads as the one in use");

/*
 * Set as soon as init starts, before any probe: from then on fault_ppm
 * cannot be set without fault_inject=1.  Before it, the only writer is the
 * load-time parser, whose order of arguments is not ours to choose; init
 * checks the pair itself.
 */
static bool params_locked;
unsigned int tsq_fault_ppm;

static int fault_ppm_set(const char *val, const struct kernel_param *kp)
{
	unsigned int v;
	int ret;

	ret = kstrtouint(val, 0, &v);
	if (ret || v > PPM) {
		pr_err("fault_ppm=%s refused: must be 0..%u parts per million\n", val, PPM);
		return -EINVAL;
	}
	if (READ_ONCE(params_locked) && !tsq_fault_inject && v) {
		pr_err("fault_ppm=%u refused: load the module with fault_inject=1 first\n", v);
		return -EPERM;
	}
	WRITE_ONCE(tsq_fault_ppm, v);
	return 0;
}

static const struct kernel_param_ops fault_ppm_ops = {
	.set = fault_ppm_set,
	.get = param_get_uint,
};
module_param_cb(fault_ppm, &fault_ppm_ops, &tsq_fault_ppm, 0644);
MODULE_PARM_DESC(fault_ppm, "share of TX completions that miss TSQ_THROTTLED, in parts per million (0..1000000, needs fault_inject=1)");

/* A parameter writable at run time within a range: one refusal line. */
struct range_param {
	unsigned int *val;
	unsigned int min, max;
	const char *unit;	/* for the refusal */
};

static int range_set(const char *val, const struct kernel_param *kp)
{
	const struct range_param *r = kp->arg;
	unsigned int v;

	if (kstrtouint(val, 10, &v) || v < r->min || v > r->max) {
		pr_err("%s=%s refused: must be %u..%u %s\n",
		       kp->name, val, r->min, r->max, r->unit);
		return -EINVAL;
	}
	WRITE_ONCE(*r->val, v);
	return 0;
}

static int range_get(char *buf, const struct kernel_param *kp)
{
	const struct range_param *r = kp->arg;

	return sysfs_emit(buf, "%u\n", READ_ONCE(*r->val));
}

static const struct kernel_param_ops range_ops = {
	.set = range_set,
	.get = range_get,
};

/*
 * Corked data that waited this long with nothing of its socket below TCP
 * before it left is a late cork release (see tsq_cork_stop()).
 */
unsigned int tsq_late_cork_ms = 20;
static const struct range_param late_cork_ms_param = {
	.val = &tsq_late_cork_ms, .min = 1, .max = 1000, .unit = "milliseconds",
};
module_param_cb(late_cork_ms, &range_ops, (void *)&late_cork_ms_param, 0644);
MODULE_PARM_DESC(late_cork_ms, "count a cork released after waiting this long with nothing below TCP (1..1000, default 20)");

/*
 * One TCP skb in txc_sample gets a TX-completion clock, drawn at random
 * when it reaches a device (tsq_txc_stamp()).  The stall checks and the
 * cork clocks see every skb whatever the value.
 */
unsigned int tsq_txc_sample = 16;
static const struct range_param txc_sample_param = {
	.val = &tsq_txc_sample, .min = 1, .max = TSQ_TXC_SAMPLE_MAX,
	.unit = "(time one TCP skb in N)",
};
module_param_cb(txc_sample, &range_ops, (void *)&txc_sample_param, 0644);
MODULE_PARM_DESC(txc_sample, "time the TX completion of one TCP skb in N, drawn at random (1..65536, default 16; 1: every one)");

/*
 * Init's check of the load-time pair, the first thing it does: from then on
 * fault_ppm_set() refuses a fault_ppm without fault_inject=1 itself.
 */
int tsq_params_check(void)
{
	WRITE_ONCE(params_locked, true);
	if (tsq_fault_ppm && !tsq_fault_inject) {
		pr_err("refusing to load: fault_ppm=%u needs fault_inject=1\n", tsq_fault_ppm);
		return -EINVAL;
	}
	if (tsq_fault_mode != FAULT_FLAG && !tsq_fault_inject) {
		pr_err("refusing to load: fault_mode=%s needs fault_inject=1\n",
		       tsq_fault_mode_names[tsq_fault_mode]);
		return -EINVAL;
	}
	return 0;
}

/* ---- statistics: per CPU, summed on read -------------------------------- */

static const char *const stat_names[ST_NR] = {
	[ST_AUTOCORK]		= "autocork",
	[ST_LOST_WAKEUPS]	= "lost_wakeups",
	[ST_RECOVERIES]		= "recoveries",
	[ST_RECOVERIES_IDLE]	= "recoveries_idle",
	[ST_WAKEUP_CHECKS]	= "wakeup_checks",
	[ST_CHECK_OVERFLOW]	= "check_overflow",
	[ST_FAULTS_INJECTED]	= "faults_injected",
	[ST_TXC_SAMPLES]	= "txc_samples",
	[ST_TXC_EVICTED]	= "txc_evicted",
	[ST_CORK_SAMPLES]	= "cork_samples",
	[ST_CORK_EVICTED]	= "cork_evicted",
	[ST_APP_HOLDS]		= "app_holds",
	[ST_TXC_TASK]		= "txc_task",
	[ST_LATE_CORK]		= "late_cork_releases",
	[ST_TXC_SW_GSO]		= "txc_sw_gso",
	[ST_CORK_EXPIRED]	= "cork_expired",
	[ST_DEV_SLOTS_FULL]	= "dev_slots_full",
	[ST_REARMED]		= "checks_rearmed",
	[ST_REPUSH_SKIPPED]	= "repush_skipped",
	[ST_TXC_STAMPS]		= "txc_stamps",
	[ST_TXC_UNSEEN]		= "completions_unseen",
	[ST_FLAGGED]		= "flagged_suspects",
};

DEFINE_PER_CPU_ALIGNED(struct tsq_pcpu, tsq_pcpu);

u64 tsq_stat_sum(enum tsq_stat s)
{
	u64 sum = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		sum += READ_ONCE(per_cpu_ptr(&tsq_pcpu, cpu)->stat[s]);
	return sum;
}

/* ---- sysfs -------------------------------------------------------------- */

static unsigned long missed_base;

/* Not atomic against hits on other CPUs: a concurrent hit may survive. */
static void reset_all(void)
{
	int cpu, i;

	for_each_possible_cpu(cpu)
		for (i = 0; i < ST_NR; i++)
			WRITE_ONCE(per_cpu_ptr(&tsq_pcpu, cpu)->stat[i], 0);
	tsq_hists_reset();
	WRITE_ONCE(missed_base, tsq_probes_missed_raw());
}

static ssize_t stats_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	struct log2_hist h;
	int i, len = 0;

	for (i = 0; i < ST_NR; i++)
		len += sysfs_emit_at(buf, len, "%s %llu\n", stat_names[i], tsq_stat_sum(i));
	tsq_hist_read(HIST_CORK, &h);
	len += sysfs_emit_at(buf, len, "cork_hold_max_ns %llu\n", h.max_ns);
	len += sysfs_emit_at(buf, len, "txc_max_ns %llu\n", tsq_txc_max_ns());
	len += sysfs_emit_at(buf, len, "probes_missed %lu\n",
			     tsq_probes_missed_raw() - READ_ONCE(missed_base));
	len += sysfs_emit_at(buf, len, "recover %d\n", READ_ONCE(tsq_recover));
	len += sysfs_emit_at(buf, len, "fault_ppm %u\n", READ_ONCE(tsq_fault_ppm));
	len += sysfs_emit_at(buf, len, "late_cork_ms %u\n", READ_ONCE(tsq_late_cork_ms));
	len += sysfs_emit_at(buf, len, "txc_sample %u\n", READ_ONCE(tsq_txc_sample));
	return len;
}

static ssize_t reset_store(struct kobject *kobj, struct kobj_attribute *attr,
			   const char *buf, size_t count)
{
	bool yes;

	if (kstrtobool(buf, &yes) || !yes)
		return -EINVAL;
	reset_all();
	return count;
}

/* Root only: the counters and latencies tell traffic timing to containers. */
static struct kobj_attribute stats_attr = __ATTR(stats, 0400, stats_show, NULL);
static struct kobj_attribute reset_attr = __ATTR_WO(reset);

static struct attribute *tsq_attrs[] = {
	&stats_attr.attr,
	&tsq_histograms_attr.attr,
	&reset_attr.attr,
	NULL,
};

static const struct attribute_group tsq_group = {
	.attrs = tsq_attrs,
};

static struct kobject *tsq_kobj;

int tsq_sysfs_add(void)
{
	int ret;

	tsq_kobj = kobject_create_and_add("tsq_probe", kernel_kobj);
	if (!tsq_kobj) {
		pr_err("refusing to load: cannot create /sys/kernel/tsq_probe\n");
		return -ENOMEM;
	}
	ret = sysfs_create_group(tsq_kobj, &tsq_group);
	if (ret) {
		pr_err("refusing to load: cannot create /sys/kernel/tsq_probe files (%d)\n", ret);
		kobject_put(tsq_kobj);
		return ret;
	}
	/* All the histograms, more than a sysfs page holds. */
	ret = tsq_hist_proc_add();
	if (ret) {
		sysfs_remove_group(tsq_kobj, &tsq_group);
		kobject_put(tsq_kobj);
	}
	return ret;
}

void tsq_sysfs_remove(void)
{
	tsq_hist_proc_remove();
	sysfs_remove_group(tsq_kobj, &tsq_group);
	kobject_put(tsq_kobj);
}
