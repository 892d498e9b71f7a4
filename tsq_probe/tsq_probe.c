// SPDX-License-Identifier: GPL-2.0
/*
 * tsq_probe - measure, detect and repair TSQ lost wake-ups.
 *
 * When tcp_push() autocorks a small write it sets TSQ_THROTTLED and relies
 * on the TX completion of the bytes still below TCP: tcp_wfree() sees the
 * flag and schedules the TSQ tasklet, which pushes the corked data.  If the
 * completion misses the flag (a store-buffer race on weakly ordered CPUs
 * before the tcp_push() barrier fix, or a driver that completes late), no
 * one pushes until the peer's delayed ACK arrives: a 40 ms stall.
 *
 * This module hooks three places:
 *   tcp_push() (kretprobe) counts autocork events, starts the cork-hold
 *                        clock and re-checks the handshake after a full
 *                        barrier;
 *   __dev_queue_xmit()   (tracepoint net_dev_queue, else a kprobe) stamps
 *                        TCP skbs handed to a device and stops the
 *                        cork-hold clock when the corked bytes leave;
 *   tcp_wfree()          (ftrace, else a kprobe; a kretprobe with
 *                        fault_mode=completer) measures TX-completion
 *                        latency per device, injects missed flags on
 *                        request, and re-checks the handshake after a full
 *                        barrier.
 * A socket that may have lost its wake-up is checked again under its lock
 * from a work item; if it really is stalled (unsent data TCP may send now,
 * nothing below TCP, no push pending, nothing else that will send it) it is
 * counted and, with recover=1, pushed through tcp_release_cb() exactly as
 * the TSQ tasklet would have.
 *
 * Contexts.  Handlers never sleep and never take the socket lock.
 *   push_entry/push_return: task context, the socket owned by the caller
 *	(tcp_sendmsg()/do_tcp_sendpages() under lock_sock()), BH enabled.
 *   xmit_hit: from the tracepoint always with BH disabled (the function
 *	takes rcu_read_lock_bh() before it); from the kprobe also in task
 *	context with BH enabled (the function's entry), softirq (forwarding,
 *	TSQ tasklet, timers), or task context with BH disabled (release_sock(),
 *	veth).
 *   wfree_hit: softirq (NAPI TX completion, the usual case), hardirq
 *	(drivers freeing in their IRQ handler), task context with BH disabled
 *	(veth, release_sock()) and task context with BH *enabled*: an skb
 *	dropped inside tcp_sendmsg() (no route, LOCAL_OUT drop).
 * On architectures without kprobes-on-ftrace the kprobe handlers run from a
 * breakpoint exception, which the kernel accounts as NMI (in_nmi()); the
 * ftrace callback runs in its caller's context.
 * Where a handler may run decides what it may do: see suspect() and
 * leave_push_to_owner().
 *
 * Everything is exported in /sys/kernel/tsq_probe/ (stats, histograms,
 * reset); see tsq_probe/README.md for the meaning of every key.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/ftrace.h>
#include <linux/hash.h>
#include <linux/hrtimer.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/irq_work.h>
#include <linux/kallsyms.h>
#include <linux/kobject.h>
#include <linux/kprobes.h>
#include <linux/module.h>
#include <linux/netdevice.h>
#include <linux/percpu.h>
#include <linux/random.h>
#include <linux/rcupdate.h>
#include <linux/slab.h>
#include <linux/socket.h>
#include <linux/sysfs.h>
#include <linux/tcp.h>
#include <linux/tracepoint.h>
#include <linux/wait_bit.h>
#include <linux/workqueue.h>
#include <net/tcp.h>

#ifndef TAILFIX_VERSION
#define TAILFIX_VERSION "unknown"
#endif

/* in_irq() was renamed in_hardirq() in 5.11. */
#ifndef in_hardirq
#define in_hardirq()	in_irq()
#endif

/* tcp_snd_cwnd() is 5.19 (the Kbuild looks for it); 5.10 has the field. */
#ifndef TSQ_HAVE_SND_CWND
static inline u32 tcp_snd_cwnd(const struct tcp_sock *tp)
{
	return tp->snd_cwnd;
}
#endif

/* The taint for a kernel that ran fault injection (TAINT_TEST where it exists). */
#ifdef TAINT_TEST
#define TSQ_TAINT	TAINT_TEST
#else
#define TSQ_TAINT	TAINT_USER
#endif

#define HIST_BUCKETS	40	/* log2 of nanoseconds: up to ~550 s */
#define MAX_DEVS	16	/* per-device TX-completion histograms */
#define TXC_BITS	12	/* skbs waiting for their completion */
#define CORK_BITS	8	/* sockets with corked data */
#define CHECK_SLOTS	64	/* sockets waiting for a check under lock */
#define PPM		1000000U

/* ---- parameters ---------------------------------------------------------- */

static bool recover = true;
module_param(recover, bool, 0644);
MODULE_PARM_DESC(recover, "push sockets found stalled by a lost wake-up (default 1)");

static bool fault_inject;
module_param(fault_inject, bool, 0444);
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
enum { FAULT_FLAG, FAULT_COMPLETER, FAULT_NR };

static const char *const fault_mode_names[FAULT_NR] = {
	[FAULT_FLAG]		= "flag",
	[FAULT_COMPLETER]	= "completer",
};

static int fault_mode = FAULT_FLAG;

static int fault_mode_set(const char *val, const struct kernel_param *kp)
{
	int i = sysfs_match_string(fault_mode_names, val);

	if (i < 0) {
		pr_err("fault_mode=%s refused: must be flag or completer\n", val);
		return -EINVAL;
	}
	fault_mode = i;
	return 0;
}

static int fault_mode_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%s\n", fault_mode_names[fault_mode]);
}

static const struct kernel_param_ops fault_mode_ops = {
	.set = fault_mode_set,
	.get = fault_mode_get,
};
module_param_cb(fault_mode, &fault_mode_ops, &fault_mode, 0444);
MODULE_PARM_DESC(fault_mode, "load time, with fault_inject=1: flag (the hook clears TSQ_THROTTLED, default) or completer (tcp_wfree() misses it and it stays set)");

/* Load-time constants: the completer fault's kretprobe hooks tcp_wfree. */
static bool fault_completer(void)
{
	return fault_inject && fault_mode == FAULT_COMPLETER;
}

/*
 * How the hooks attach (see attach_cheapest()):
 * asked for at load time; once loaded, each parameter reads as the
 * mechanism in use.
 */
enum { ATTACH_AUTO, ATTACH_TRACEPOINT, ATTACH_FTRACE, ATTACH_KPROBE, ATTACH_NR };

static const char *const attach_names[ATTACH_NR] = {
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
	int i = sysfs_match_string(attach_names, val);

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

	return sysfs_emit(buf, "%s\n", attach_names[*a->val]);
}

static const struct kernel_param_ops attach_ops = {
	.set = attach_set,
	.get = attach_get,
};

static int xmit_attach = ATTACH_AUTO;
static const struct attach_param xmit_attach_param = {
	.val		= &xmit_attach,
	.allowed	= BIT(ATTACH_AUTO) | BIT(ATTACH_TRACEPOINT) | BIT(ATTACH_KPROBE),
	.choices	= "auto, tracepoint or kprobe",
};
module_param_cb(xmit_attach, &attach_ops, (void *)&xmit_attach_param, 0444);
MODULE_PARM_DESC(xmit_attach, "load time: hook __dev_queue_xmit through auto (tracepoint net_dev_queue, else kprobe), tracepoint or kprobe; reads as the one in use");

