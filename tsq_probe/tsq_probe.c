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
 * This module hooks three places with kprobes:
 *   tcp_push() (return)  counts autocork events, starts the cork-hold clock
 *                        and re-checks the handshake after a full barrier;
 *   __dev_queue_xmit()   stamps TCP skbs handed to a device and stops the
 *                        cork-hold clock when the corked bytes leave;
 *   tcp_wfree()          measures TX-completion latency per device, injects
 *                        missed flags on request, and re-checks the
 *                        handshake after a full barrier.
 * A socket that may have lost its wake-up is checked again under its lock
 * from a work item; if it really is stalled (unsent data TCP may send now,
 * nothing below TCP, no push pending) it is counted and, with recover=1,
 * pushed through tcp_release_cb() exactly as the TSQ tasklet would have.
 *
 * Everything is exported in /sys/kernel/tsq_probe/ (stats, histograms,
 * reset); see tsq_probe/README.md for the meaning of every key.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/hash.h>
#include <linux/kallsyms.h>
#include <linux/kobject.h>
#include <linux/kprobes.h>
#include <linux/module.h>
#include <linux/netdevice.h>
#include <linux/random.h>
#include <linux/sysfs.h>
#include <linux/tcp.h>
#include <linux/workqueue.h>
#include <net/tcp.h>

#ifndef TAILFIX_VERSION
#define TAILFIX_VERSION "unknown"
#endif

#define HIST_BUCKETS	40	/* log2 of nanoseconds: up to ~550 s */
#define MAX_DEVS	8	/* per-device TX-completion histograms */
#define TXC_BITS	12	/* skbs waiting for their completion */
#define CORK_BITS	8	/* sockets with corked data */
#define LOCK_BITS	6
#define CHECK_SLOTS	64	/* sockets waiting for a check under lock */
#define PPM		1000000U

/* ---- parameters ---------------------------------------------------------- */

static bool recover = true;
module_param(recover, bool, 0644);
MODULE_PARM_DESC(recover, "push sockets found stalled by a lost wake-up (default 1)");

static bool fault_inject;
module_param(fault_inject, bool, 0444);
MODULE_PARM_DESC(fault_inject, "allow fault injection through fault_ppm (load time only, default 0)");

static bool tsq_loaded;
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
	if (tsq_loaded && !fault_inject && v) {
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

/* ---- statistics ---------------------------------------------------------- */

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
};

static atomic64_t stats[ST_NR];

static void stat_inc(enum tsq_stat s)
{
	atomic64_inc(&stats[s]);
}

struct log2_hist {
	atomic64_t bucket[HIST_BUCKETS];	/* bucket i: [2^i, 2^(i+1)) ns */
	atomic64_t max_ns;
	atomic64_t sum_ns;
};

static void hist_add(struct log2_hist *h, u64 ns)
{
	unsigned int b = ns ? min_t(unsigned int, ilog2(ns), HIST_BUCKETS - 1) : 0;
	s64 old = atomic64_read(&h->max_ns);

	atomic64_inc(&h->bucket[b]);
	atomic64_add(ns, &h->sum_ns);
	while ((s64)ns > old) {
		s64 seen = atomic64_cmpxchg(&h->max_ns, old, ns);

		if (seen == old)
			break;
		old = seen;
	}
}

static void hist_reset(struct log2_hist *h)
{
	int i;

	for (i = 0; i < HIST_BUCKETS; i++)
		atomic64_set(&h->bucket[i], 0);
	atomic64_set(&h->max_ns, 0);
	atomic64_set(&h->sum_ns, 0);
}

static struct log2_hist cork_hist;

/* One TX-completion histogram per device, claimed on first use. */
struct dev_hist {
	const struct net *net;		/* identity only, never dereferenced */
	int ifindex;
	char name[IFNAMSIZ];
	struct log2_hist hist;
};

static struct dev_hist dev_hists[MAX_DEVS];
static atomic_t dev_hists_used;
static DEFINE_SPINLOCK(dev_hists_lock);

static struct dev_hist *dev_hist_get(const struct net_device *dev)
{
	const struct net *net = dev_net(dev);
	int i, n = atomic_read(&dev_hists_used);
	unsigned long flags;

	for (i = 0; i < n; i++)
		if (dev_hists[i].ifindex == dev->ifindex && dev_hists[i].net == net)
			return &dev_hists[i];

