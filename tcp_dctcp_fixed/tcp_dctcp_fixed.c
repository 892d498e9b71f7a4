// SPDX-License-Identifier: GPL-2.0
/*
 * dctcp_fixed: Data Center TCP (RFC 8257), an independent implementation
 * of the algorithm of in-tree dctcp (net/ipv4/tcp_dctcp.c), plus the
 * differences listed in tcp_dctcp_fixed/README.md ("Differences from
 * in-tree dctcp").  It was written from RFC 8257 and the netdev discussion
 * of the DCTCP tail-latency patches, not copied from tcp_dctcp.c, but the
 * receiver state machine, the alpha update, the loss and undo handling and
 * get_info() do what in-tree dctcp's do.
 *
 * Sender: once per window of data (one RTT), alpha is updated as an EWMA of
 * the share of delivered packets that the receiver echoed with ECE, with gain
 * 1/2^shift_g.  The first ECE of a window reduces cwnd once, to
 * cwnd * (1 - alpha / 2), at least 2 segments; losses are handled like Reno
 * (halve).
 *
 * Receiver: the ECE bit follows the CE state of the segments it acknowledges
 * exactly.  When the CE state of the incoming segments changes, the segments
 * received before the change must be acknowledged with the old ECE value and
 * the new one at once.  Whether an ACK for those earlier segments is still
 * owed is read from the socket's own delayed-ACK state (ICSK_ACK_TIMER),
 * never from a copy kept here: a copy goes stale when the ACK leaves
 * piggybacked on data, and the resulting duplicate ACK for old data was the
 * root of the 200 ms RTO tails reported on netdev in 2018.
 *
 * First flight after an ECE reduction: when the last segment of a request
 * is CE-marked and the reply carries the ECE, the requester reduces its
 * window with nothing in flight.  Linux receivers since 4.18 ACK the
 * CWR-marked segment that follows at once (tcp_ecn_accept_cwr()), so a
 * one-segment flight does not wait for their delayed ACK; receivers that
 * do not (Linux before 4.18, stacks that delay the ACK of a CWR-marked
 * segment) would hold it.  For those, this module makes that first flight
 * at least min_cwnd_after_ce segments (at most 2, and never more than the
 * window before the reduction): two full segments are ACKed at once by
 * any delayed-ACK receiver.  From 6.1 on the core's PRR already leaves two
 * segments there and the raise never fires.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/inet_diag.h>
#include <linux/kernel.h>
#include <linux/kobject.h>
#include <linux/math64.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/percpu.h>
#include <linux/sysfs.h>
#include <net/inet_ecn.h>
#include <net/tcp.h>

#ifndef TAILFIX_VERSION
#define TAILFIX_VERSION "unknown"
#endif

/*
 * alpha has 10 fractional bits, internally and in tcp_dctcp_info, as in-tree
 * dctcp keeps it: 1024 means 1.0.
 */
#define DCTCPF_ALPHA_BITS	10U
#define DCTCPF_ALPHA_ONE	1024U	/* 1 << DCTCPF_ALPHA_BITS */

/*
 * The AccECN rework (7.x) replaced TCP_ECN_OK by ECN modes.  Detected from
 * the headers we build against: TCP_ECN_MODE_RFC3168 exists only there.
 */
#ifdef TCP_ECN_MODE_RFC3168
static bool dctcpf_ecn_ok(const struct tcp_sock *tp)
{
	return tcp_ecn_mode_any(tp);
}

static bool dctcpf_ecn_rfc3168(const struct tcp_sock *tp)
{
	return tcp_ecn_mode_rfc3168(tp);
}
#else
static bool dctcpf_ecn_ok(const struct tcp_sock *tp)
{
	return tp->ecn_flags & TCP_ECN_OK;
}

static bool dctcpf_ecn_rfc3168(const struct tcp_sock *tp)
{
	return tp->ecn_flags & TCP_ECN_OK;
}
#endif

#ifdef DCTCPF_HAVE_PLB
#define DCTCPF_PLB	"supported"
#else
#define DCTCPF_PLB	"not in this kernel"
#endif