static int wfree_attach = ATTACH_AUTO;
static const struct attach_param wfree_attach_param = {
	.val		= &wfree_attach,
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
static unsigned int fault_ppm;

static int fault_ppm_set(const char *val, const struct kernel_param *kp)
{
	unsigned int v;
	int ret;

	ret = kstrtouint(val, 0, &v);
	if (ret || v > PPM) {
		pr_err("fault_ppm=%s refused: must be 0..%u parts per million\n", val, PPM);
		return -EINVAL;
	}
	if (READ_ONCE(params_locked) && !fault_inject && v) {
		pr_err("fault_ppm=%u refused: load the module with fault_inject=1 first\n", v);
		return -EPERM;
	}
	WRITE_ONCE(fault_ppm, v);
	return 0;
}

static const struct kernel_param_ops fault_ppm_ops = {
	.set = fault_ppm_set,
	.get = param_get_uint,
};
module_param_cb(fault_ppm, &fault_ppm_ops, &fault_ppm, 0644);
MODULE_PARM_DESC(fault_ppm, "share of TX completions that miss TSQ_THROTTLED, in parts per million (0..1000000, needs fault_inject=1)");

/*
 * Corked data that waited this long with nothing of its socket below TCP
 * before it left is a late cork release (see cork_stop()).
 */
static unsigned int late_cork_ms = 20;

static int late_cork_ms_set(const char *val, const struct kernel_param *kp)
{
	unsigned int v;

	if (kstrtouint(val, 10, &v) || v < 1 || v > 1000) {
		pr_err("late_cork_ms=%s refused: must be 1..1000 milliseconds\n", val);
		return -EINVAL;
	}
	WRITE_ONCE(late_cork_ms, v);
	return 0;
}

static const struct kernel_param_ops late_cork_ms_ops = {
	.set = late_cork_ms_set,
	.get = param_get_uint,
};
module_param_cb(late_cork_ms, &late_cork_ms_ops, &late_cork_ms, 0644);
MODULE_PARM_DESC(late_cork_ms, "count a cork released after waiting this long with nothing below TCP (1..1000, default 20)");

/* ---- statistics: per CPU, summed on read -------------------------------- */

enum tsq_stat {
	ST_AUTOCORK,		/* tcp_push() corked: flag newly set, nothing sent */
	ST_LOST_WAKEUPS,	/* stalled sockets confirmed under the socket lock */
	ST_RECOVERIES,		/* pushes done for a stalled socket */
	ST_RECOVERIES_IDLE,	/* ... of which sent nothing */
	ST_WAKEUP_CHECKS,	/* suspects checked under the lock */
	ST_OWNER_PUSHES,	/* suspects left to their lock owner's release */
	ST_CHECK_OVERFLOW,	/* suspects dropped: every check slot busy */
	ST_FAULTS_INJECTED,	/* completions made to miss TSQ_THROTTLED */
	ST_TXC_SAMPLES,		/* TX completions timed */
	ST_TXC_EVICTED,		/* stamps overwritten before their completion */
	ST_CORK_SAMPLES,	/* corks timed until their data left */
	ST_CORK_EVICTED,	/* cork clocks overwritten before the data left */
	ST_APP_HOLDS,		/* tcp_push() with MSG_MORE/TCP_NAGLE_CORK */
	ST_TXC_TASK,		/* TX completions in task context, BH enabled */
	ST_LATE_CORK,		/* corks released late with nothing below TCP */
	ST_TXC_SW_GSO,		/* skbs left untimed: software GSO segments them */
	ST_CORK_EXPIRED,	/* cork clocks restarted: stale, or a new socket */
	ST_DEV_SLOTS_FULL,	/* TX stamps without a device: every slot taken */
	ST_REARMED,		/* checks that left the push to a completion under way */
	ST_REPUSH_SKIPPED,	/* stalled again where the last push sent nothing */
	ST_TXC_STAMPS,		/* TCP skbs stamped on their way to a device */
	ST_TXC_UNSEEN,		/* ... in watch periods that timed no completion */
	ST_FLAGGED,		/* last completions that found the flag set: re-read after */
	ST_NR,
};

static const char *const stat_names[ST_NR] = {
	[ST_AUTOCORK]		= "autocork",
	[ST_LOST_WAKEUPS]	= "lost_wakeups",
	[ST_RECOVERIES]		= "recoveries",
	[ST_RECOVERIES_IDLE]	= "recoveries_idle",
	[ST_WAKEUP_CHECKS]	= "wakeup_checks",
	[ST_OWNER_PUSHES]	= "owner_pushes",
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

struct log2_hist {
	u64 bucket[HIST_BUCKETS];	/* bucket i: [2^i, 2^(i+1)) ns */
	u64 max_ns;
	u64 sum_ns;
};

/* After the device histograms: */
#define HIST_CORK	MAX_DEVS	/* autocork until the data left */
#define HIST_WAKE	(MAX_DEVS + 1)	/* could leave (last completion) until it left */
#define HIST_RECOVERY	(MAX_DEVS + 2)	/* ... for the corks tsq_probe pushed */
#define HIST_NR		(MAX_DEVS + 3)

/*
 * Everything a probe hit writes lives here, on its own CPU.  this_cpu_*()
 * operations are safe against an interrupt on the same CPU; readers sum
 * over CPUs and may see a hit half counted, never a torn value.
 */
struct tsq_pcpu {
	u64 stat[ST_NR];
	struct log2_hist hist[HIST_NR];	/* devices, then the cork histograms */
};

static DEFINE_PER_CPU_ALIGNED(struct tsq_pcpu, tsq_pcpu);

static void stat_inc(enum tsq_stat s)
{
	this_cpu_inc(tsq_pcpu.stat[s]);
}

static u64 stat_sum(enum tsq_stat s)
{
	u64 sum = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		sum += READ_ONCE(per_cpu_ptr(&tsq_pcpu, cpu)->stat[s]);
	return sum;
}

static void hist_add(int h, u64 ns)
{
	unsigned int b = ns ? min_t(unsigned int, ilog2(ns), HIST_BUCKETS - 1) : 0;
	u64 old = this_cpu_read(tsq_pcpu.hist[h].max_ns);

	this_cpu_inc(tsq_pcpu.hist[h].bucket[b]);
	this_cpu_add(tsq_pcpu.hist[h].sum_ns, ns);
	while (ns > old) {
		u64 seen = this_cpu_cmpxchg(tsq_pcpu.hist[h].max_ns, old, ns);

		if (seen == old)
			break;
		old = seen;
	}
}

/* The sum over CPUs of histogram h (max: the largest). */
static void hist_read(int h, struct log2_hist *out)
{
	const struct log2_hist *p;
	int cpu, i;

	memset(out, 0, sizeof(*out));
	for_each_possible_cpu(cpu) {
		p = &per_cpu_ptr(&tsq_pcpu, cpu)->hist[h];
		for (i = 0; i < HIST_BUCKETS; i++)
			out->bucket[i] += READ_ONCE(p->bucket[i]);
		out->sum_ns += READ_ONCE(p->sum_ns);
		out->max_ns = max(out->max_ns, READ_ONCE(p->max_ns));
	}
}

/*
 * One TX-completion histogram per device, claimed on first use and freed
 * when the device is unregistered (tsq_netdev_event()), so that a host whose
 * containers come and go with their veths does not run out of slots.
 */
struct dev_hist {
	const struct net *net;		/* identity only, never dereferenced */
	int ifindex;			/* 0: free; published last on claim */
	char name[IFNAMSIZ];
};

static struct dev_hist dev_hists[MAX_DEVS];
static atomic_t dev_hists_used;
/*
 * Claims, frees and names.  Taken from the xmit tracepoint, where
 * preemption is off: a raw spinlock, which stays a spinning lock on
 * PREEMPT_RT (a spinlock_t would sleep there).
 */
static DEFINE_RAW_SPINLOCK(dev_hists_lock);

static int dev_hist_find(const struct net *net, int ifindex)
{
	int i;

	for (i = 0; i < MAX_DEVS; i++) {
		/* ifindex first: pairs with smp_store_release() in dev_hist_get(). */
		if (smp_load_acquire(&dev_hists[i].ifindex) == ifindex &&
		    READ_ONCE(dev_hists[i].net) == net)
			return i;
	}
	return -1;
}

/*
 * Index of dev's histogram, or -1.  Lock-free for every packet after a
 * device's first; the lock is taken only to claim a free slot.  A sample in
 * flight when its device's slot is freed and claimed again lands in the new
 * device's histogram: one sample off, nothing else.
 */
static int dev_hist_get(const struct net_device *dev)
{
	const struct net *net = dev_net(dev);
	unsigned long flags;
	int i, cpu;

	i = dev_hist_find(net, dev->ifindex);
	if (i >= 0)
		return i;
	if (atomic_read(&dev_hists_used) >= MAX_DEVS) {
		stat_inc(ST_DEV_SLOTS_FULL);
		return -1;
	}
	raw_spin_lock_irqsave(&dev_hists_lock, flags);
	i = dev_hist_find(net, dev->ifindex);
	if (i >= 0)
		goto out;
	for (i = 0; i < MAX_DEVS && dev_hists[i].ifindex; i++)
		;
	if (i == MAX_DEVS) {
		stat_inc(ST_DEV_SLOTS_FULL);
		i = -1;
		goto out;
	}
	for_each_possible_cpu(cpu)
		memset(&per_cpu_ptr(&tsq_pcpu, cpu)->hist[i], 0, sizeof(struct log2_hist));
	WRITE_ONCE(dev_hists[i].net, net);
	strscpy(dev_hists[i].name, dev->name, IFNAMSIZ);
	atomic_inc(&dev_hists_used);
	/* net and name before ifindex: dev_hist_find() matches on it. */
	smp_store_release(&dev_hists[i].ifindex, dev->ifindex);
out:
	raw_spin_unlock_irqrestore(&dev_hists_lock, flags);
	return i;
}

/* A device goes (or moves to another namespace): free its slot. */
static int tsq_netdev_event(struct notifier_block *nb, unsigned long event, void *ptr)
{
	struct net_device *dev = netdev_notifier_info_to_dev(ptr);
	unsigned long flags;
	int i;

	if (event != NETDEV_UNREGISTER && event != NETDEV_CHANGENAME)
		return NOTIFY_DONE;
	raw_spin_lock_irqsave(&dev_hists_lock, flags);
	i = dev_hist_find(dev_net(dev), dev->ifindex);
	if (i >= 0 && event == NETDEV_CHANGENAME) {
		strscpy(dev_hists[i].name, dev->name, IFNAMSIZ);
	} else if (i >= 0) {
		WRITE_ONCE(dev_hists[i].ifindex, 0);
		atomic_dec(&dev_hists_used);
	}
	raw_spin_unlock_irqrestore(&dev_hists_lock, flags);
	return NOTIFY_DONE;
}

static struct notifier_block tsq_netdev_nb = {
	.notifier_call = tsq_netdev_event,
};

/* ---- per-skb and per-socket clocks, lock-free --------------------------- */

/*
 * A stamp waits for its completion in a slot of a shared table: the skb is
 * stamped on the CPU that transmits it and completed on the CPU that frees
 * it, so a per-CPU table could not match them.  Each slot is one 64-bit
 * word, written with plain stores and taken with one cmpxchg, so stamp and
 * completion never lock and never see a torn entry:
 *
 *	bits 63..48  tag: 16 more bits of the key's hash (never 0)
 *	bits 47..44  device histogram + 1 (0: none)		[txc only]
 *	bits 43..0   ktime_get_ns() modulo 2^44 (4.8 hours)	[txc]
 *	bits 47..0   ktime_get_ns() modulo 2^48 (78 hours)	[cork]
 *
 * Keys (skb and socket pointers) are hashed, never dereferenced.  A newer
 * stamp in the same slot evicts an older one (counted).  Two live keys with
 * the same slot and the same tag (one pair in 65535 among colliding keys)
 * can take each other's stamp: one histogram sample is off, nothing else.
 */
#define SLOT_TAG_SHIFT	48
#define TXC_DEV_SHIFT	44
#define TXC_TIME_MASK	((1ULL << TXC_DEV_SHIFT) - 1)
#define CORK_TIME_MASK	((1ULL << SLOT_TAG_SHIFT) - 1)

static u64 slot_hash(const void *key, unsigned int bits, unsigned int *idx)
{
	u64 h = (u64)(unsigned long)key * GOLDEN_RATIO_64;
	u64 tag = (h >> (64 - bits - 16)) & 0xffff;

	*idx = h >> (64 - bits);
	return (tag ? tag : 1) << SLOT_TAG_SHIFT;
}

static u64 txc_table[1 << TXC_BITS];

struct cork_slot {
	u64 key;	/* tag | time corked, 0: free */
	u64 idle_ns;	/* since when nothing is below TCP, data sendable; 0: not */
	u32 seq;	/* write_seq when corked: the data leaves once sent */
	u32 recovered;	/* tsq_probe pushed it (a lost wake-up recovered) */
};

static struct cork_slot cork_table[1 << CORK_BITS];
static atomic_t corks_open;

/*
 * The same skb a second time within this long is a stacked device (bridge,
 * vlan, bond, tunnel over veth...) passing it down: its clock keeps running
 * from the upper device, and the lower one, which completes it, owns it.
 */
#define TXC_RESTACK_NS	NSEC_PER_SEC

static void txc_stamp(struct sk_buff *skb, struct net_device *dev)
{
	unsigned int idx;
	u64 tag = slot_hash(skb, TXC_BITS, &idx);
	u64 old = READ_ONCE(txc_table[idx]);
	u64 t = ktime_get_ns() & TXC_TIME_MASK;
	bool same = old && (old & ~((1ULL << SLOT_TAG_SHIFT) - 1)) == tag;
	int dh;

	/*
	 * Software GSO (a device without the offload): the segments, which
	 * take over the destructor, complete; this skb never does.
	 */
	if (skb_is_gso(skb) && netif_needs_gso(skb, netif_skb_features(skb))) {
		stat_inc(ST_TXC_SW_GSO);
		if (same)
			cmpxchg(&txc_table[idx], old, 0);
		return;
	}
	if (same && ((t - old) & TXC_TIME_MASK) < TXC_RESTACK_NS)
		t = old & TXC_TIME_MASK;
	else if (old)
		stat_inc(ST_TXC_EVICTED);
	dh = dev_hist_get(dev);
	WRITE_ONCE(txc_table[idx], tag | ((u64)(dh + 1) << TXC_DEV_SHIFT) | t);
	stat_inc(ST_TXC_STAMPS);
}

static void txc_complete(const struct sk_buff *skb)
{
	unsigned int idx;
	u64 tag = slot_hash(skb, TXC_BITS, &idx);
	u64 w = READ_ONCE(txc_table[idx]);
	int dh;

	if ((w & ~((1ULL << SLOT_TAG_SHIFT) - 1)) != tag ||
	    cmpxchg(&txc_table[idx], w, 0) != w)
		return;
	stat_inc(ST_TXC_SAMPLES);
	dh = (int)((w >> TXC_DEV_SHIFT) & 0xf) - 1;
	if (dh >= 0)
		hist_add(dh, (ktime_get_ns() - w) & TXC_TIME_MASK);
}

#define CORK_EXPIRE_NS	(10 * NSEC_PER_SEC)

/* tcp_push() return (the socket owned by the caller) corked up to seq. */
static void cork_start(const struct sock *sk, u32 seq)
{
	unsigned int idx;
	u64 tag = slot_hash(sk, CORK_BITS, &idx);
	struct cork_slot *s = &cork_table[idx];
	u64 old = READ_ONCE(s->key);
	u64 now = ktime_get_ns();

	if (old && (old & ~CORK_TIME_MASK) == tag) {
		/*
		 * Already corked: the clock keeps running.  Unless it is
		 * stale: TCP sockets are SLAB_TYPESAFE_BY_RCU, so a new socket
		 * may sit where one that closed corked did (its write_seq
		 * starts anywhere), and a clock older than CORK_EXPIRE_NS
		 * measures nothing useful.
		 */
		if (!before(seq, READ_ONCE(s->seq)) &&
		    ((now - old) & CORK_TIME_MASK) < CORK_EXPIRE_NS) {
			WRITE_ONCE(s->seq, seq);
			return;
		}
		stat_inc(ST_CORK_EXPIRED);
	}
	WRITE_ONCE(s->seq, seq);
	WRITE_ONCE(s->idle_ns, 0);
	WRITE_ONCE(s->recovered, 0);
	/* seq and idle_ns first: cork_stop() reads them after the key. */
	smp_wmb();
	old = xchg(&s->key, tag | (now & CORK_TIME_MASK));
	if (!old)
		atomic_inc(&corks_open);
	else if ((old & ~CORK_TIME_MASK) != tag)
		stat_inc(ST_CORK_EVICTED);
}

/* A segment of sk ending at end_seq goes to a device: stop its cork clock. */
static void cork_stop(const struct sock *sk, u32 end_seq)
{
	unsigned int idx;
	u64 tag = slot_hash(sk, CORK_BITS, &idx);
	struct cork_slot *s = &cork_table[idx];
	u64 w = READ_ONCE(s->key);
	u64 idle, now, wait;
	u32 recovered;

	if (!w || (w & ~CORK_TIME_MASK) != tag)
		return;
	/* The key before the seq: pairs with smp_wmb() in cork_start(). */
	smp_rmb();
	idle = READ_ONCE(s->idle_ns);
	recovered = READ_ONCE(s->recovered);
	if (before(end_seq, READ_ONCE(s->seq))) {
		/* Part of it left: something is below TCP again. */
		if (idle)
			WRITE_ONCE(s->idle_ns, 0);
		return;
	}
	if (cmpxchg(&s->key, w, 0) != w)
		return;
	atomic_dec(&corks_open);
	now = ktime_get_ns();
	stat_inc(ST_CORK_SAMPLES);
	hist_add(HIST_CORK, (now - w) & CORK_TIME_MASK);
	/*
	 * The backstop: the data could have left when the last completion
	 * emptied the socket, and did not for late_cork_ms.  Whatever lost the
	 * wake-up (a missed TSQ_THROTTLED, a race this module does not know),
	 * something else -- most often the peer's delayed ACK -- released it.
	 */
	if (!idle)
		return;
	wait = now - idle;
	hist_add(HIST_WAKE, wait);
	if (recovered)
		hist_add(HIST_RECOVERY, wait);
	if (wait >= (u64)READ_ONCE(late_cork_ms) * NSEC_PER_MSEC)
		stat_inc(ST_LATE_CORK);
}

/*
 * tsq_probe is about to push sk's corked data (a lost wake-up recovered):
 * its release counts in the recovery-delay histogram.
 */
static void cork_recovering(const struct sock *sk)
{
	unsigned int idx;
	u64 tag = slot_hash(sk, CORK_BITS, &idx);
	struct cork_slot *s = &cork_table[idx];
	u64 w = READ_ONCE(s->key);

	if (w && (w & ~CORK_TIME_MASK) == tag)
		WRITE_ONCE(s->recovered, 1);
}

/* ---- the stall predicate ------------------------------------------------ */

/*
 * Will a TX completion that wakes TSQ still come, going by wmem, a value of
 * sk_wmem_alloc?  It holds one unit for the socket itself and the truesize
 * of every skb below TCP.  A pure ACK is charged 2 (skb_set_tcp_pure_ack())
 * and freed by __sock_wfree(), which never looks at TSQ; an skb tcp_wfree()
 * frees is charged at least SKB_TRUESIZE(1).  So, as 6.12's tcp_wfree()
 * itself judges it, a charge below SKB_TRUESIZE(1) is only pure ACKs:
 * nothing to wake the socket.
 */
static bool data_below(int wmem)
{
	return wmem >= (int)SKB_TRUESIZE(1);
}

/*
 * The scalar part of the hint: unsent data that the application released
 * and that pacing, cwnd, the peer's window, Nagle and TSO deferral all let
 * go now.  Lockless, socket scalars only.
 */
static bool tcp_sendable_hint(const struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	u32 write_seq, snd_nxt, unsent, mss, in_flight, cwnd, win;
	u8 nonagle;

	if (!((1 << READ_ONCE(sk->sk_state)) & (TCPF_ESTABLISHED | TCPF_CLOSE_WAIT)))
		return false;
	write_seq = READ_ONCE(tp->write_seq);
	snd_nxt = READ_ONCE(tp->snd_nxt);
	unsent = write_seq - snd_nxt;
	if (!unsent || unsent > INT_MAX)
		return false;
	/*
	 * The application asked TCP to hold: tcp_push() marks a push
	 * (pushed_seq = write_seq) unless the write had MSG_MORE, and a
	 * non-final sendfile()/splice() chunk (MSG_MORE, or
	 * MSG_SENDPAGE_NOTLAST on kernels that have it) does not call
	 * tcp_push() at all.  The application's next write sends it.
	 */
	if (before(READ_ONCE(tp->pushed_seq), write_seq))
		return false;
	nonagle = tp->nonagle;	/* a bit-field: no READ_ONCE(), a racy byte is fine */
	if (nonagle & TCP_NAGLE_CORK)
		return false;
	/* Internal pacing: the pacing timer sends it when the time comes. */
	if (tcp_needs_internal_pacing(sk) &&
	    (hrtimer_is_queued((struct hrtimer *)&tp->pacing_timer) ||
	     READ_ONCE(tp->tcp_wstamp_ns) > ktime_get_ns()))
		return false;
	in_flight = tcp_packets_in_flight(tp);
	cwnd = tcp_snd_cwnd(tp);
	if (in_flight >= cwnd)
		return false;
	mss = max_t(u32, READ_ONCE(tp->mss_cache), 1);
	win = tcp_wnd_end(tp) - snd_nxt;
	if ((int)win < (int)min(unsent, mss))
		return false;		/* the peer's window is closed */
	if (READ_ONCE(tp->packets_out)) {
		/* Nagle: a small segment waits for the ACK in flight. */
		if (!(nonagle & TCP_NAGLE_OFF) && unsent < mss)
			return false;
		/*
		 * TSO auto-deferral (tcp_tso_should_defer()): more than one
		 * segment may wait for the ACK in flight to build a bigger
		 * one, even when cwnd and the window would take it all (the
		 * tail skb, which may still grow).  That ACK sends it: more
		 * than one segment outstanding is not delayed-ACKed for long.
		 */
		if (unsent > mss)
			return false;
	}
	return true;
}

/*
 * True when TCP holds data it would send right now but nothing will make it
 * do so: unsent data that cwnd, the peer's window, TCP_CORK and Nagle all
 * allow, no byte of the socket below TCP (no TX completion to come), no TSQ
 * push queued or deferred, and nothing else that will send it.  When in
 * doubt the answer is "not stalled": a missed recovery costs one delayed
 * ACK, a wrong one changes what goes on the wire.
 *
 * tcp_stall_hint() runs without the socket lock (probe handlers): it reads
 * socket scalars only, never the write queue, whose skbs the owner may free
 * at any moment.  @below is sk_wmem_alloc as it will be once the caller's
 * event is over (see data_below()).
 */
static bool tcp_stall_hint(const struct sock *sk, int below)
{
	unsigned long tsq = READ_ONCE(sk->sk_tsq_flags);

	if (data_below(below) || (tsq & (TSQF_QUEUED | TCPF_TSQ_DEFERRED)))
		return false;
	return tcp_sendable_hint(sk);
}

/*
 * A completion of sk left nothing below TCP: if it is corked and its data
 * could go now, start the clock cork_stop() judges (the first such moment
 * of the cork; a later one does not move it).
 */
static void cork_idle(const struct sock *sk)
{
	unsigned int idx;
	u64 tag = slot_hash(sk, CORK_BITS, &idx);
	struct cork_slot *s = &cork_table[idx];
	u64 w = READ_ONCE(s->key);

	if (!w || (w & ~CORK_TIME_MASK) != tag || READ_ONCE(s->idle_ns) ||
	    !tcp_sendable_hint(sk))
		return;
	WRITE_ONCE(s->idle_ns, ktime_get_ns() | 1);
}

/*
 * The full check, under the socket lock: the hint plus the write queue.
 *
 * Bytes still below TCP normally mean a completion to come, which pushes if
 * it finds TSQ_THROTTLED.  But the check may run on another CPU while the
 * completion that queued it is still inside tcp_wfree(), before it has
 * uncharged its skb and read the flag -- which, in the case the check
 * exists for, nobody set.  With @rearm, do what tcp_push() does when it
 * corks: set the flag, then read sk_wmem_alloc again after a full barrier.
 * Bytes still below: the completion under way will see the flag and
 * schedule the TSQ tasklet (tcp_wfree() uncharges before it reads the
 * flags).  None: the socket is stalled, and the flag, which no completion
 * will clear now, is taken back.  The pairing is tcp_push()'s own: our
 * smp_mb__after_atomic() against tcp_wfree()'s uncharge (a value-returning
 * atomic) and its flags read, smp_load_acquire() on 6.12 and a plain
 * READ_ONCE() on 6.1 -- the completer-side weakness of 6.1 (see
 * tsq_probe/patches/) applies to this re-arm exactly as to tcp_push().
 */
static bool tcp_sock_stalled(struct sock *sk, bool rearm)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	const struct sk_buff *skb;

	sock_owned_by_me(sk);
	if (READ_ONCE(sk->sk_tsq_flags) & (TSQF_QUEUED | TCPF_TSQ_DEFERRED) ||
	    !tcp_sendable_hint(sk))
		return false;
	skb = tcp_send_head(sk);
	if (!skb)
		return false;
	if (after(TCP_SKB_CB(skb)->end_seq, tcp_wnd_end(tp)))
		return false;
	if (!(tp->nonagle & TCP_NAGLE_OFF) && tp->packets_out && skb->len < tp->mss_cache)
		return false;
	/* TSO auto-deferral of the head: the ACK in flight will send it. */
	if (tp->packets_out && tcp_skb_pcount(skb) > 1)
		return false;
	if (!data_below(refcount_read(&sk->sk_wmem_alloc)))
		return true;
	if (!rearm || test_and_set_bit(TSQ_THROTTLED, &sk->sk_tsq_flags))
		return false;
	/* The flag before the re-read: pairs with tcp_wfree() (see above). */
	smp_mb__after_atomic();
	if (data_below(refcount_read(&sk->sk_wmem_alloc))) {
		stat_inc(ST_REARMED);
		return false;
	}
	clear_bit(TSQ_THROTTLED, &sk->sk_tsq_flags);
	return true;
}

/*
 * A push that sent nothing: TCP itself refused (no route, a LOCAL_OUT
 * drop), and its own timers retry.  The push's failed skb completes and
 * makes the socket a suspect again; pushing it again at once would spin as
 * long as the route is gone.  So remember the snd_nxt of the last push that
 * sent nothing, per socket slot, and do not push again until something else
 * has moved snd_nxt.
 */
static u64 idle_push_table[1 << CORK_BITS];

static bool idle_push_same(const struct sock *sk, u32 snd_nxt)
{
	unsigned int idx;
	u64 tag = slot_hash(sk, CORK_BITS, &idx);

	return READ_ONCE(idle_push_table[idx]) == (tag | snd_nxt);
}

static void idle_push_note(const struct sock *sk, u32 snd_nxt, bool idle)
{
	unsigned int idx;
	u64 tag = slot_hash(sk, CORK_BITS, &idx);
	u64 old = READ_ONCE(idle_push_table[idx]);

	if (idle)
		WRITE_ONCE(idle_push_table[idx], tag | snd_nxt);
	else if (old && (old & ~CORK_TIME_MASK) == tag)
		WRITE_ONCE(idle_push_table[idx], 0);
}

/* ---- checks under the socket lock --------------------------------------- */

/*
 * Suspects wait in check_slots for the work item.  A slot is claimed empty
 * -> SLOT_BUSY -> socket (after the reference is taken), and only the work
 * (or unload) takes a socket out of it, so a probe handler never has to
 * drop a socket reference, which may be the last one.
 */
#define SLOT_BUSY	((struct sock *)1UL)

static struct sock *check_slots[CHECK_SLOTS];
/*
 * Flagged suspects: a last completion found TSQ_THROTTLED set, so the
 * kernel's tcp_wfree() should wake TSQ, unless it misses the flag (6.1's
 * completer-side race) and leaves it set with nobody to clear it.  Only
 * once that completion has returned does the socket say which: see
 * drain_check_slots().
 */
static struct sock *flag_slots[CHECK_SLOTS];
static struct workqueue_struct *check_wq;
static void check_work_fn(struct work_struct *work);
static DECLARE_WORK(check_work, check_work_fn);

/* From a breakpoint exception (in_nmi()), queue_work() goes via an irq_work. */
static void check_kick_fn(struct irq_work *w)
{
	queue_work(check_wq, &check_work);
}

static struct irq_work check_kick;

static void kick_check_work(void)
{
	if (in_nmi())
		irq_work_queue(&check_kick);
	else
		queue_work(check_wq, &check_work);
}

/* Queue sk in slots for the work; takes a reference if it can. */
static void suspect_in(struct sock **slots, struct sock *sk)
{
	int i;

	for (i = 0; i < CHECK_SLOTS; i++)
		if (READ_ONCE(slots[i]) == sk)
			return;
	for (i = 0; i < CHECK_SLOTS; i++)
		if (!cmpxchg(&slots[i], NULL, SLOT_BUSY))
			break;
	if (i == CHECK_SLOTS) {
		stat_inc(ST_CHECK_OVERFLOW);
		return;
	}
	if (!refcount_inc_not_zero(&sk->sk_refcnt)) {
		WRITE_ONCE(slots[i], NULL);
		return;
	}
	/* Publish sk after its reference: pairs with slot_take(). */
	smp_store_release(&slots[i], sk);
	kick_check_work();
}

/* Queue sk for a check under its lock. */
static void suspect(struct sock *sk)
{
	suspect_in(check_slots, sk);
}

static void check_stalled(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	bool stalled, push = READ_ONCE(recover);
	u32 snd_nxt;

	lock_sock(sk);
	stat_inc(ST_WAKEUP_CHECKS);
	snd_nxt = tp->snd_nxt;
	stalled = tcp_sock_stalled(sk, push);
	if (stalled && push && idle_push_same(sk, snd_nxt)) {
		/* Pushed here before, in vain: TCP's timers own it now. */
		stat_inc(ST_REPUSH_SKIPPED);
		stalled = false;
	} else if (stalled) {
		stat_inc(ST_LOST_WAKEUPS);
		if (push && !test_and_set_bit(TCP_TSQ_DEFERRED, &sk->sk_tsq_flags)) {
			/*
			 * As tcp_wfree() does when it wakes TSQ: a flag a
			 * missed completion left set goes with the push
			 * (nothing is below TCP, and no tcp_push() or
			 * tcp_write_xmit() runs while we own the socket).
			 */
			clear_bit(TSQ_THROTTLED, &sk->sk_tsq_flags);
			sock_hold(sk);	/* dropped by tcp_release_cb() */
			cork_recovering(sk);
		} else {
			stalled = false;
		}
	}
	/* release_sock() runs tcp_release_cb(): the TSQ tasklet's push. */
	release_sock(sk);
	if (stalled) {
		bool idle = READ_ONCE(tp->snd_nxt) == snd_nxt;

		stat_inc(ST_RECOVERIES);
		if (idle)
			stat_inc(ST_RECOVERIES_IDLE);
		idle_push_note(sk, snd_nxt, idle);
	}
}

/* The socket queued in *slot, taken out with its reference, or NULL. */
static struct sock *slot_take(struct sock **slot)
{
	/* Pairs with suspect_in(): the reference is taken before sk shows. */
	struct sock *sk = smp_load_acquire(slot);

	if (!sk || sk == SLOT_BUSY || cmpxchg(slot, sk, NULL) != sk)
		return NULL;
	return sk;
}

/*
 * Take every queued socket out; check it if asked; drop its reference.
 *
 * A flagged suspect is checked only if it still looks stalled now that
 * its completion has most likely returned; on healthy traffic that
 * completion has woken TSQ (TSQF_QUEUED, then the tasklet's push), so it
 * goes without a check.  One that still looks stalled may yet be a
 * completion under way, between its uncharge and its flags update:
 * tcp_wfree() runs with BH or IRQs off (softirq, hardirq, BH-disabled task
 * context), an RCU read-side section, so after a grace period it has
 * returned, and the check under the lock sees what it left (TSQF_QUEUED,
 * or nothing, which is the lost wake-up).  The one completion outside such
 * a section, a drop inside tcp_sendmsg(), runs under the socket lock the
 * check takes.  The grace period's full barriers order the completion's
 * writes before the check's reads.
 */
static void drain_check_slots(bool check)
{
	struct sock *flagged[CHECK_SLOTS];
	struct sock *sk;
	int i, n = 0;

	for (i = 0; i < CHECK_SLOTS; i++) {
		sk = slot_take(&check_slots[i]);
		if (!sk)
			continue;
		if (check)
			check_stalled(sk);
		sock_put(sk);
	}
	for (i = 0; i < CHECK_SLOTS; i++) {
		sk = slot_take(&flag_slots[i]);
		if (!sk)
			continue;
		if (check && tcp_stall_hint(sk, refcount_read(&sk->sk_wmem_alloc)))
			flagged[n++] = sk;
		else
			sock_put(sk);
	}
	if (!n)
		return;
	synchronize_rcu_expedited();
	for (i = 0; i < n; i++) {
		check_stalled(flagged[i]);
		sock_put(flagged[i]);
	}
}

/* Set by the first injected fault: the kernel is tainted, say so once. */
#define FAULT_TAINTED	0
#define FAULT_SAY	1
static unsigned long fault_flags;

static void fault_say(void)
{
	if (test_and_clear_bit(FAULT_SAY, &fault_flags))
		pr_warn("fault injected (fault_mode=%s fault_ppm=%u): TX completions miss TSQ_THROTTLED on purpose; kernel tainted\n",
			fault_mode_names[fault_mode], READ_ONCE(fault_ppm));
}

static void check_work_fn(struct work_struct *work)
{
	fault_say();
	drain_check_slots(true);
}

/* ---- probes ------------------------------------------------------------- */

struct push_data {
	struct sock *sk;
	u32 snd_nxt;
	bool throttled;
	bool app_holds;
};

#ifdef MSG_SENDPAGE_NOTLAST
#define TSQ_MSG_HOLD	(MSG_MORE | MSG_SENDPAGE_NOTLAST)
#else
#define TSQ_MSG_HOLD	MSG_MORE
#endif

/* tcp_push(sk, flags, mss_now, nonagle, size_goal): task, socket owned. */
static int push_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct push_data *d = (struct push_data *)ri->data;
	struct sock *sk = (struct sock *)regs_get_kernel_argument(regs, 0);
	int flags = (int)regs_get_kernel_argument(regs, 1);
	int nonagle = (int)regs_get_kernel_argument(regs, 3);

	d->sk = sk;
	d->snd_nxt = READ_ONCE(tcp_sk(sk)->snd_nxt);
	d->throttled = test_bit(TSQ_THROTTLED, &sk->sk_tsq_flags);
	/* MSG_MORE becomes a local TCP_NAGLE_CORK in tcp_push(), not tp->nonagle. */
	d->app_holds = (flags & TSQ_MSG_HOLD) || (nonagle & TCP_NAGLE_CORK);
	return 0;
}