	spin_lock_irqsave(&dev_hists_lock, flags);
	n = atomic_read(&dev_hists_used);
	for (i = 0; i < n; i++)
		if (dev_hists[i].ifindex == dev->ifindex && dev_hists[i].net == net)
			goto out;
	if (n == MAX_DEVS) {
		i = -1;
		goto out;
	}
	dev_hists[n].net = net;
	dev_hists[n].ifindex = dev->ifindex;
	strscpy(dev_hists[n].name, dev->name, IFNAMSIZ);
	atomic_set_release(&dev_hists_used, n + 1);
	i = n;
out:
	spin_unlock_irqrestore(&dev_hists_lock, flags);
	return i < 0 ? NULL : &dev_hists[i];
}

/* ---- per-skb and per-socket clocks -------------------------------------- */

/*
 * Small open hash tables, one entry per slot: a newer entry evicts an older
 * one (counted).  Keys are compared as pointers and never dereferenced, so
 * an entry left by a freed skb or socket is harmless.
 */
struct txc_slot {
	const struct sk_buff *skb;
	u64 t_ns;
	struct dev_hist *dh;
};

struct cork_slot {
	const struct sock *sk;
	u64 t_ns;
	u32 seq;	/* write_seq when corked: the data leaves once sent */
};

static struct txc_slot txc_table[1 << TXC_BITS];
static struct cork_slot cork_table[1 << CORK_BITS];
static atomic_t corks_open;
static spinlock_t slot_locks[1 << LOCK_BITS];

static spinlock_t *slot_lock(const void *key)
{
	return &slot_locks[hash_ptr(key, LOCK_BITS)];
}

static void txc_stamp(const struct sk_buff *skb, const struct net_device *dev)
{
	struct txc_slot *s = &txc_table[hash_ptr(skb, TXC_BITS)];
	struct dev_hist *dh = dev_hist_get(dev);
	spinlock_t *lock = slot_lock(skb);
	unsigned long flags;

	spin_lock_irqsave(lock, flags);
	if (s->skb)
		stat_inc(ST_TXC_EVICTED);
	s->skb = skb;
	s->t_ns = ktime_get_ns();
	s->dh = dh;
	spin_unlock_irqrestore(lock, flags);
}

static void txc_complete(const struct sk_buff *skb)
{
	struct txc_slot *s = &txc_table[hash_ptr(skb, TXC_BITS)];
	spinlock_t *lock = slot_lock(skb);
	struct dev_hist *dh = NULL;
	unsigned long flags;
	u64 t0 = 0;

	spin_lock_irqsave(lock, flags);
	if (s->skb == skb) {
		t0 = s->t_ns;
		dh = s->dh;
		s->skb = NULL;
	}
	spin_unlock_irqrestore(lock, flags);
	if (!t0)
		return;
	stat_inc(ST_TXC_SAMPLES);
	if (dh)
		hist_add(&dh->hist, ktime_get_ns() - t0);
}

static void cork_start(const struct sock *sk, u32 seq)
{
	struct cork_slot *s = &cork_table[hash_ptr(sk, CORK_BITS)];
	spinlock_t *lock = slot_lock(sk);
	unsigned long flags;

	spin_lock_irqsave(lock, flags);
	if (s->sk && s->sk != sk)
		stat_inc(ST_CORK_EVICTED);
	if (!s->sk)
		atomic_inc(&corks_open);
	if (s->sk != sk) {
		s->sk = sk;
		s->t_ns = ktime_get_ns();
	}
	s->seq = seq;
	spin_unlock_irqrestore(lock, flags);
}

/* A segment of sk ending at end_seq goes to a device: stop its cork clock. */
static void cork_stop(const struct sock *sk, u32 end_seq)
{
	struct cork_slot *s = &cork_table[hash_ptr(sk, CORK_BITS)];
	spinlock_t *lock = slot_lock(sk);
	unsigned long flags;
	u64 t0 = 0;

	if (READ_ONCE(s->sk) != sk)
		return;
	spin_lock_irqsave(lock, flags);
	if (s->sk == sk && !before(end_seq, s->seq)) {
		t0 = s->t_ns;
		s->sk = NULL;
		atomic_dec(&corks_open);
	}
	spin_unlock_irqrestore(lock, flags);
	if (t0) {
		stat_inc(ST_CORK_SAMPLES);
		hist_add(&cork_hist, ktime_get_ns() - t0);
	}
}

/* ---- the stall predicate ------------------------------------------------ */

/*
 * True when TCP holds data it would send right now but nothing will make it
 * do so: unsent data that cwnd, the peer's window, TCP_CORK and Nagle all
 * allow, no byte of the socket below TCP (no TX completion to come), and no
 * TSQ push queued or deferred.  @below is sk_wmem_alloc as it will be once
 * the caller's event is over (1 means empty: the socket keeps one unit).
 * Lockless callers get a hint; only the check under the lock counts.
 */