/*
 * tcp_snd_cwnd() and tcp_snd_cwnd_set() arrived in 5.19 (the Kbuild looks
 * for them in the headers); before, 5.10 for one, cwnd is the plain field.
 */
#ifndef DCTCPF_HAVE_SND_CWND
static inline u32 tcp_snd_cwnd(const struct tcp_sock *tp)
{
	return tp->snd_cwnd;
}

static inline void tcp_snd_cwnd_set(struct tcp_sock *tp, u32 val)
{
	tp->snd_cwnd = val;
}
#endif

/* Per-socket state, kept in icsk_ca_priv. */
struct dctcpf {
	u64 ece_mstamp;		/* tp->tcp_mstamp of the last ACK with ECE */
	u32 win_end;		/* snd_nxt when the observation window began */
	u32 win_delivered;	/* tp->delivered at the window start */
	u32 win_delivered_ce;	/* tp->delivered_ce at the window start */
	u32 alpha;		/* marked share, DCTCPF_ALPHA_ONE == 1.0 */
	u32 loss_cwnd;		/* cwnd before the last reduction */
	u32 run_end;		/* rcv_nxt after the last segment of the run */
	u8 ce_run;		/* CE state of the current run of segments */
	u8 ece_valid;		/* ece_mstamp is set */
	u8 ece_cwr;		/* the current CWR episode was caused by ECE */
#ifdef DCTCPF_HAVE_PLB
	struct tcp_plb_state plb;	/* Protective Load Balancing (6.2+) */
#endif
};

/* ---- tunables -------------------------------------------------------- */

static unsigned int shift_g __read_mostly = 4;		/* g = 1/16 */
static unsigned int alpha_on_init __read_mostly = DCTCPF_ALPHA_ONE;
static unsigned int clamp_alpha_on_loss __read_mostly;
static unsigned int min_cwnd_after_ce __read_mostly = 2;

struct dctcpf_range {
	unsigned int min;
	unsigned int max;
};

/* Parse and range-check one unsigned parameter; one line says why not. */
static int dctcpf_param_set(const char *val, const struct kernel_param *kp,
			    const struct dctcpf_range *r)
{
	unsigned int v;
	int err;

	/* base 10 only: "010" is ten, not eight */
	err = kstrtouint(val, 10, &v);
	if (err || v < r->min || v > r->max) {
		pr_err("parameter %s must be an integer in %u..%u, got '%.*s'\n",
		       kp->name, r->min, r->max, (int)strcspn(val, "\n"), val);
		return -EINVAL;
	}
	WRITE_ONCE(*(unsigned int *)kp->arg, v);
	return 0;
}

static int shift_g_set(const char *val, const struct kernel_param *kp)
{
	static const struct dctcpf_range r = { 0, 10 };

	return dctcpf_param_set(val, kp, &r);
}

static int alpha_on_init_set(const char *val, const struct kernel_param *kp)
{
	static const struct dctcpf_range r = { 0, DCTCPF_ALPHA_ONE };

	return dctcpf_param_set(val, kp, &r);
}

static int flag_set(const char *val, const struct kernel_param *kp)
{
	static const struct dctcpf_range r = { 0, 1 };

	return dctcpf_param_set(val, kp, &r);
}

static int min_cwnd_after_ce_set(const char *val, const struct kernel_param *kp)
{
	/*
	 * Two full segments are what a delayed-ACK receiver ACKs at once;
	 * more would let the floor undo the reduction it follows.
	 */
	static const struct dctcpf_range r = { 1, 2 };

	return dctcpf_param_set(val, kp, &r);
}

static const struct kernel_param_ops shift_g_ops = {
	.set = shift_g_set,
	.get = param_get_uint,
};

static const struct kernel_param_ops alpha_on_init_ops = {
	.set = alpha_on_init_set,
	.get = param_get_uint,
};

static const struct kernel_param_ops flag_ops = {
	.set = flag_set,
	.get = param_get_uint,
};

static const struct kernel_param_ops min_cwnd_after_ce_ops = {
	.set = min_cwnd_after_ce_set,
	.get = param_get_uint,
};

