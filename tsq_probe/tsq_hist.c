// SPDX-License-Identifier: GPL-2.0
/*
 * tsq_probe: latency histograms (log2 of nanoseconds, per CPU): one per
 * device for TX completions, three for corks; the histograms file.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kobject.h>
#include <linux/netdevice.h>
#include <linux/percpu.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/sysfs.h>

#include "tsq_probe.h"

void tsq_hist_add(int h, u64 ns)
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
void tsq_hist_read(int h, struct log2_hist *out)
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
		/* ifindex first: pairs with smp_store_release() in tsq_dev_hist_get(). */
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
int tsq_dev_hist_get(const struct net_device *dev)
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

struct notifier_block tsq_netdev_nb = {
	.notifier_call = tsq_netdev_event,
};

/* How many device histograms are in use. */
int tsq_dev_hists_used(void)
{
	return atomic_read_acquire(&dev_hists_used);
}

/* One histogram as text into out (size bytes); returns its length. */
static int hist_format(char *out, size_t size, const char *name, const char *dev, int hi)
{
	struct log2_hist h;
	int i, len;

	tsq_hist_read(hi, &h);
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

struct kobj_attribute tsq_histograms_attr = __ATTR(histograms, 0400, histograms_show, NULL);