static int push_return(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct push_data *d = (struct push_data *)ri->data;
	struct sock *sk = d->sk;
	struct tcp_sock *tp = tcp_sk(sk);
	u32 write_seq;

	/* Pair with the completion side: see its stores before deciding. */
	smp_mb();
	write_seq = READ_ONCE(tp->write_seq);
	if (!d->throttled && test_bit(TSQ_THROTTLED, &sk->sk_tsq_flags) &&
	    READ_ONCE(tp->snd_nxt) == d->snd_nxt && write_seq != d->snd_nxt) {
		stat_inc(ST_AUTOCORK);
		cork_start(sk, write_seq);
	}
	if (d->app_holds) {
		/* The application asked to hold: its next write sends it. */
		stat_inc(ST_APP_HOLDS);
		return 0;
	}
	/* Corked, but the last completion has already gone by? */
	if (tcp_stall_hint(sk, refcount_read(&sk->sk_wmem_alloc)))
		suspect(sk);
	return 0;
}

static struct kretprobe push_probe = {
	.kp.symbol_name	= "tcp_push",
	.entry_handler	= push_entry,
	.handler	= push_return,
	.data_size	= sizeof(struct push_data),
};

static unsigned long tcp_wfree_addr;

/*
 * Is the transport header the TCP header of skb's own segment?  Not after
 * a UDP tunnel (VXLAN, Geneve...) encapsulated it: the outer IP header
 * says UDP, and its transport header is the tunnel's.
 */