module_param_cb(shift_g, &shift_g_ops, &shift_g, 0644);
MODULE_PARM_DESC(shift_g, "EWMA gain for alpha is 1/2^shift_g (0..10, default 4)");
module_param_cb(alpha_on_init, &alpha_on_init_ops, &alpha_on_init, 0644);
MODULE_PARM_DESC(alpha_on_init, "alpha of a new connection, 1024 = 1.0 (0..1024, default 1024)");
module_param_cb(clamp_alpha_on_loss, &flag_ops, &clamp_alpha_on_loss, 0644);
MODULE_PARM_DESC(clamp_alpha_on_loss, "set alpha to 1.0 on packet loss or RTO (0/1, default 0)");
module_param_cb(min_cwnd_after_ce, &min_cwnd_after_ce_ops, &min_cwnd_after_ce, 0644);
MODULE_PARM_DESC(min_cwnd_after_ce,
		 "segments in the first flight after an ECE reduction with nothing in flight (1..2, default 2)");

/* ---- statistics, /sys/kernel/tcp_dctcp_fixed/stats ---------------------- */

enum dctcpf_stat {
	DCTCPF_STAT_CE_CHANGE_ACKS,	/* immediate ACKs forced by a CE change */
	DCTCPF_STAT_PRIOR_RUN_ACKS,	/* held-back ACKs flushed with old ECE */
	DCTCPF_STAT_ECN_REDUCTIONS,	/* cwnd reductions caused by ECE */
	DCTCPF_STAT_OTHER_CWR,		/* CWR not caused by ECE (local, TLP) */
	DCTCPF_STAT_LOSS_REDUCTIONS,	/* reductions caused by loss or RTO */
	DCTCPF_STAT_FLOOR_APPLIED,	/* first flights raised to the floor */
	DCTCPF_STAT_ECN_FALLBACKS,	/* connections without ECN (Reno) */
	DCTCPF_STAT_NR,
};

static const char * const dctcpf_stat_names[DCTCPF_STAT_NR] = {
	[DCTCPF_STAT_CE_CHANGE_ACKS]	= "ce_change_acks",
	[DCTCPF_STAT_PRIOR_RUN_ACKS]	= "prior_run_acks",
	[DCTCPF_STAT_ECN_REDUCTIONS]	= "ecn_reductions",
	[DCTCPF_STAT_OTHER_CWR]		= "other_cwr",
	[DCTCPF_STAT_LOSS_REDUCTIONS]	= "loss_reductions",
	[DCTCPF_STAT_FLOOR_APPLIED]	= "floor_applied",
	[DCTCPF_STAT_ECN_FALLBACKS]	= "ecn_fallbacks",
};

/* Bumped in the receive path: one cache line per CPU, summed on read. */
struct dctcpf_stats {
	unsigned long n[DCTCPF_STAT_NR];
};

static DEFINE_PER_CPU(struct dctcpf_stats, dctcpf_stats);

static void dctcpf_count(enum dctcpf_stat s)
{
	this_cpu_inc(dctcpf_stats.n[s]);
}

static ssize_t stats_show(struct kobject *kobj, struct kobj_attribute *attr,
			  char *buf)
{
	unsigned long sum[DCTCPF_STAT_NR] = {};
	int cpu, i, len = 0;

	for_each_possible_cpu(cpu) {
		const struct dctcpf_stats *st = per_cpu_ptr(&dctcpf_stats, cpu);

		for (i = 0; i < DCTCPF_STAT_NR; i++)
			sum[i] += READ_ONCE(st->n[i]);
	}
	for (i = 0; i < DCTCPF_STAT_NR; i++)
		len += sysfs_emit_at(buf, len, "%s %lu\n", dctcpf_stat_names[i],
				     sum[i]);
	return len;
}

/* root only: the counters show the traffic of every socket on the host */
static struct kobj_attribute dctcpf_stats_attr = __ATTR_RO_MODE(stats, 0400);

static struct attribute *dctcpf_attrs[] = {
	&dctcpf_stats_attr.attr,
	NULL,
};

static const struct attribute_group dctcpf_group = {
	.attrs = dctcpf_attrs,
};

static struct kobject *dctcpf_kobj;

