// SPDX-License-Identifier: GPL-2.0
/*
 * tsq_probe: the stall predicate.  Is a socket holding data TCP would send
 * now, with nothing left that will make it send it?  The one part of the
 * module that must follow each kernel's tcp_output.c: what tcp_write_xmit()
 * sends and what holds it back (cwnd, the peer's window, Nagle, TSO
 * deferral, pacing, TCP_CORK, MSG_MORE), and what tcp_wfree() counts as a
 * completion that wakes TSQ.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/hrtimer.h>
#include <linux/ktime.h>
#include <linux/skbuff.h>
#include <linux/tcp.h>
#include <net/sock.h>
#include <net/tcp.h>

#include "tsq_probe.h"

/* tcp_snd_cwnd() is 5.19 (the Kbuild looks for it); 5.10 has the field. */
#ifndef TSQ_HAVE_SND_CWND
static inline u32 tcp_snd_cwnd(const struct tcp_sock *tp)
{
	return tp->snd_cwnd;
}
#endif

/*
 * Will a TX completion that wakes TSQ still come, going by wmem, a value of
 * sk_wmem_alloc?  It holds one unit for the socket itself and the truesize
 * of every skb below TCP.  A pure ACK is charged 2 (skb_set_tcp_pure_ack())
 * and freed by __sock_wfree(), which never looks at TSQ; an skb tcp_wfree()
 * frees is charged at least SKB_TRUESIZE(1).  So, as 6.12's tcp_wfree()
 * itself judges it, a charge below SKB_TRUESIZE(1) is only pure ACKs:
 * nothing to wake the socket.
 */
bool tsq_data_below(int wmem)
{
	return wmem >= (int)SKB_TRUESIZE(1);
}

/*
 * The scalar part of the hint: unsent data that the application released
 * and that pacing, cwnd, the peer's window, Nagle and TSO deferral all let
 * go now.  Lockless, socket scalars only.
 */
bool tsq_sendable_hint(const struct sock *sk)
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
 * tsq_stall_hint() runs without the socket lock (probe handlers): it reads
 * socket scalars only, never the write queue, whose skbs the owner may free
 * at any moment.  @below is sk_wmem_alloc as it will be once the caller's
 * event is over (see tsq_data_below()).
 */
bool tsq_stall_hint(const struct sock *sk, int below)
{
	unsigned long tsq = READ_ONCE(sk->sk_tsq_flags);

	if (tsq_data_below(below) || (tsq & (TSQF_QUEUED | TCPF_TSQ_DEFERRED)))
		return false;
	return tsq_sendable_hint(sk);
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
bool tsq_sock_stalled(struct sock *sk, bool rearm)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	const struct sk_buff *skb;

	sock_owned_by_me(sk);
	if (READ_ONCE(sk->sk_tsq_flags) & (TSQF_QUEUED | TCPF_TSQ_DEFERRED) ||
	    !tsq_sendable_hint(sk))
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
	if (!tsq_data_below(refcount_read(&sk->sk_wmem_alloc)))
		return true;
	if (!rearm || test_and_set_bit(TSQ_THROTTLED, &sk->sk_tsq_flags))
		return false;
	/* The flag before the re-read: pairs with tcp_wfree() (see above). */
	smp_mb__after_atomic();
	if (tsq_data_below(refcount_read(&sk->sk_wmem_alloc))) {
		stat_inc(ST_REARMED);
		return false;
	}
	clear_bit(TSQ_THROTTLED, &sk->sk_tsq_flags);
	return true;
}
