// SPDX-License-Identifier: GPL-2.0
/*
 * tsq_probe: the hooks.  tcp_push() (a kretprobe), __dev_queue_xmit() (the
 * net_dev_queue tracepoint, else a kprobe) and tcp_wfree() (ftrace, else a
 * kprobe; a kretprobe with fault_mode=completer), each attached the
 * cheapest way the kernel offers; fault injection; the watch that says
 * when the hooks stop being called.  See tsq_main.c for where each runs.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/ftrace.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/kallsyms.h>
#include <linux/kprobes.h>
#include <linux/netdevice.h>
#include <linux/random.h>
#include <linux/rcupdate.h>
#include <linux/tracepoint.h>
#include <linux/wait_bit.h>
#include <linux/workqueue.h>
#include <net/net_namespace.h>
#include <net/sock.h>
#include <net/tcp.h>

#include "tsq_probe.h"

/* The taint for a kernel that ran fault injection (TAINT_TEST where it exists). */
#ifdef TAINT_TEST
#define TSQ_TAINT	TAINT_TEST
#else
#define TSQ_TAINT	TAINT_USER
#endif

/* ---- tcp_push(): autocork ----------------------------------------------- */

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

	/* MSG_MORE becomes a local TCP_NAGLE_CORK in tcp_push(), not tp->nonagle. */
	if ((flags & TSQ_MSG_HOLD) || (nonagle & TCP_NAGLE_CORK))
		stat_inc(ST_APP_HOLDS);
	/*
	 * Nothing of sk below TCP: tcp_push() cannot autocork (that needs a
	 * completion to come, tcp_should_autocork()), and no completion has
	 * gone by unseen: any that comes before the return is of a segment
	 * this push sent, judged by the tcp_wfree() hook as it runs.  The
	 * return handler would find nothing: skip it (the kretprobe's return
	 * trampoline and bookkeeping are most of its cost).  Request/response
	 * traffic mostly writes with nothing below.
	 */
	if (!tsq_data_below(refcount_read(&sk->sk_wmem_alloc)))
		return 1;
	d->sk = sk;
	d->snd_nxt = READ_ONCE(tcp_sk(sk)->snd_nxt);
	d->throttled = test_bit(TSQ_THROTTLED, &sk->sk_tsq_flags);
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
		tsq_cork_start(sk, write_seq);
	}
	/* The application asked to hold: its next write sends it. */
	if (d->app_holds)
		return 0;
	/* Corked, but the last completion has already gone by? */
	if (tsq_stall_hint(sk, refcount_read(&sk->sk_wmem_alloc)))
		tsq_suspect(sk);
	return 0;
}

static struct kretprobe push_probe = {
	.kp.symbol_name	= "tcp_push",
	.entry_handler	= push_entry,
	.handler	= push_return,
	.data_size	= sizeof(struct push_data),
};

/* ---- __dev_queue_xmit(): stamps ----------------------------------------- */

static unsigned long tsq_wfree_addr;

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

	if ((unsigned long)skb->destructor != tsq_wfree_addr || !skb->sk)
		return;
	tsq_txc_stamp(skb, skb->dev);
	if (!atomic_read(&tsq_corks_open) || !skb_tcp_headers(skb))
		return;
	th = tcp_hdr(skb);
	payload = skb->len - skb_transport_offset(skb) - th->doff * 4;
	if (payload)
		tsq_cork_stop(skb->sk, ntohl(th->seq) + payload);
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
	if (tsq_xmit_attach == ATTACH_KPROBE) {
		unregister_kprobe(&xmit_probe);
		return;
	}
	tracepoint_probe_unregister(xmit_tp, xmit_tp_hit, NULL);
	/* No call of xmit_tp_hit() is still running or about to run. */
	tracepoint_synchronize_unregister();
}

/* ---- fault injection ---------------------------------------------------- */

/* A completion that finds TSQ_THROTTLED set, drawn with fault_ppm. */
static bool fault_draw(struct sock *sk)
{
	unsigned int ppm = READ_ONCE(tsq_fault_ppm);

	return ppm && test_bit(TSQ_THROTTLED, &sk->sk_tsq_flags) &&
	       ((u64)get_random_u32() * PPM >> 32) < ppm;
}

/* Set by the first injected fault: the kernel is tainted, say so once. */
#define FAULT_TAINTED	0
#define FAULT_SAY	1
static unsigned long fault_flags;

void tsq_fault_say(void)
{
	if (test_and_clear_bit(FAULT_SAY, &fault_flags))
		pr_warn("fault injected (fault_mode=%s fault_ppm=%u): TX completions miss TSQ_THROTTLED on purpose; kernel tainted\n",
			tsq_fault_mode_names[tsq_fault_mode], READ_ONCE(tsq_fault_ppm));
}

/* A fault was injected: count it, taint once. */
static void fault_counted(void)
{
	stat_inc(ST_FAULTS_INJECTED);
	if (!test_and_set_bit(FAULT_TAINTED, &fault_flags)) {
		add_taint(TSQ_TAINT, LOCKDEP_STILL_OK);
		/* Said from the work: printk from here may be an NMI's. */
		set_bit(FAULT_SAY, &fault_flags);
		tsq_kick_check_work();
	}
}

/* fault_mode=flag: the hook itself finds the flag cleared. */
static void fault_inject_one(struct sock *sk)
{
	if (fault_draw(sk) && test_and_clear_bit(TSQ_THROTTLED, &sk->sk_tsq_flags))
		fault_counted();
}