/* ---- helpers ----------------------------------------------------------- */

static struct tcp_congestion_ops dctcpf_reno;

static void dctcpf_send_ack_for(struct sock *sk, u32 rcv_nxt)
{
#ifdef DCTCPF_SEND_ACK_HAS_FLAGS
	__tcp_send_ack(sk, rcv_nxt, 0);
#else
	__tcp_send_ack(sk, rcv_nxt);
#endif
}

/* ECE on outgoing ACKs is driven by TCP_ECN_DEMAND_CWR. */
static void dctcpf_set_echo(struct tcp_sock *tp, bool ce)
{
	if (ce)
		tp->ecn_flags |= TCP_ECN_DEMAND_CWR;
	else
		tp->ecn_flags &= ~TCP_ECN_DEMAND_CWR;
}

static void dctcpf_window_start(const struct tcp_sock *tp, struct dctcpf *ca)
{
	ca->win_end = tp->snd_nxt;
	ca->win_delivered = tp->delivered;
	ca->win_delivered_ce = tp->delivered_ce;
}

/* ---- congestion control ops -------------------------------------------- */

static void dctcpf_init(struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct dctcpf *ca = inet_csk_ca(sk);

	BUILD_BUG_ON(sizeof(struct dctcpf) > ICSK_CA_PRIV_SIZE);

	if (!dctcpf_ecn_ok(tp) &&
	    !((1 << sk->sk_state) & (TCPF_LISTEN | TCPF_CLOSE))) {
		/* The peer did not negotiate ECN: run Reno, and let the core
		 * stop marking our packets ECT (the fallback does not ask for
		 * ECN, so tcp_init_congestion_control() clears it).
		 */
		WRITE_ONCE(inet_csk(sk)->icsk_ca_ops, &dctcpf_reno);
		INET_ECN_dontxmit(sk);
		dctcpf_count(DCTCPF_STAT_ECN_FALLBACKS);
		return;
	}

	memset(ca, 0, sizeof(*ca));
	ca->alpha = min(READ_ONCE(alpha_on_init), DCTCPF_ALPHA_ONE);
	ca->run_end = tp->rcv_nxt;
	dctcpf_window_start(tp, ca);
#ifdef DCTCPF_HAVE_PLB
	tcp_plb_init(sk, &ca->plb);
#endif
}

/*
 * Per ACK: remember whether this very ACK carried ECE, stamped with the
 * time the core gave it (tcp_mstamp, refreshed for every received segment
 * and before every tcp_write_xmit()), so that set_state() can tell a CWR
 * entered on this ACK from one entered later for another reason.
 *
 * Per window (RFC 8257 3.3), once snd_una passes the window end, whether or
 * not anything was delivered: alpha = (1 - g) * alpha + g * F, with
 * g = 1/2^shift_g and 10 fractional bits, the way in-tree dctcp keeps it.
 * The decay step removes alpha/2^g, or all of alpha once that is below one
 * unit, so a path that stopped marking reaches alpha 0.
 */
static void dctcpf_in_ack(struct sock *sk, u32 flags)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct dctcpf *ca = inet_csk_ca(sk);
	u32 delivered, marked, alpha, step, g;

	if (flags & CA_ACK_ECE) {
		ca->ece_mstamp = tp->tcp_mstamp;
		ca->ece_valid = 1;
	} else {
		ca->ece_valid = 0;
	}

	if (before(tp->snd_una, ca->win_end))
		return;

	delivered = tp->delivered - ca->win_delivered;
	marked = min(tp->delivered_ce - ca->win_delivered_ce, delivered);
	g = min(READ_ONCE(shift_g), DCTCPF_ALPHA_BITS);
	alpha = ca->alpha;
	step = alpha >> g;
	alpha -= step ? step : alpha;
	if (marked) {
		/* g * F: marked / delivered in units of 2^-10, times 2^-g */
		alpha += div_u64((u64)marked << (DCTCPF_ALPHA_BITS - g),
				 delivered);
		alpha = min(alpha, DCTCPF_ALPHA_ONE);
	}
	/* get_info() reads alpha without the socket lock */
	WRITE_ONCE(ca->alpha, alpha);