static bool skb_tcp_headers(const struct sk_buff *skb)
{
	/* TCP set the transport header, IP the network header before it. */
	if (!skb_transport_header_was_set(skb))
		return false;
	switch (skb->protocol) {
	case htons(ETH_P_IP):
		return ip_hdr(skb)->protocol == IPPROTO_TCP;
	case htons(ETH_P_IPV6):
		return ipv6_hdr(skb)->nexthdr == IPPROTO_TCP;
	}
	return false;
}

/* An skb handed to a device in __dev_queue_xmit(). */
static void xmit_hit(struct sk_buff *skb)
{
	const struct tcphdr *th;
	u32 payload;

	if ((unsigned long)skb->destructor != tcp_wfree_addr || !skb->sk)
		return;
	txc_stamp(skb, skb->dev);
	if (!atomic_read(&corks_open) || !skb_tcp_headers(skb))
		return;
	th = tcp_hdr(skb);
	payload = skb->len - skb_transport_offset(skb) - th->doff * 4;
	if (payload)
		cork_stop(skb->sk, ntohl(th->seq) + payload);
}

/*
 * The xmit hook sees every packet of the host, so it gets the cheapest
 * attach point: the net_dev_queue tracepoint, which __dev_queue_xmit() hits
 * once it has picked the queue (BH disabled, skb->dev set): a static branch
 * and a direct call, where a kprobe costs an ftrace trampoline (x86) or a
 * breakpoint trap and a single-step (arm64).  The kprobe on the function's
 * entry is the fallback (no tracepoint, or xmit_attach=kprobe).
 */