static bool tcp_sock_stalled(const struct sock *sk, int below)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	unsigned long tsq = READ_ONCE(sk->sk_tsq_flags);
	const struct sk_buff *skb;
	u8 nonagle;

	if (below > 1 || (tsq & (TSQF_QUEUED | TCPF_TSQ_DEFERRED)))
		return false;
	if (!((1 << READ_ONCE(sk->sk_state)) & (TCPF_ESTABLISHED | TCPF_CLOSE_WAIT)))
		return false;
	skb = tcp_send_head(sk);
	if (!skb)
		return false;
	if (tcp_packets_in_flight(tp) >= tcp_snd_cwnd(tp))
		return false;
	if (after(TCP_SKB_CB(skb)->end_seq, tcp_wnd_end(tp)))
		return false;
	nonagle = tp->nonagle;
	if (nonagle & TCP_NAGLE_CORK)
		return false;
	if (!(nonagle & TCP_NAGLE_OFF) && tp->packets_out && skb->len < tp->mss_cache)
		return false;
	return true;
}

/* ---- checks under the socket lock --------------------------------------- */

static struct sock *check_slots[CHECK_SLOTS];
static void check_work_fn(struct work_struct *work);
static DECLARE_WORK(check_work, check_work_fn);

/* Queue sk for a check under its lock; takes a reference if it can. */
static void suspect(struct sock *sk)
{
	int i;

	for (i = 0; i < CHECK_SLOTS; i++)
		if (READ_ONCE(check_slots[i]) == sk)
			return;
	if (!refcount_inc_not_zero(&sk->sk_refcnt))
		return;
	for (i = 0; i < CHECK_SLOTS; i++) {
		if (!cmpxchg(&check_slots[i], NULL, sk)) {
			queue_work(system_wq, &check_work);
			return;
		}
	}
	stat_inc(ST_CHECK_OVERFLOW);
	sock_put(sk);
}

static void check_stalled(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	u32 snd_nxt;
	bool stalled;

	lock_sock(sk);
	stat_inc(ST_WAKEUP_CHECKS);
	stalled = tcp_sock_stalled(sk, refcount_read(&sk->sk_wmem_alloc));
	if (stalled) {
		stat_inc(ST_LOST_WAKEUPS);
		if (READ_ONCE(recover) &&
		    !test_and_set_bit(TCP_TSQ_DEFERRED, &sk->sk_tsq_flags))
			sock_hold(sk);	/* dropped by tcp_release_cb() */
		else
			stalled = false;
	}
	snd_nxt = tp->snd_nxt;
	/* release_sock() runs tcp_release_cb(): the TSQ tasklet's push. */
	release_sock(sk);
	if (stalled) {
		stat_inc(ST_RECOVERIES);
		if (READ_ONCE(tp->snd_nxt) == snd_nxt)
			stat_inc(ST_RECOVERIES_IDLE);
	}
}

static void drain_check_slots(bool check)
{
	struct sock *sk;
	int i;

	for (i = 0; i < CHECK_SLOTS; i++) {
		sk = xchg(&check_slots[i], NULL);
		if (!sk)
			continue;
		if (check)
			check_stalled(sk);
		sock_put(sk);
	}
}

static void check_work_fn(struct work_struct *work)
{
	drain_check_slots(true);
}

/* ---- probes ------------------------------------------------------------- */

struct push_data {
	struct sock *sk;
	u32 snd_nxt;
	bool throttled;
};

static int push_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct push_data *d = (struct push_data *)ri->data;
	struct sock *sk = (struct sock *)regs_get_kernel_argument(regs, 0);

	d->sk = sk;
	d->snd_nxt = tcp_sk(sk)->snd_nxt;
	d->throttled = test_bit(TSQ_THROTTLED, &sk->sk_tsq_flags);
	return 0;
}