/* ---- tcp_wfree(): completions ------------------------------------------- */

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

	tsq_txc_complete(skb);
	if (!in_interrupt())
		stat_inc(ST_TXC_TASK);
	/* fault_inject is load-time only: fault_ppm alone never injects. */
	if (tsq_fault_inject && tsq_fault_mode == FAULT_FLAG)
		fault_inject_one(sk);

	/* Re-read the flag after a full barrier, as tcp_push() must have. */
	smp_mb();
	below = refcount_read(&sk->sk_wmem_alloc) - skb->truesize;
	if (tsq_data_below(below))
		return;
	/* The last completion: unless the sender is still sending it. */
	if (atomic_read(&tsq_corks_open) && !skb_in_transmit(sk, skb))
		tsq_cork_idle(sk);
	if (!tsq_stall_hint(sk, below) || skb_in_transmit(sk, skb))
		return;
	if (!test_bit(TSQ_THROTTLED, &sk->sk_tsq_flags)) {
		tsq_suspect(sk);
	} else {
		/*
		 * tcp_wfree() is about to find the flag and wake TSQ, unless
		 * it misses it: look again once it has returned.
		 */
		stat_inc(ST_FLAGGED);
		tsq_suspect_flagged(sk);
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

/* ---- how tcp_wfree() is hooked ------------------------------------------ */

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
	tsq_wfree_addr = (unsigned long)kp->addr - off;
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

	if (tsq_wfree_attach == ATTACH_FTRACE) {
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
	tsq_wfree_attach = ATTACH_KPROBE;
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
	if (tsq_fault_completer())
		completer_detach();
	else if (tsq_wfree_attach == ATTACH_KPROBE)
		unregister_kprobe(&wfree_probe);
	else
		wfree_ftrace_unregister();
}

unsigned long tsq_probes_missed_raw(void)
{
	return push_probe.nmissed + push_probe.kp.nmissed + xmit_probe.nmissed +
	       wfree_probe.nmissed + wfree_ftrace_missed_sum() +
	       completer_probe.nmissed + completer_probe.kp.nmissed;
}

/* ---- the watch: completions that stopped being seen --------------------- */

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
#define WATCH_MIN_STAMPS 8	/* stamps that all failed to complete: not chance */
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
static u64 tsq_data_segs_sent(void)
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
	u64 stamps = watch_delta(tsq_stat_sum(ST_TXC_STAMPS), &watch_stamps);
	u64 samples = watch_delta(tsq_stat_sum(ST_TXC_SAMPLES), &watch_samples);
	u64 sent = watch_delta(tsq_data_segs_sent(), &watch_sent);
	/* One skb in txc_sample is stamped: each stamp stands for n skbs. */
	u64 n = READ_ONCE(tsq_txc_sample);

	if (!samples && stamps >= WATCH_MIN_STAMPS && stamps * n >= WATCH_MIN) {
		this_cpu_add(tsq_pcpu.stat[ST_TXC_UNSEEN], stamps * n);
		if (!test_and_set_bit(WATCH_SAID_OFF, &watch_said))
			pr_warn("no TX completion timed in %u ms while about %llu TCP skbs went to devices: the tcp_wfree hook is not called (kernel.ftrace_enabled=0?); completions go unchecked, counted in completions_unseen\n",
				WATCH_MS, stamps * n);
	} else if (!stamps && sent >= WATCH_MIN * n) {
		if (!test_and_set_bit(WATCH_SAID_DESTRUCTOR, &watch_said))
			pr_warn("TCP sent %llu data segments in %u ms and none reached a device with tcp_wfree (%pS) as its destructor: TCP frees its skbs through another function (a live patch?), or the xmit hook is not called; nothing is timed or checked\n",
				sent, WATCH_MS, (void *)tsq_wfree_addr);
	}
	schedule_delayed_work(&watch_work, msecs_to_jiffies(WATCH_MS));
}

void tsq_watch_start(void)
{
	watch_stamps = tsq_stat_sum(ST_TXC_STAMPS);
	watch_samples = tsq_stat_sum(ST_TXC_SAMPLES);
	watch_sent = tsq_data_segs_sent();
	schedule_delayed_work(&watch_work, msecs_to_jiffies(WATCH_MS));
}

void tsq_watch_stop(void)
{
	cancel_delayed_work_sync(&watch_work);
}

/* ---- attach and detach -------------------------------------------------- */

/*
 * Every hook, or none (the error is said in one dmesg line).  tcp_wfree
 * first: its address tells __dev_queue_xmit which skbs to time.
 */
int tsq_hooks_attach(void)
{
	int ret;

	if (tsq_fault_completer())
		ret = completer_attach();
	else
		ret = attach_cheapest(&tsq_wfree_attach, ATTACH_FTRACE, wfree_ftrace_attach,
				      wfree_kprobe_attach);
	if (ret)
		return ret;
	ret = attach_cheapest(&tsq_xmit_attach, ATTACH_TRACEPOINT, xmit_tp_attach,
			      xmit_kprobe_attach);
	if (ret)
		goto err_wfree;
	ret = register_kretprobe(&push_probe);
	if (ret) {
		pr_err("refusing to load: cannot probe tcp_push (%d: missing, inlined or blacklisted)\n",
		       ret);
		goto err_xmit;
	}
	return 0;

err_xmit:
	xmit_detach();
err_wfree:
	wfree_detach();
	return ret;
}

/* Returns once no handler runs and none is about to. */
void tsq_hooks_detach(void)
{
	unregister_kretprobe(&push_probe);
	xmit_detach();
	wfree_detach();
}