static void xmit_tp_hit(void *data, struct sk_buff *skb)
{
	xmit_hit(skb);
}

static int xmit_pre(struct kprobe *p, struct pt_regs *regs)
{
	xmit_hit((struct sk_buff *)regs_get_kernel_argument(regs, 0));
	return 0;
}

static struct kprobe xmit_probe = {
	.symbol_name	= "__dev_queue_xmit",
	.pre_handler	= xmit_pre,
};

#define XMIT_TP_NAME	"net_dev_queue"
static struct tracepoint *xmit_tp;

static void xmit_tp_find(struct tracepoint *tp, void *priv)
{
	if (!strcmp(tp->name, XMIT_TP_NAME))
		xmit_tp = tp;
}

static int xmit_tp_attach(bool asked)
{
	int ret = -ENOENT;

	for_each_kernel_tracepoint(xmit_tp_find, NULL);
	if (xmit_tp)
		ret = tracepoint_probe_register(xmit_tp, xmit_tp_hit, NULL);
	if (ret && asked)
		pr_err("refusing to load: xmit_attach=tracepoint: cannot attach to tracepoint %s (%d)\n",
		       XMIT_TP_NAME, ret);
	return ret;
}

static int xmit_kprobe_attach(void)
{
	int ret = register_kprobe(&xmit_probe);

	if (ret)
		pr_err("refusing to load: cannot probe __dev_queue_xmit (%d: missing, inlined or blacklisted)\n",
		       ret);
	return ret;
}

static void xmit_detach(void)
{
	if (xmit_attach == ATTACH_KPROBE) {
		unregister_kprobe(&xmit_probe);
		return;
	}
	tracepoint_probe_unregister(xmit_tp, xmit_tp_hit, NULL);
	/* No call of xmit_tp_hit() is still running or about to run. */
	tracepoint_synchronize_unregister();
}