static int push_return(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct push_data *d = (struct push_data *)ri->data;
	struct sock *sk = d->sk;
	struct tcp_sock *tp = tcp_sk(sk);

	/* Pair with the completion side: see its stores before deciding. */
	smp_mb();
	if (!d->throttled && test_bit(TSQ_THROTTLED, &sk->sk_tsq_flags) &&
	    tp->snd_nxt == d->snd_nxt && tcp_send_head(sk)) {
		stat_inc(ST_AUTOCORK);
		cork_start(sk, tp->write_seq);
	}
	/* Corked, but the last completion has already gone by? */
	if (tcp_sock_stalled(sk, refcount_read(&sk->sk_wmem_alloc)))
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

static int xmit_pre(struct kprobe *p, struct pt_regs *regs)
{
	struct sk_buff *skb = (struct sk_buff *)regs_get_kernel_argument(regs, 0);
	const struct tcphdr *th;
	u32 payload;

	if ((unsigned long)skb->destructor != tcp_wfree_addr || !skb->sk)
		return 0;
	txc_stamp(skb, skb->dev);
	if (!atomic_read(&corks_open) || !skb_transport_header_was_set(skb))
		return 0;
	th = tcp_hdr(skb);
	payload = skb->len - skb_transport_offset(skb) - th->doff * 4;
	if (payload)
		cork_stop(skb->sk, ntohl(th->seq) + payload);
	return 0;
}

static struct kprobe xmit_probe = {
	.symbol_name	= "__dev_queue_xmit",
	.pre_handler	= xmit_pre,
};

/*
 * The last TX completion leaves sendable data behind and will not wake the
 * socket.  Most often a task owns the socket right now, in the middle of a
 * sendmsg() that will push it; then, as the TSQ tasklet itself does, leave a
 * push for the owner's release_sock() (TCP_TSQ_DEFERRED), decided under the
 * socket spinlock so the owner cannot slip away in between.  Otherwise, or
 * with recover=0 (count only), check under the socket lock from the work.
 */
static bool leave_push_to_owner(struct sock *sk)
{
	bool owned;

	if (!spin_trylock(&sk->sk_lock.slock))
		return false;
	owned = sock_owned_by_user(sk);
	if (owned && !test_and_set_bit(TCP_TSQ_DEFERRED, &sk->sk_tsq_flags)) {
		sock_hold(sk);	/* dropped by tcp_release_cb() */
		stat_inc(ST_OWNER_PUSHES);
	}
	spin_unlock(&sk->sk_lock.slock);
	return owned;
}

static void wfree_suspect(struct sock *sk)
{
	if (READ_ONCE(recover) && !in_hardirq() && leave_push_to_owner(sk))
		return;
	suspect(sk);
}

static int wfree_pre(struct kprobe *p, struct pt_regs *regs)
{
	struct sk_buff *skb = (struct sk_buff *)regs_get_kernel_argument(regs, 0);
	struct sock *sk = skb->sk;
	unsigned int ppm = READ_ONCE(fault_ppm);

	txc_complete(skb);

	if (ppm && test_bit(TSQ_THROTTLED, &sk->sk_tsq_flags) &&
	    ((u64)get_random_u32() * PPM >> 32) < ppm &&
	    test_and_clear_bit(TSQ_THROTTLED, &sk->sk_tsq_flags))
		stat_inc(ST_FAULTS_INJECTED);

	/* Re-read the flag after a full barrier, as tcp_push() must have. */
	smp_mb();
	if (!test_bit(TSQ_THROTTLED, &sk->sk_tsq_flags) &&
	    tcp_sock_stalled(sk, refcount_read(&sk->sk_wmem_alloc) - skb->truesize))
		wfree_suspect(sk);
	return 0;
}

static struct kprobe wfree_probe = {
	.symbol_name	= "tcp_wfree",
	.pre_handler	= wfree_pre,
};

/* The entry address of tcp_wfree (a kprobe may sit past its first bytes). */
static int resolve_tcp_wfree(void)
{
	char sym[KSYM_SYMBOL_LEN];
	unsigned long off = 0;
	char *plus;

	sprint_symbol(sym, (unsigned long)wfree_probe.addr);
	plus = strchr(sym, '+');
	if (strncmp(sym, "tcp_wfree+", 10) || !plus || sscanf(plus + 1, "%lx", &off) != 1)
		return -ENOENT;
	tcp_wfree_addr = (unsigned long)wfree_probe.addr - off;
	return 0;
}

static unsigned long probes_missed(void)
{
	return push_probe.nmissed + push_probe.kp.nmissed + xmit_probe.nmissed +
	       wfree_probe.nmissed;
}

/* ---- sysfs -------------------------------------------------------------- */

static void reset_all(void)
{
	int i;

	for (i = 0; i < ST_NR; i++)
		atomic64_set(&stats[i], 0);
	hist_reset(&cork_hist);
	for (i = 0; i < atomic_read(&dev_hists_used); i++)
		hist_reset(&dev_hists[i].hist);
}

static ssize_t stats_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	int i, n = atomic_read_acquire(&dev_hists_used);
	s64 txc_max = 0;
	int len = 0;

	for (i = 0; i < ST_NR; i++)
		len += sysfs_emit_at(buf, len, "%s %lld\n", stat_names[i],
				     atomic64_read(&stats[i]));
	for (i = 0; i < n; i++)
		txc_max = max(txc_max, atomic64_read(&dev_hists[i].hist.max_ns));
	len += sysfs_emit_at(buf, len, "cork_hold_max_ns %lld\n",
			     atomic64_read(&cork_hist.max_ns));
	len += sysfs_emit_at(buf, len, "txc_max_ns %lld\n", txc_max);
	len += sysfs_emit_at(buf, len, "probes_missed %lu\n", probes_missed());
	len += sysfs_emit_at(buf, len, "recover %d\n", READ_ONCE(recover));
	len += sysfs_emit_at(buf, len, "fault_ppm %u\n", READ_ONCE(fault_ppm));
	return len;
}