#ifdef DCTCPF_HAVE_PLB
	/*
	 * PLB, as in-tree dctcp feeds it: the window's marked share in
	 * TCP_PLB_SCALE bits; after net.ipv4.tcp_plb_rehash_rounds congested
	 * rounds the core rehashes the flow onto another path.  The sysctls
	 * (net.ipv4.tcp_plb_enabled, off by default) decide; nothing happens
	 * without them.
	 */
	if (delivered) {
		tcp_plb_update_state(sk, &ca->plb,
				     (int)div_u64((u64)marked << TCP_PLB_SCALE, delivered));
		tcp_plb_check_rehash(sk, &ca->plb);
	}
#endif
	dctcpf_window_start(tp, ca);
}

/* Is the core processing the ACK whose ECE in_ack() saw? */
static bool dctcpf_on_ece_ack(const struct sock *sk)
{
	const struct dctcpf *ca = inet_csk_ca(sk);

	return ca->ece_valid && ca->ece_mstamp == tcp_sk(sk)->tcp_mstamp;
}

/*
 * Called by the core when it enters CWR (ECE, local congestion), Recovery
 * or Loss: cwnd * (1 - alpha / 2), at least 2 segments (RFC 5681's
 * 2 * SMSS, in-tree dctcp's floor; at a window of 1 that is above the cwnd
 * it reduces, and PRR may bring cwnd up to it).  Loss overrides it
 * (halving) in dctcpf_loss().
 */
static u32 dctcpf_ssthresh(struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct dctcpf *ca = inet_csk_ca(sk);
	u32 cwnd = tcp_snd_cwnd(tp);
	u32 cut;

	ca->loss_cwnd = cwnd;
	cut = (u32)(((u64)cwnd * ca->alpha) >> (DCTCPF_ALPHA_BITS + 1));
	return max(cwnd - cut, 2U);
}

/* RFC 8257 3.5: on loss, react like standard TCP. */
static void dctcpf_loss(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct dctcpf *ca = inet_csk_ca(sk);
	u32 cwnd = tcp_snd_cwnd(tp);

	ca->loss_cwnd = cwnd;
	tp->snd_ssthresh = max(cwnd >> 1, 2U);
	if (READ_ONCE(clamp_alpha_on_loss))
		WRITE_ONCE(ca->alpha, DCTCPF_ALPHA_ONE);
	dctcpf_count(DCTCPF_STAT_LOSS_REDUCTIONS);
}

static void dctcpf_set_state(struct sock *sk, u8 new_state)
{
	struct dctcpf *ca = inet_csk_ca(sk);
	u8 old_state = inet_csk(sk)->icsk_ca_state;

	if (new_state == old_state)
		return;

	switch (new_state) {
	case TCP_CA_CWR:
		/*
		 * tcp_enter_cwr() also runs on local congestion (NET_XMIT_CN
		 * in __tcp_transmit_skb()) and a TLP-detected loss enters
		 * CWR too: only a CWR entered while the ECE ACK is being
		 * processed is an ECE reduction.
		 */
		ca->ece_cwr = dctcpf_on_ece_ack(sk);
		dctcpf_count(ca->ece_cwr ? DCTCPF_STAT_ECN_REDUCTIONS :
			     DCTCPF_STAT_OTHER_CWR);
		break;
	case TCP_CA_Recovery:
		dctcpf_loss(sk);
		break;
	case TCP_CA_Open:
		ca->ece_cwr = 0;
		break;
	default:
		/* RTO is handled at CA_EVENT_LOSS */
		break;
	}
}

/*
 * Receiver: the segment just queued arrived with CE state @ce.  Runs from
 * tcp_ecn_check_ce(), after inet_csk_schedule_ack() for this segment and
 * before the core decides whether to ACK now or later.
 */
