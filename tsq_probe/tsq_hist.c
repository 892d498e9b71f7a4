// SPDX-License-Identifier: GPL-2.0
/*
 * tsq_probe: latency histograms (log2 of nanoseconds, per CPU): one per
 * device for TX completions, three for corks; the histograms files.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kobject.h>
#include <linux/netdevice.h>
#include <linux/percpu.h>
#include <linux/proc_fs.h>
#include <linux/seq_file.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/sysfs.h>
#include <net/net_namespace.h>

#include "tsq_probe.h"

/* A sample into this CPU's copy of the per-CPU histogram h. */
static void hist_add(struct log2_hist __percpu *h, u64 ns)
{
	unsigned int b = ns ? min_t(unsigned int, ilog2(ns), HIST_BUCKETS - 1) : 0;
	u64 old = this_cpu_read(h->max_ns);

	this_cpu_inc(h->bucket[b]);
	this_cpu_add(h->sum_ns, ns);
	while (ns > old) {
		u64 seen = this_cpu_cmpxchg(h->max_ns, old, ns);

		if (seen == old)
			break;
		old = seen;
	}
}

/* The sum over CPUs of h (max: the largest). */
static void hist_read(const struct log2_hist __percpu *h, struct log2_hist *out)
{
	const struct log2_hist *p;
	int cpu, i;

	memset(out, 0, sizeof(*out));
	for_each_possible_cpu(cpu) {
		p = per_cpu_ptr(h, cpu);
		for (i = 0; i < HIST_BUCKETS; i++)
			out->bucket[i] += READ_ONCE(p->bucket[i]);
		out->sum_ns += READ_ONCE(p->sum_ns);
		out->max_ns = max(out->max_ns, READ_ONCE(p->max_ns));
	}
}

static void hist_zero(struct log2_hist __percpu *h)
{
	struct log2_hist *p;
	int cpu, i;

	for_each_possible_cpu(cpu) {
		p = per_cpu_ptr(h, cpu);
		for (i = 0; i < HIST_BUCKETS; i++)
			WRITE_ONCE(p->bucket[i], 0);
		WRITE_ONCE(p->max_ns, 0);
		WRITE_ONCE(p->sum_ns, 0);
	}
}

/* The cork histograms (HIST_CORK, HIST_WAKE, HIST_RECOVERY). */
void tsq_hist_add(int h, u64 ns)
{
	hist_add(&tsq_pcpu.hist[h], ns);
}

void tsq_hist_read(int h, struct log2_hist *out)
{
	hist_read(&tsq_pcpu.hist[h], out);
}

/*
 * One TX-completion histogram per device, claimed on first use and freed
 * when the device is unregistered or moves to another namespace
 * (tsq_netdev_event()), so that a host whose containers come and go with
 * their veths does not run out of slots.  A device is its namespace and its
 * ifindex: every container's eth0 has a histogram of its own.
 *
 * The slots are an open-addressed hash table on (net, ifindex), probed
 * linearly; a slot's index is also its histogram's.  A freed slot is a
 * tombstone (DEV_SLOT_FREED) while a chain may run through it, so that the
 * lock-free lookup can stop at the first slot never used.
 */
#define DEV_SLOTS	BIT(DEV_SLOT_BITS)
#define DEV_SLOT_FREED	(-1)
#define DEV_CHUNK	32	/* histograms per per-CPU allocation (<= 32 KiB) */
#define DEV_CHUNKS	(DEV_SLOTS / DEV_CHUNK)

struct dev_hist {
	const struct net *net;		/* identity only, never dereferenced */
	int ifindex;			/* 0: never used, DEV_SLOT_FREED; published last */
	unsigned int netns_ino;		/* net->ns.inum: what /proc/PID/ns/net shows */
	char name[IFNAMSIZ];
};

static struct dev_hist dev_hists[DEV_SLOTS];
static struct log2_hist __percpu *dev_pcpu[DEV_CHUNKS];
static atomic_t dev_hists_used;
/* The longest way from a key's hash to its slot: where a lookup gives up. */
static unsigned int dev_probe_max;
/*
 * Claims, frees and names.  Taken from the xmit tracepoint, where
 * preemption is off: a raw spinlock, which stays a spinning lock on
 * PREEMPT_RT (a spinlock_t would sleep there).
 */
static DEFINE_RAW_SPINLOCK(dev_hists_lock);

static struct log2_hist __percpu *dev_hist(int i)
{
	return dev_pcpu[i / DEV_CHUNK] + i % DEV_CHUNK;
}

static unsigned int dev_hist_hash(const struct net *net, int ifindex)
{
	return hash_64((u64)(unsigned long)net + (u32)ifindex, DEV_SLOT_BITS);
}