static int hist_emit(char *buf, int len, const char *name, const char *dev,
		     struct log2_hist *h)
{
	int i;

	len += sysfs_emit_at(buf, len, "hist %s %s max_ns %lld sum_ns %lld\n", name, dev,
			     atomic64_read(&h->max_ns), atomic64_read(&h->sum_ns));
	for (i = 0; i < HIST_BUCKETS; i++) {
		s64 c = atomic64_read(&h->bucket[i]);

		if (c)
			len += sysfs_emit_at(buf, len, "%llu %llu %lld\n",
					     i ? 1ULL << i : 0ULL, 1ULL << (i + 1), c);
	}
	return len;
}

static ssize_t histograms_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	int i, n = atomic_read_acquire(&dev_hists_used);
	int len;

	len = hist_emit(buf, 0, "cork_hold_ns", "-", &cork_hist);
	for (i = 0; i < n; i++)
		len = hist_emit(buf, len, "txc_ns", dev_hists[i].name, &dev_hists[i].hist);
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

static struct kobj_attribute stats_attr = __ATTR_RO(stats);
static struct kobj_attribute histograms_attr = __ATTR_RO(histograms);
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

static int __init tsq_probe_init(void)
{
	int i, ret;

	if (fault_ppm && !fault_inject) {
		pr_err("refusing to load: fault_ppm=%u needs fault_inject=1\n", fault_ppm);
		return -EINVAL;
	}
	for (i = 0; i < ARRAY_SIZE(slot_locks); i++)
		spin_lock_init(&slot_locks[i]);

	/* tcp_wfree first: its address tells __dev_queue_xmit which skbs to time. */
	ret = register_kprobe(&wfree_probe);
	if (ret) {
		pr_err("refusing to load: cannot probe tcp_wfree (%d: missing, inlined or blacklisted)\n",
		       ret);
		return ret;
	}
	ret = resolve_tcp_wfree();
	if (ret) {
		pr_err("refusing to load: cannot find the entry of tcp_wfree in kallsyms\n");
		goto err_wfree;
	}
	ret = register_kprobe(&xmit_probe);
	if (ret) {
		pr_err("refusing to load: cannot probe __dev_queue_xmit (%d: missing, inlined or blacklisted)\n",
		       ret);
		goto err_wfree;
	}
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
	tsq_loaded = true;
	pr_info("version %s loaded: recover=%d fault_inject=%d fault_ppm=%u\n",
		TAILFIX_VERSION, recover, fault_inject, fault_ppm);
	return 0;

err_kobj:
	kobject_put(tsq_kobj);
err_push:
	unregister_kretprobe(&push_probe);
err_xmit:
	unregister_kprobe(&xmit_probe);
err_wfree:
	unregister_kprobe(&wfree_probe);
	return ret;
}

static void __exit tsq_probe_exit(void)
{
	sysfs_remove_group(tsq_kobj, &tsq_group);
	kobject_put(tsq_kobj);
	/* After this no handler runs and none will queue a check. */
	unregister_kretprobe(&push_probe);
	unregister_kprobe(&xmit_probe);
	unregister_kprobe(&wfree_probe);
	cancel_work_sync(&check_work);
	/* Sockets still waiting: check them (with recover, push) and let go. */
	drain_check_slots(true);
	pr_info("unloaded: %lld lost wake-ups, %lld recoveries\n",
		atomic64_read(&stats[ST_LOST_WAKEUPS]), atomic64_read(&stats[ST_RECOVERIES]));
}

module_init(tsq_probe_init);
module_exit(tsq_probe_exit);

MODULE_DESCRIPTION("Measure, detect and recover TCP small queue lost wake-ups");
MODULE_AUTHOR("ena-tcp-tailfix developers");
MODULE_LICENSE("GPL");
MODULE_VERSION(TAILFIX_VERSION);