static void dctcpf_ce_seen(struct sock *sk, bool ce)
{
	struct inet_connection_sock *icsk = inet_csk(sk);
	struct tcp_sock *tp = tcp_sk(sk);
	struct dctcpf *ca = inet_csk_ca(sk);

	/*
	 * Under AccECN the core echoes CE with its own counters and sends its
	 * own change-triggered ACKs: the RFC 3168 echo state is not ours to
	 * touch there.
	 */
	if (!dctcpf_ecn_rfc3168(tp)) {
		ca->ce_run = ce;
		return;
	}

	if (ca->ce_run != ce) {
		/*
		 * Segments of the previous run whose ACK is still held back
		 * by the delayed-ACK timer: ACK them now, alone, with their
		 * own ECE value.  When their ACK already left (on its own or
		 * on data), the core cleared ICSK_ACK_TIMER and nothing is
		 * sent, so this can never duplicate an ACK.  The core
		 * recognises an ACK for less than rcv_nxt and keeps the
		 * delayed-ACK state of the new segment intact.
		 */
		if (icsk->icsk_ack.pending & ICSK_ACK_TIMER) {
			dctcpf_set_echo(tp, ca->ce_run);
			dctcpf_send_ack_for(sk, ca->run_end);
			dctcpf_count(DCTCPF_STAT_PRIOR_RUN_ACKS);
		}
		/* and the first segment of the new run is ACKed at once */
		icsk->icsk_ack.pending |= ICSK_ACK_NOW;
		ca->ce_run = ce;
		dctcpf_count(DCTCPF_STAT_CE_CHANGE_ACKS);
	}
	ca->run_end = tp->rcv_nxt;
	dctcpf_set_echo(tp, ce);
}

/*
 * Sender: a flight is about to start with nothing in flight: PLB may move
 * the flow now.  If an ECE reduction is still in progress, PRR may have
 * left a window of one segment; make it min_cwnd_after_ce (at most 2) so
 * that a receiver delaying its ACKs gets two full segments and ACKs at
 * once -- but never more than the window before the reduction.
 */
static void dctcpf_tx_start(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct dctcpf *ca = inet_csk_ca(sk);
	u32 floor;

#ifdef DCTCPF_HAVE_PLB
	/*
	 * PLB prefers to move a flow while nothing is in flight, where the
	 * new path cannot reorder it: a flow congested for
	 * net.ipv4.tcp_plb_idle_rehash_rounds rounds is rehashed as its next
	 * flight starts, as in-tree dctcp does.
	 */
	tcp_plb_check_rehash(sk, &ca->plb);
#endif
	if (inet_csk(sk)->icsk_ca_state != TCP_CA_CWR || !ca->ece_cwr)
		return;
	floor = min3(READ_ONCE(min_cwnd_after_ce), tp->snd_cwnd_clamp,
		     ca->loss_cwnd);
	if (tcp_snd_cwnd(tp) >= floor)
		return;
	tcp_snd_cwnd_set(tp, floor);
	dctcpf_count(DCTCPF_STAT_FLOOR_APPLIED);
}

static void dctcpf_cwnd_event(struct sock *sk, enum tcp_ca_event ev)
{
	struct dctcpf *ca __maybe_unused = inet_csk_ca(sk);

	switch (ev) {
	case CA_EVENT_ECN_IS_CE:
		dctcpf_ce_seen(sk, true);
		break;
	case CA_EVENT_ECN_NO_CE:
		dctcpf_ce_seen(sk, false);
		break;
	case CA_EVENT_TX_START:	/* kernels without .cwnd_event_tx_start */
		dctcpf_tx_start(sk);
		break;
	case CA_EVENT_LOSS:
#ifdef DCTCPF_HAVE_PLB
		tcp_plb_update_state_upon_rto(sk, &ca->plb);
#endif
		dctcpf_loss(sk);
		break;
	default:
		break;
	}
}

static u32 dctcpf_undo_cwnd(struct sock *sk)
{
	const struct dctcpf *ca = inet_csk_ca(sk);

	return max(tcp_snd_cwnd(tcp_sk(sk)), ca->loss_cwnd);
}

/*
 * INET_DIAG_DCTCPINFO does not fit in the u8 extension mask of an
 * inet_diag_req, so ss asks for VEGASINFO and gets this record instead;
 * TCP_CC_INFO asks for everything.
 */