/*
 * The last TX completion leaves sendable data behind and will not wake the
 * socket.  Most often a task owns the socket right now, in the middle of a
 * sendmsg() that will push it; then, as the TSQ tasklet itself does, leave a
 * push for the owner's release_sock() (TCP_TSQ_DEFERRED), decided under the
 * socket spinlock so the owner cannot slip away in between.  Otherwise, or
 * with recover=0 (count only), check under the socket lock from the work.
 *
 * sk_lock.slock is taken in softirq context by bh_lock_sock(), so holding it
 * with softirqs possible on this CPU deadlocks: a softirq interrupting us
 * spins on it forever.  tcp_wfree() runs in task context with BH enabled
 * (a drop inside tcp_sendmsg()), so the lock is taken with IRQs off, which
 * keeps every softirq off this CPU while it is held, whatever the context:
 *   softirq or BH disabled: IRQs off as well, harmless;
 *   task context with BH enabled: IRQs off is what makes it safe;
 *   hardirq or NMI (breakpoint kprobes): never taken; lockdep would flag a
 *	softirq-safe lock used in hardirq, and the work item does the check.
 * local_bh_disable() would do for task context but its local_bh_enable()
 * may run softirqs inside the probe handler and must not be called with
 * IRQs off (breakpoint kprobes run so).  On PREEMPT_RT the lock sleeps.
 */
static bool leave_push_to_owner(struct sock *sk)
{
	unsigned long flags;
	bool owned;

	if (IS_ENABLED(CONFIG_PREEMPT_RT) || in_nmi() || in_hardirq())
		return false;
	if (!spin_trylock_irqsave(&sk->sk_lock.slock, flags))
		return false;
	owned = sock_owned_by_user_nocheck(sk);
	if (owned && !test_and_set_bit(TCP_TSQ_DEFERRED, &sk->sk_tsq_flags)) {
		sock_hold(sk);	/* dropped by tcp_release_cb() */
		stat_inc(ST_OWNER_PUSHES);
		cork_recovering(sk);
	}
	spin_unlock_irqrestore(&sk->sk_lock.slock, flags);
	return owned;
}

static void wfree_suspect(struct sock *sk)
{
	if (READ_ONCE(recover) && leave_push_to_owner(sk))
		return;
	suspect(sk);
}

/* A completion that finds TSQ_THROTTLED set, drawn with fault_ppm. */
static bool fault_draw(struct sock *sk)
{
	unsigned int ppm = READ_ONCE(fault_ppm);

	return ppm && test_bit(TSQ_THROTTLED, &sk->sk_tsq_flags) &&
	       ((u64)get_random_u32() * PPM >> 32) < ppm;
}

/* A fault was injected: count it, taint once. */
static void fault_counted(void)
{
	stat_inc(ST_FAULTS_INJECTED);
	if (!test_and_set_bit(FAULT_TAINTED, &fault_flags)) {
		add_taint(TSQ_TAINT, LOCKDEP_STILL_OK);
		/* Said from the work: printk from here may be an NMI's. */
		set_bit(FAULT_SAY, &fault_flags);
		kick_check_work();
	}
}

/* fault_mode=flag: the hook itself finds the flag cleared. */
static void fault_inject_one(struct sock *sk)
{
	if (fault_draw(sk) && test_and_clear_bit(TSQ_THROTTLED, &sk->sk_tsq_flags))
		fault_counted();
}

/*
 * Is skb the segment its socket is transmitting right now, not yet
 * accounted for?  On loopback (skb_orphan() in its xmit) and on veth,
 * bridge ports and the like (the peer's receive softirq, run at the
 * sender's local_bh_enable(), frees it), tcp_wfree() runs inside the
 * sender's own __tcp_transmit_skb(), before tcp_event_new_data_sent()
 * moves snd_nxt and packets_out.  The scalars then read the segment on its
 * way as "unsent, nothing below TCP": a stall by every other test.  It is
 * not one: the sender, whether a task owning the socket or a softirq under
 * the socket spinlock, goes on with its own transmit loop once the call
 * returns, so no wake-up can be lost here.  Such a segment starts at or
 * after snd_nxt; a segment already accounted for, the only kind whose
 * completion TSQ relies on, starts before it (snd_nxt never moves back).
 * The sequence is read from the TCP header: TCP_SKB_CB() was cleared for
 * IP before the skb left TCP.  Headers that are not TCP's (a UDP tunnel)
 * say nothing: the completion is judged as any other.  An snd_nxt read
 * before the sender moves it can only make a completion look in
 * transmit, which skips a suspect: when in doubt, not stalled.
 */
static bool skb_in_transmit(const struct sock *sk, const struct sk_buff *skb)
{
	if (!skb_tcp_headers(skb))
		return false;
	return !before(ntohl(tcp_hdr(skb)->seq), READ_ONCE(tcp_sk(sk)->snd_nxt));
}

/* tcp_wfree(skb): see the comment at the top for where it runs. */
static void wfree_hit(struct sk_buff *skb)
{
	struct sock *sk = skb->sk;
	int below;

	txc_complete(skb);
	if (!in_interrupt())
		stat_inc(ST_TXC_TASK);
	/* fault_inject is load-time only: fault_ppm alone never injects. */
	if (fault_inject && fault_mode == FAULT_FLAG)
		fault_inject_one(sk);

	/* Re-read the flag after a full barrier, as tcp_push() must have. */
	smp_mb();
	below = refcount_read(&sk->sk_wmem_alloc) - skb->truesize;
	if (data_below(below))
		return;
	/* The last completion: unless the sender is still sending it. */
	if (atomic_read(&corks_open) && !skb_in_transmit(sk, skb))
		cork_idle(sk);
	if (!tcp_stall_hint(sk, below) || skb_in_transmit(sk, skb))
		return;
	if (!test_bit(TSQ_THROTTLED, &sk->sk_tsq_flags)) {
		wfree_suspect(sk);
	} else {
		/*
		 * tcp_wfree() is about to find the flag and wake TSQ, unless
		 * it misses it: look again once it has returned.
		 */
		stat_inc(ST_FLAGGED);
		suspect_in(flag_slots, sk);
	}
}

static int wfree_pre(struct kprobe *p, struct pt_regs *regs)
{
	wfree_hit((struct sk_buff *)regs_get_kernel_argument(regs, 0));
	return 0;
}

static struct kprobe wfree_probe = {
	.symbol_name	= "tcp_wfree",
	.pre_handler	= wfree_pre,
};

/*
 * fault_mode=completer: tcp_wfree() is hooked by this kretprobe instead of
 * the ftrace hook or wfree_probe (only with fault_inject=1 and this mode:
 * the default path has none of it).  Its entry runs the hook, which sees
 * the flag as the kernel's completion would, then clears the flag for a
 * drawn completion; tcp_wfree() then neither wakes TSQ nor clears it, and
 * the return handler sets it again: the flag is left set, nobody comes.
 * A reference on the socket keeps it across tcp_wfree()'s sk_free().
 * Entry: the contexts of wfree_hit(), NMI included; return: tcp_wfree()'s
 * caller's context.
 */
struct completer_data {
	struct sock *sk;
};

static bool completer_stopping;
static atomic_t completer_inflight;	/* entries whose return is to come */

static int completer_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct completer_data *d = (struct completer_data *)ri->data;
	struct sk_buff *skb = (struct sk_buff *)regs_get_kernel_argument(regs, 0);
	struct sock *sk = skb->sk;

	wfree_hit(skb);
	/* Read under the handler's preemption-off: see completer_detach(). */
	if (READ_ONCE(completer_stopping) || !fault_draw(sk) ||
	    !test_and_clear_bit(TSQ_THROTTLED, &sk->sk_tsq_flags))
		return 1;	/* no return handler */
	if (!refcount_inc_not_zero(&sk->sk_refcnt)) {
		set_bit(TSQ_THROTTLED, &sk->sk_tsq_flags);
		return 1;
	}
	atomic_inc(&completer_inflight);
	d->sk = sk;
	fault_counted();
	return 0;
}

static int completer_return(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct completer_data *d = (struct completer_data *)ri->data;

	set_bit(TSQ_THROTTLED, &d->sk->sk_tsq_flags);
	sock_put(d->sk);
	if (atomic_dec_and_test(&completer_inflight))
		wake_up_var(&completer_inflight);
	return 0;
}

static struct kretprobe completer_probe = {
	.kp.symbol_name	= "tcp_wfree",
	.entry_handler	= completer_entry,
	.handler	= completer_return,
	.data_size	= sizeof(struct completer_data),
};

/*
 * tcp_wfree() runs once per TCP completion, so it gets the cheapest hook
 * after a tracepoint (it has none): an ftrace_ops on its entry.  On x86
 * that is the patched call a kprobe there rides on too, without the kprobe
 * dispatch; on arm64, where kprobes are a breakpoint trap and a
 * single-step, a patched call instead.  Where ftrace hands its callbacks
 * the arguments (ftrace_regs_get_argument()) nothing more is saved;
 * before that, the callback asks for the full registers.  Kernels without
 * struct ftrace_regs (5.10) or dynamic ftrace use the kprobe.
 */
#if defined(CONFIG_DYNAMIC_FTRACE) && defined(TSQ_HAVE_FTRACE_REGS)
#define TSQ_WFREE_FTRACE	1

/* Hits ftrace's recursion guard did not deliver (probes_missed). */
static DEFINE_PER_CPU(unsigned long, wfree_ftrace_missed);

static unsigned long wfree_ftrace_missed_sum(void)
{
	unsigned long sum = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		sum += READ_ONCE(per_cpu(wfree_ftrace_missed, cpu));
	return sum;
}

static void notrace wfree_ftrace_hit(unsigned long ip, unsigned long parent_ip,
				     struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	struct pt_regs *regs __maybe_unused;
	struct sk_buff *skb;
	int bit;

	/* Also disables preemption until the unlock. */
	bit = ftrace_test_recursion_trylock(ip, parent_ip);
	if (bit < 0) {
		this_cpu_inc(wfree_ftrace_missed);
		return;
	}
#ifdef TSQ_HAVE_FREGS_ARGUMENT
	skb = (struct sk_buff *)ftrace_regs_get_argument(fregs, 0);
#else
	regs = ftrace_get_regs(fregs);
	skb = regs ? (struct sk_buff *)regs_get_kernel_argument(regs, 0) : NULL;
#endif
	if (skb)
		wfree_hit(skb);
	ftrace_test_recursion_unlock(bit);
}