static int dev_hist_find(const struct net *net, int ifindex)
{
	unsigned int last = READ_ONCE(dev_probe_max);
	unsigned int n, i = dev_hist_hash(net, ifindex);
	int idx;

	for (n = 0; n <= last; n++, i = (i + 1) % DEV_SLOTS) {
		/* ifindex first: pairs with smp_store_release() in tsq_dev_hist_get(). */
		idx = smp_load_acquire(&dev_hists[i].ifindex);
		if (!idx)
			break;
		if (idx == ifindex && READ_ONCE(dev_hists[i].net) == net)
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
	unsigned int n;
	int i;

	i = dev_hist_find(net, dev->ifindex);
	if (i >= 0)
		return i;
	if (atomic_read(&dev_hists_used) >= DEV_SLOTS) {
		stat_inc(ST_DEV_SLOTS_FULL);
		return -1;
	}
	raw_spin_lock_irqsave(&dev_hists_lock, flags);
	i = dev_hist_find(net, dev->ifindex);
	if (i >= 0)
		goto out;
	/* The first free slot of the chain: a tombstone or one never used. */
	i = dev_hist_hash(net, dev->ifindex);
	for (n = 0; n < DEV_SLOTS && dev_hists[i].ifindex > 0; n++)
		i = (i + 1) % DEV_SLOTS;
	if (n == DEV_SLOTS) {
		stat_inc(ST_DEV_SLOTS_FULL);
		i = -1;
		goto out;
	}
	if (n > dev_probe_max)
		WRITE_ONCE(dev_probe_max, n);
	hist_zero(dev_hist(i));
	WRITE_ONCE(dev_hists[i].net, net);
	dev_hists[i].netns_ino = net->ns.inum;
	strscpy(dev_hists[i].name, dev->name, IFNAMSIZ);
	atomic_inc(&dev_hists_used);
	/* The rest before ifindex: dev_hist_find() matches on it. */
	smp_store_release(&dev_hists[i].ifindex, dev->ifindex);
out:
	raw_spin_unlock_irqrestore(&dev_hists_lock, flags);
	return i;
}

void tsq_dev_hist_add(int i, u64 ns)
{
	hist_add(dev_hist(i), ns);
}

/*
 * Slot i is freed: a tombstone, unless the slot after it was never used;
 * then no chain runs through it, nor through the tombstones just before
 * it, and all are never used again.  Under dev_hists_lock.
 */
static void dev_hist_free(int i)
{
	atomic_dec(&dev_hists_used);
	if (dev_hists[(i + 1) % DEV_SLOTS].ifindex) {
		WRITE_ONCE(dev_hists[i].ifindex, DEV_SLOT_FREED);
		return;
	}
	do {
		WRITE_ONCE(dev_hists[i].ifindex, 0);
		i = (i + DEV_SLOTS - 1) % DEV_SLOTS;
	} while (dev_hists[i].ifindex == DEV_SLOT_FREED);
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
	if (i >= 0 && event == NETDEV_CHANGENAME)
		strscpy(dev_hists[i].name, dev->name, IFNAMSIZ);
	else if (i >= 0)
		dev_hist_free(i);
	raw_spin_unlock_irqrestore(&dev_hists_lock, flags);
	return NOTIFY_DONE;
}

struct notifier_block tsq_netdev_nb = {
	.notifier_call = tsq_netdev_event,
};

/* The device histograms' per-CPU memory, before any hook runs. */
int tsq_hists_alloc(void)
{
	int c;

	BUILD_BUG_ON(DEV_SLOTS % DEV_CHUNK);
	for (c = 0; c < DEV_CHUNKS; c++) {
		dev_pcpu[c] = __alloc_percpu(sizeof(struct log2_hist) * DEV_CHUNK,
					     __alignof__(struct log2_hist));
		if (!dev_pcpu[c]) {
			pr_err("refusing to load: cannot allocate the device histograms\n");
			tsq_hists_free();
			return -ENOMEM;
		}
	}
	return 0;
}

/* Once no hook runs. */
void tsq_hists_free(void)
{
	int c;

	for (c = 0; c < DEV_CHUNKS; c++) {
		free_percpu(dev_pcpu[c]);
		dev_pcpu[c] = NULL;
	}
}

/* Every histogram zeroed; not atomic against hits on other CPUs. */
void tsq_hists_reset(void)
{
	int i;

	for (i = 0; i < HIST_NR; i++)
		hist_zero(&tsq_pcpu.hist[i]);
	for (i = 0; i < DEV_SLOTS; i++)
		hist_zero(dev_hist(i));
}

/* The longest TX completion of the devices in use. */
u64 tsq_txc_max_ns(void)
{
	u64 m = 0;
	int cpu, i;

	for (i = 0; i < DEV_SLOTS; i++) {
		if (READ_ONCE(dev_hists[i].ifindex) <= 0)
			continue;
		for_each_possible_cpu(cpu)
			m = max(m, READ_ONCE(per_cpu_ptr(dev_hist(i), cpu)->max_ns));
	}
	return m;
}

/* ---- the histograms files ----------------------------------------------- */

/* HIST_CORK, HIST_WAKE, HIST_RECOVERY */
static const char *const cork_hist_names[HIST_NR] = {
	"cork_hold_ns", "cork_wake_ns", "recovery_delay_ns",
};

/* The histograms in file order: the cork ones, then the device slots. */
#define HIST_FILE_NR	(HIST_NR + DEV_SLOTS)

/*
 * Histogram i of the file as text into out (size bytes): its length, or 0
 * for a device slot not in use.  A device's first line ends with its
 * namespace's inode number and its ifindex: names repeat across namespaces.
 */
static int hist_format(char *out, size_t size, int i)
{
	unsigned int netns_ino;
	char name[IFNAMSIZ];
	unsigned long flags;
	struct log2_hist h;
	int b, ifindex, len;

	if (i < HIST_NR) {
		tsq_hist_read(i, &h);
		len = scnprintf(out, size, "hist %s - max_ns %llu sum_ns %llu\n",
				cork_hist_names[i], h.max_ns, h.sum_ns);
	} else {
		i -= HIST_NR;
		raw_spin_lock_irqsave(&dev_hists_lock, flags);
		ifindex = dev_hists[i].ifindex;
		netns_ino = dev_hists[i].netns_ino;
		strscpy(name, dev_hists[i].name, IFNAMSIZ);
		raw_spin_unlock_irqrestore(&dev_hists_lock, flags);
		if (ifindex <= 0)
			return 0;
		hist_read(dev_hist(i), &h);
		len = scnprintf(out, size,
				"hist txc_ns %s max_ns %llu sum_ns %llu netns %u ifindex %d\n",
				name, h.max_ns, h.sum_ns, netns_ino, ifindex);
	}
	for (b = 0; b < HIST_BUCKETS; b++)
		if (h.bucket[b])
			len += scnprintf(out + len, size - len, "%llu %llu %llu\n",
					 b ? 1ULL << b : 0ULL, 1ULL << (b + 1), h.bucket[b]);
	return len;
}

/* The longest histogram text: its first line and a line per bucket. */
#define HIST_TEXT_MAX	(128 + HIST_BUCKETS * 64)

/* Room kept at the end of the page for the "truncated N" line. */
#define HIST_TRAILER	32

/*
 * /sys/kernel/tsq_probe/histograms: one page, for the readers of the module
 * before /proc/tsq_probe/histograms.  Whole histograms only: one that does
 * not fit is left out and counted in a last "truncated N" line.
 */
static ssize_t histograms_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	int i, len = 0, one, left_out = 0;
	char *tmp;

	tmp = kmalloc(HIST_TEXT_MAX, GFP_KERNEL);
	if (!tmp)
		return -ENOMEM;
	for (i = 0; i < HIST_FILE_NR; i++) {
		one = hist_format(tmp, HIST_TEXT_MAX, i);
		if (!one)
			continue;
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

/* /proc/tsq_probe/histograms: every histogram, as many pages as it takes. */
static int histograms_proc_show(struct seq_file *m, void *v)
{
	char *tmp;
	int i;

	tmp = kmalloc(HIST_TEXT_MAX, GFP_KERNEL);
	if (!tmp)
		return -ENOMEM;
	for (i = 0; i < HIST_FILE_NR; i++)
		seq_write(m, tmp, hist_format(tmp, HIST_TEXT_MAX, i));
	kfree(tmp);
	return 0;
}

static int histograms_proc_open(struct inode *inode, struct file *file)
{
	/* A guess, 1 KiB a histogram: seq_read() starts again larger if short. */
	size_t size = (HIST_NR + atomic_read(&dev_hists_used)) * SZ_1K;

	return single_open_size(file, histograms_proc_show, NULL, size);
}

static const struct proc_ops histograms_proc_ops = {
	.proc_open	= histograms_proc_open,
	.proc_read	= seq_read,
	.proc_lseek	= seq_lseek,
	.proc_release	= single_release,
};

static struct proc_dir_entry *tsq_proc_dir;

/* Root only, as the sysfs files: latencies tell traffic timing. */
int tsq_hist_proc_add(void)
{
	tsq_proc_dir = proc_mkdir("tsq_probe", NULL);
	if (tsq_proc_dir &&
	    proc_create("histograms", 0400, tsq_proc_dir, &histograms_proc_ops))
		return 0;
	proc_remove(tsq_proc_dir);
	pr_err("refusing to load: cannot create /proc/tsq_probe/histograms\n");
	return -ENOMEM;
}

void tsq_hist_proc_remove(void)
{
	proc_remove(tsq_proc_dir);
}