static size_t dctcpf_get_info(struct sock *sk, u32 ext, int *attr,
			      union tcp_cc_info *info)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	const struct dctcpf *ca = inet_csk_ca(sk);
	struct tcp_dctcp_info *di = &info->dctcp;

	BUILD_BUG_ON(sizeof("dctcpf-reno") > TCP_CA_NAME_MAX);
	if (!(ext & ((1 << (INET_DIAG_DCTCPINFO - 1)) |
		     (1 << (INET_DIAG_VEGASINFO - 1)))))
		return 0;

	memset(di, 0, sizeof(*di));
	if (READ_ONCE(inet_csk(sk)->icsk_ca_ops) != &dctcpf_reno) {
		di->dctcp_enabled = 1;
		di->dctcp_ce_state = ca->ce_run;
		di->dctcp_alpha = READ_ONCE(ca->alpha);
		di->dctcp_ab_ecn = tp->mss_cache *
				   (tp->delivered_ce - ca->win_delivered_ce);
		di->dctcp_ab_tot = tp->mss_cache *
				   (tp->delivered - ca->win_delivered);
	}
	*attr = INET_DIAG_DCTCPINFO;
	return sizeof(*di);
}

static struct tcp_congestion_ops dctcpf_ops __read_mostly = {
	.init		= dctcpf_init,
	.in_ack_event	= dctcpf_in_ack,
	.cwnd_event	= dctcpf_cwnd_event,
#ifdef DCTCPF_HAVE_TX_START_OP
	/* where it exists, CA_EVENT_TX_START reaches only this op */
	.cwnd_event_tx_start = dctcpf_tx_start,
#endif
	.ssthresh	= dctcpf_ssthresh,
	.cong_avoid	= tcp_reno_cong_avoid,
	.undo_cwnd	= dctcpf_undo_cwnd,
	.set_state	= dctcpf_set_state,
	.get_info	= dctcpf_get_info,
	.flags		= TCP_CONG_NEEDS_ECN,
	.owner		= THIS_MODULE,
	.name		= "dctcp_fixed",
};

/* Not registered: installed by dctcpf_init() on connections without ECN. */
static struct tcp_congestion_ops dctcpf_reno __read_mostly = {
	.ssthresh	= tcp_reno_ssthresh,
	.cong_avoid	= tcp_reno_cong_avoid,
	.undo_cwnd	= tcp_reno_undo_cwnd,
	.get_info	= dctcpf_get_info,
	.owner		= THIS_MODULE,
	/* TCP_CA_NAME_MAX (16) includes the NUL */
	.name		= "dctcpf-reno",
};

static int __init dctcpf_register(void)
{
	int err;

	dctcpf_kobj = kobject_create_and_add("tcp_dctcp_fixed", kernel_kobj);
	if (!dctcpf_kobj)
		return -ENOMEM;
	err = sysfs_create_group(dctcpf_kobj, &dctcpf_group);
	if (err)
		goto put;
	err = tcp_register_congestion_control(&dctcpf_ops);
	if (err) {
		pr_err("cannot register congestion control %s: %d\n",
		       dctcpf_ops.name, err);
		goto remove;
	}
	pr_info("version %s loaded; Protective Load Balancing (net.ipv4.tcp_plb_*): %s\n",
		TAILFIX_VERSION, DCTCPF_PLB);
#ifdef TCP_ECN_MODE_RFC3168
	pr_info("AccECN connections get the core's CE echo: the early ACKs on CE change are for RFC 3168 ECN only\n");
#endif
	return 0;

remove:
	sysfs_remove_group(dctcpf_kobj, &dctcpf_group);
put:
	kobject_put(dctcpf_kobj);
	return err;
}

static void __exit dctcpf_unregister(void)
{
	tcp_unregister_congestion_control(&dctcpf_ops);
	sysfs_remove_group(dctcpf_kobj, &dctcpf_group);
	kobject_put(dctcpf_kobj);
}

module_init(dctcpf_register);
module_exit(dctcpf_unregister);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("DCTCP (RFC 8257) with immediate ACKs on CE change and a post-ECE window floor");
MODULE_VERSION(TAILFIX_VERSION);