/*
 * Not FTRACE_OPS_FL_PERMANENT: sysctl kernel.ftrace_enabled=0 is the
 * operator's, and a metrics module must not take it away.  While it is 0
 * the callback is not called; the watch (watch_fn()) says so and counts
 * what goes unseen.
 */
static struct ftrace_ops wfree_ftrace_ops = {
	.func	= wfree_ftrace_hit,
#ifndef TSQ_HAVE_FREGS_ARGUMENT
	.flags	= FTRACE_OPS_FL_SAVE_REGS,
#endif
};

static int wfree_ftrace_register(void)
{
	static unsigned char name[] = "tcp_wfree";
	int ret;

	ret = ftrace_set_filter(&wfree_ftrace_ops, name, strlen(name), 1);
	if (ret)
		return ret;
	ret = register_ftrace_function(&wfree_ftrace_ops);
	if (ret)
		ftrace_free_filter(&wfree_ftrace_ops);
	return ret;
}

static void wfree_ftrace_unregister(void)
{
	/* Returns once no callback runs or is about to run. */
	unregister_ftrace_function(&wfree_ftrace_ops);
	ftrace_free_filter(&wfree_ftrace_ops);
}
#else
#define TSQ_WFREE_FTRACE	0

static unsigned long wfree_ftrace_missed_sum(void)
{
	return 0;
}

static int wfree_ftrace_register(void)
{
	return -EOPNOTSUPP;
}

static void wfree_ftrace_unregister(void)
{
}
#endif

/*
 * The entry address of tcp_wfree, from a kprobe on it (kallsyms_lookup_name()
 * is not exported; a kprobe may sit past the function's first bytes).
 */
static int resolve_tcp_wfree(struct kprobe *kp)
{
	char sym[KSYM_SYMBOL_LEN];
	unsigned long off = 0;
	char *plus;

	sprint_symbol(sym, (unsigned long)kp->addr);
	plus = strchr(sym, '+');
	if (strncmp(sym, "tcp_wfree+", 10) || !plus || sscanf(plus + 1, "%lx", &off) != 1)
		return -ENOENT;
	tcp_wfree_addr = (unsigned long)kp->addr - off;
	return 0;
}

static int wfree_ftrace_attach(bool asked)
{
	struct kprobe where = { .symbol_name = "tcp_wfree" };
	int ret;

	/* Where it is first: stamps are taken once the hook runs. */
	ret = register_kprobe(&where);
	if (!ret) {
		ret = resolve_tcp_wfree(&where);
		unregister_kprobe(&where);
		if (!ret)
			ret = wfree_ftrace_register();
	}
	if (ret && asked)
		pr_err("refusing to load: wfree_attach=ftrace: cannot attach to tcp_wfree through ftrace (%d%s)\n",
		       ret, TSQ_WFREE_FTRACE ? "" : ": not built for this kernel");
	return ret;
}

static int completer_attach(void)
{
	int ret;

	if (wfree_attach == ATTACH_FTRACE) {
		pr_err("refusing to load: fault_mode=completer hooks tcp_wfree with a kretprobe, not wfree_attach=ftrace\n");
		return -EINVAL;
	}
	ret = register_kretprobe(&completer_probe);
	if (ret) {
		pr_err("refusing to load: fault_mode=completer: cannot kretprobe tcp_wfree (%d)\n",
		       ret);
		return ret;
	}
	ret = resolve_tcp_wfree(&completer_probe.kp);
	if (ret) {
		pr_err("refusing to load: cannot find the entry of tcp_wfree in kallsyms\n");
		unregister_kretprobe(&completer_probe);
		return ret;
	}
	wfree_attach = ATTACH_KPROBE;
	return 0;
}

/*
 * No new injection (entries read completer_stopping with preemption off,
 * an RCU read-side section, NMI included), then every injected completion
 * returns and puts its flag and reference back, then the probe goes: a
 * return handler still to come would otherwise be skipped by
 * unregister_kretprobe(), leaving the socket's reference and flag behind.
 */
static void completer_detach(void)
{
	WRITE_ONCE(completer_stopping, true);
	synchronize_rcu();
	wait_var_event(&completer_inflight, !atomic_read(&completer_inflight));
	unregister_kretprobe(&completer_probe);
}

static int wfree_kprobe_attach(void)
{
	int ret = register_kprobe(&wfree_probe);

	if (ret) {
		pr_err("refusing to load: cannot probe tcp_wfree (%d: missing, inlined or blacklisted)\n",
		       ret);
		return ret;
	}
	ret = resolve_tcp_wfree(&wfree_probe);
	if (ret) {
		pr_err("refusing to load: cannot find the entry of tcp_wfree in kallsyms\n");
		unregister_kprobe(&wfree_probe);
	}
	return ret;
}

/*
 * One hook, by its *_attach parameter: the cheap mechanism unless kprobe
 * was asked for; when the cheap one fails, the kprobe, unless the cheap
 * one was asked for by name (then refuse; cheap() says why).  The
 * parameter reads back what is in use.
 */
static int attach_cheapest(int *mode, int cheap_mode, int (*cheap)(bool asked),
			   int (*kprobe)(void))
{
	int ret;

	if (*mode != ATTACH_KPROBE) {
		bool asked = *mode == cheap_mode;

		ret = cheap(asked);
		if (!ret) {
			*mode = cheap_mode;
			return 0;
		}
		if (asked)
			return ret;
	}
	ret = kprobe();
	if (!ret)
		*mode = ATTACH_KPROBE;
	return ret;
}

static void wfree_detach(void)
{
	if (fault_completer())
		completer_detach();
	else if (wfree_attach == ATTACH_KPROBE)
		unregister_kprobe(&wfree_probe);
	else
		wfree_ftrace_unregister();
}

static unsigned long missed_base;

static unsigned long probes_missed_raw(void)
{
	return push_probe.nmissed + push_probe.kp.nmissed + xmit_probe.nmissed +
	       wfree_probe.nmissed + wfree_ftrace_missed_sum() +
	       completer_probe.nmissed + completer_probe.kp.nmissed;
}

/* ---- the watch: completions that stopped being seen ---------------------- */

/*
 * A hook that is attached and never called looks like a quiet host.  Two
 * ways it happens: the operator sets kernel.ftrace_enabled=0 (the ftrace
 * hook, and kprobes riding on ftrace, stop), or TCP's skbs stop carrying
 * tcp_wfree() as their destructor (a live patch that installs another,
 * a kernel that renamed it), so the xmit hook stamps none.  Every
 * WATCH_MS, compare what TCP sent (TcpExtTCPOrigDataSent, summed over
 * namespaces), what was stamped at the device and what was timed at
 * completion; say once in dmesg which of the two it looks like, and count
 * the completions that went unseen.
 */
#define WATCH_MS	2000
#define WATCH_MIN	64	/* skbs or segments: less in a period says nothing */
#define WATCH_SAID_OFF		0
#define WATCH_SAID_DESTRUCTOR	1

static unsigned long watch_said;
static u64 watch_stamps, watch_samples, watch_sent;
static void watch_fn(struct work_struct *work);
static DECLARE_DELAYED_WORK(watch_work, watch_fn);

/*
 * TCPOrigDataSent of every namespace, summed over the CPUs here:
 * snmp_fold_field() is not exported to modules on every kernel (7.x).
 * Each per-CPU word is read once; a sum that races with updates is off by
 * what is being added, which a rate check over a period can ignore.
 */
static u64 tcp_data_segs_sent(void)
{
	const struct linux_mib *mib;
	struct net *net;
	u64 sum = 0;
	int cpu;

	rcu_read_lock();
	for_each_net_rcu(net)
		for_each_possible_cpu(cpu) {
			mib = per_cpu_ptr(net->mib.net_statistics, cpu);
			sum += READ_ONCE(mib->mibs[LINUX_MIB_TCPORIGDATASENT]);
		}
	rcu_read_unlock();
	return sum;
}

/* now - *last, and *last = now; 0 when a reset or a namespace gone moved it back. */
static u64 watch_delta(u64 now, u64 *last)
{
	u64 d = now >= *last ? now - *last : 0;

	*last = now;
	return d;
}

static void watch_fn(struct work_struct *work)
{
	u64 stamps = watch_delta(stat_sum(ST_TXC_STAMPS), &watch_stamps);
	u64 samples = watch_delta(stat_sum(ST_TXC_SAMPLES), &watch_samples);
	u64 sent = watch_delta(tcp_data_segs_sent(), &watch_sent);

	if (!samples && stamps >= WATCH_MIN) {
		this_cpu_add(tsq_pcpu.stat[ST_TXC_UNSEEN], stamps);
		if (!test_and_set_bit(WATCH_SAID_OFF, &watch_said))
			pr_warn("no TX completion timed in %u ms while %llu TCP skbs went to devices: the tcp_wfree hook is not called (kernel.ftrace_enabled=0?); completions go unchecked, counted in completions_unseen\n",
				WATCH_MS, stamps);
	} else if (!stamps && sent >= WATCH_MIN) {
		if (!test_and_set_bit(WATCH_SAID_DESTRUCTOR, &watch_said))
			pr_warn("TCP sent %llu data segments in %u ms and none reached a device with tcp_wfree (%pS) as its destructor: TCP frees its skbs through another function (a live patch?), or the xmit hook is not called; nothing is timed or checked\n",
				sent, WATCH_MS, (void *)tcp_wfree_addr);
	}
	schedule_delayed_work(&watch_work, msecs_to_jiffies(WATCH_MS));
}

static void watch_start(void)
{
	watch_stamps = stat_sum(ST_TXC_STAMPS);
	watch_samples = stat_sum(ST_TXC_SAMPLES);
	watch_sent = tcp_data_segs_sent();
	schedule_delayed_work(&watch_work, msecs_to_jiffies(WATCH_MS));
}

/* ---- sysfs -------------------------------------------------------------- */

/* Not atomic against hits on other CPUs: a concurrent hit may survive. */
static void reset_all(void)
{
	struct tsq_pcpu *p;
	int cpu, i, h;

	for_each_possible_cpu(cpu) {
		p = per_cpu_ptr(&tsq_pcpu, cpu);
		for (i = 0; i < ST_NR; i++)
			WRITE_ONCE(p->stat[i], 0);
		for (h = 0; h < HIST_NR; h++) {
			for (i = 0; i < HIST_BUCKETS; i++)
				WRITE_ONCE(p->hist[h].bucket[i], 0);
			WRITE_ONCE(p->hist[h].max_ns, 0);
			WRITE_ONCE(p->hist[h].sum_ns, 0);
		}
	}
	WRITE_ONCE(missed_base, probes_missed_raw());
}

static ssize_t stats_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	int i, n = atomic_read_acquire(&dev_hists_used);
	struct log2_hist h;
	u64 txc_max = 0;
	int len = 0;

	for (i = 0; i < ST_NR; i++)
		len += sysfs_emit_at(buf, len, "%s %llu\n", stat_names[i], stat_sum(i));
	for (i = 0; i < n; i++) {
		hist_read(i, &h);
		txc_max = max(txc_max, h.max_ns);
	}
	hist_read(HIST_CORK, &h);
	len += sysfs_emit_at(buf, len, "cork_hold_max_ns %llu\n", h.max_ns);
	len += sysfs_emit_at(buf, len, "txc_max_ns %llu\n", txc_max);
	len += sysfs_emit_at(buf, len, "probes_missed %lu\n",
			     probes_missed_raw() - READ_ONCE(missed_base));
	len += sysfs_emit_at(buf, len, "recover %d\n", READ_ONCE(recover));
	len += sysfs_emit_at(buf, len, "fault_ppm %u\n", READ_ONCE(fault_ppm));
	len += sysfs_emit_at(buf, len, "late_cork_ms %u\n", READ_ONCE(late_cork_ms));
	return len;
}

/* One histogram as text into out (size bytes); returns its length. */
static int hist_format(char *out, size_t size, const char *name, const char *dev, int hi)
{
	struct log2_hist h;
	int i, len;

	hist_read(hi, &h);
	len = scnprintf(out, size, "hist %s %s max_ns %llu sum_ns %llu\n", name, dev,
			h.max_ns, h.sum_ns);
	for (i = 0; i < HIST_BUCKETS; i++)
		if (h.bucket[i])
			len += scnprintf(out + len, size - len, "%llu %llu %llu\n",
					 i ? 1ULL << i : 0ULL, 1ULL << (i + 1), h.bucket[i]);
	return len;
}

/* HIST_CORK, HIST_WAKE, HIST_RECOVERY */
static const char *const cork_hist_names[] = {
	"cork_hold_ns", "cork_wake_ns", "recovery_delay_ns",
};

/* Room kept at the end of the page for the "truncated N" line. */
#define HIST_TRAILER	32

/*
 * Whole histograms only: one that does not fit in the page is left out and
 * counted in a last "truncated N" line, never cut in the middle.
 */
static ssize_t histograms_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	int i, len = 0, one, left_out = 0;
	char name[IFNAMSIZ];
	unsigned long flags;
	bool used;
	char *tmp;

	tmp = kmalloc(PAGE_SIZE, GFP_KERNEL);
	if (!tmp)
		return -ENOMEM;
	for (i = -3; i < MAX_DEVS; i++) {
		if (i < 0) {
			one = hist_format(tmp, PAGE_SIZE, cork_hist_names[i + 3], "-",
					  HIST_CORK + i + 3);
		} else {
			raw_spin_lock_irqsave(&dev_hists_lock, flags);
			used = dev_hists[i].ifindex;
			strscpy(name, dev_hists[i].name, IFNAMSIZ);
			raw_spin_unlock_irqrestore(&dev_hists_lock, flags);
			if (!used)
				continue;
			one = hist_format(tmp, PAGE_SIZE, "txc_ns", name, i);
		}
		if (len + one > PAGE_SIZE - HIST_TRAILER) {
			left_out++;
			continue;
		}
		memcpy(buf + len, tmp, one);
		len += one;
	}
	kfree(tmp);
	if (left_out)
		len += sysfs_emit_at(buf, len, "truncated %d\n", left_out);
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
static struct kobj_attribute histograms_attr = __ATTR(histograms, 0400, histograms_show, NULL);
static struct kobj_attribute reset_attr = __ATTR_WO(reset);

static struct attribute *tsq_attrs[] = {
	&stats_attr.attr,
	&histograms_attr.attr,
	&reset_attr.attr,
	NULL,
};

static const struct attribute_group tsq_group = {
	.attrs = tsq_attrs,
};

static struct kobject *tsq_kobj;

/* ---- load and unload ---------------------------------------------------- */

/* After the probes are gone: nothing may run or hold a socket. */
static void stop_checks(bool check)
{
	irq_work_sync(&check_kick);
	cancel_work_sync(&check_work);
	/* Sockets still waiting: check them (with recover, push) or let go. */
	drain_check_slots(check);
	fault_say();
	destroy_workqueue(check_wq);
}

static int __init tsq_probe_init(void)
{
	int ret;

	WRITE_ONCE(params_locked, true);
	if (fault_ppm && !fault_inject) {
		pr_err("refusing to load: fault_ppm=%u needs fault_inject=1\n", fault_ppm);
		return -EINVAL;
	}
	if (fault_mode != FAULT_FLAG && !fault_inject) {
		pr_err("refusing to load: fault_mode=%s needs fault_inject=1\n",
		       fault_mode_names[fault_mode]);
		return -EINVAL;
	}
	init_irq_work(&check_kick, check_kick_fn);
	/*
	 * Checks sleep on the socket lock: our own queue, one at a time.  A
	 * recovery stands in for a TSQ tasklet run that never came, so its
	 * worker must not queue behind the application's threads: high
	 * priority, like the softirq work it replaces.
	 */
	check_wq = alloc_workqueue("tsq_probe", WQ_UNBOUND | WQ_HIGHPRI, 1);
	if (!check_wq) {
		pr_err("refusing to load: cannot allocate the workqueue\n");
		return -ENOMEM;
	}

	ret = register_netdevice_notifier(&tsq_netdev_nb);
	if (ret) {
		pr_err("refusing to load: cannot register a netdevice notifier (%d)\n", ret);
		goto err_wq;
	}

	/* tcp_wfree first: its address tells __dev_queue_xmit which skbs to time. */
	if (fault_completer())
		ret = completer_attach();
	else
		ret = attach_cheapest(&wfree_attach, ATTACH_FTRACE, wfree_ftrace_attach,
				      wfree_kprobe_attach);
	if (ret)
		goto err_notifier;
	ret = attach_cheapest(&xmit_attach, ATTACH_TRACEPOINT, xmit_tp_attach,
			      xmit_kprobe_attach);
	if (ret)
		goto err_wfree;
	ret = register_kretprobe(&push_probe);
	if (ret) {
		pr_err("refusing to load: cannot probe tcp_push (%d: missing, inlined or blacklisted)\n",
		       ret);
		goto err_xmit;
	}
	tsq_kobj = kobject_create_and_add("tsq_probe", kernel_kobj);
	if (!tsq_kobj) {
		ret = -ENOMEM;
		pr_err("refusing to load: cannot create /sys/kernel/tsq_probe\n");
		goto err_push;
	}
	ret = sysfs_create_group(tsq_kobj, &tsq_group);
	if (ret) {
		pr_err("refusing to load: cannot create /sys/kernel/tsq_probe files (%d)\n", ret);
		goto err_kobj;
	}
	watch_start();
	pr_info("version %s loaded: recover=%d fault_inject=%d fault_mode=%s fault_ppm=%u xmit_attach=%s wfree_attach=%s%s\n",
		TAILFIX_VERSION, recover, fault_inject, fault_mode_names[fault_mode], fault_ppm,
		attach_names[xmit_attach], attach_names[wfree_attach],
		fault_completer() ? " (a kretprobe: fault_mode=completer)" : "");
	return 0;

err_kobj:
	kobject_put(tsq_kobj);
err_push:
	unregister_kretprobe(&push_probe);
err_xmit:
	xmit_detach();
err_wfree:
	wfree_detach();
err_notifier:
	unregister_netdevice_notifier(&tsq_netdev_nb);
err_wq:
	/* The probes are gone: undo what their handlers queued. */
	stop_checks(false);
	return ret;
}

static void __exit tsq_probe_exit(void)
{
	cancel_delayed_work_sync(&watch_work);
	sysfs_remove_group(tsq_kobj, &tsq_group);
	kobject_put(tsq_kobj);
	/* After this no handler runs and none will queue a check. */
	unregister_kretprobe(&push_probe);
	xmit_detach();
	wfree_detach();
	unregister_netdevice_notifier(&tsq_netdev_nb);
	stop_checks(true);
	pr_info("unloaded: %llu lost wake-ups, %llu recoveries\n",
		stat_sum(ST_LOST_WAKEUPS), stat_sum(ST_RECOVERIES));
}

module_init(tsq_probe_init);
module_exit(tsq_probe_exit);

MODULE_DESCRIPTION("Measure, detect and recover TCP small queue lost wake-ups");
MODULE_AUTHOR("ena-tcp-tailfix developers");
MODULE_LICENSE("GPL");
MODULE_VERSION(TAILFIX_VERSION);
