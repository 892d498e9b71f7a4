/*
 * tsq_wakeup.pml - the TSQ wake-up handshake between tcp_push() and
 * tcp_wfree(), on CPUs whose stores may sit in a store buffer.
 *
 * tcp_push() (the "pusher", CPU 0) decides to autocork the tail skb, marks
 * the socket throttled, then looks at how many bytes are still below TCP:
 * if some are, it leaves the data queued and relies on their TX completion
 * to push it later.
 *
 *	set_bit(TSQ_THROTTLED, &sk->sk_tsq_flags);
 *	smp_mb__after_atomic();				<- BARRIER
 *	if (refcount_read(&sk->sk_wmem_alloc) > skb->truesize)
 *		return;					   corked
 *
 * tcp_wfree() (the "completer", CPU 1), the destructor of the skb that was
 * below TCP, gives its bytes back and then schedules the TSQ tasklet (the
 * wake-up that pushes the corked data) only if the socket is throttled.
 *
 *	refcount_sub_and_test(skb->truesize - 1, &sk->sk_wmem_alloc);
 *	oval = smp_load_acquire(&sk->sk_tsq_flags);	(6.12; READ_ONCE on 6.1)
 *	if (oval & TSQF_THROTTLED) -> clear it, schedule the tasklet
 *
 * This is the store-buffering (Dekker) shape: each side stores one location
 * and then loads the other.  If both loads can see the old values, the
 * pusher sees bytes still in flight and corks, the completer sees the socket
 * not throttled and does not wake it: the data waits for the peer's delayed
 * ACK (>= 40 ms) or an RTO.
 *
 * Memory model: each CPU has a store buffer.  A store goes into its CPU's
 * buffer and reaches memory at any later moment (a separate process per
 * buffer drains it nondeterministically); a load reads memory.  A load would
 * first look in its own CPU's buffer, but here no CPU loads a location it
 * stores, so that forwarding never matters and is left out.  A full barrier
 * waits until its CPU's buffer is empty.  One entry per buffer is enough:
 * each CPU makes one store.
 *
 * Knobs (spin -DNAME=VALUE):
 *   BARRIER=0|1	the smp_mb__after_atomic() in tcp_push().  set_bit() is a
 *			relaxed atomic on arm64, so without the barrier the
 *			store of THROTTLED can be passed by the load of
 *			sk_wmem_alloc.  (On x86 the locked set_bit is itself a
 *			full barrier, which is why x86 does not show the bug.)
 *   WFREE_ORDERED=0|1	whether tcp_wfree()'s store to sk_wmem_alloc is ordered
 *			before its load of sk_tsq_flags (default 1, the case
 *			the upstream fix reasons about).  x86 orders them (the
 *			RMW is locked).  refcount_sub_and_test() is only a
 *			release RMW: arm64 orders it before 6.12's
 *			smp_load_acquire() (release then acquire is RCsc
 *			there), but the kernel memory model does not, nor
 *			does arm64 before 6.1's plain READ_ONCE().  Setting it
 *			to 0 shows that the pusher's barrier alone does not
 *			close that window.
 *   VACUITY=1		assert instead that the pusher never corks: spin must
 *			find a cork, so the BARRIER=1 proof is not vacuous.
 *
 * Property: if the pusher corked, the completer scheduled the wake-up.  Both
 * values are final once both threads are done, so one assert checks it.
 * The case where THROTTLED was already set (tcp_push() skips the set_bit)
 * is left out: the flag then stays set until a completer sees it.
 */

#ifndef BARRIER
#define BARRIER 0
#endif
#ifndef WFREE_ORDERED
#define WFREE_ORDERED 1
#endif
#ifndef VACUITY
#define VACUITY 0
#endif

/* Memory. */
bit throttled = 0;	/* TSQ_THROTTLED in sk->sk_tsq_flags */
bit inflight = 1;	/* sk_wmem_alloc > truesize: an skb is below TCP */

/* Store buffers: one pending store each, to a fixed location. */
bit sb0_full = 0;	/* pusher: a store to throttled is pending */
bit sb0_val;
bit sb1_full = 0;	/* completer: a store to inflight is pending */
bit sb1_val;

/* What happened. */
bit corked = 0;		/* tcp_push() returned with the data queued */
bit woken = 0;		/* tcp_wfree() scheduled the TSQ tasklet */
bit pusher_done = 0;
bit completer_done = 0;

/* The hardware writing a buffered store back to memory, at any time. */
active proctype drain0()
{
end:	do
	:: atomic { sb0_full -> throttled = sb0_val; sb0_full = 0 }
	od
}

active proctype drain1()
{
end:	do
	:: atomic { sb1_full -> inflight = sb1_val; sb1_full = 0 }
	od
}

active proctype pusher()
{
	/* set_bit(TSQ_THROTTLED): into the store buffer */
	atomic { sb0_val = 1; sb0_full = 1 }
#if BARRIER
	/* smp_mb__after_atomic(): wait until the store is in memory */
	!sb0_full;
#endif
	/* refcount_read(&sk->sk_wmem_alloc) > skb->truesize */
	if
	:: inflight -> corked = 1;	/* leave it to the completion */
		printf("pusher: bytes below TCP, corked\n")
	:: else -> printf("pusher: nothing below TCP, pushes itself\n")
	fi;
	pusher_done = 1
}

active proctype completer()
{
	/* refcount_sub_and_test(): this skb's bytes leave sk_wmem_alloc */
	atomic { sb1_val = 0; sb1_full = 1 }
#if WFREE_ORDERED
	!sb1_full;
#endif
	/* smp_load_acquire(&sk->sk_tsq_flags) & TSQF_THROTTLED */
	if
	:: throttled -> woken = 1;	/* tasklet will push the socket */
		printf("completer: THROTTLED seen, wake-up scheduled\n")
	:: else ->			/* nobody waits, as far as it sees */
		printf("completer: THROTTLED not seen, no wake-up\n")
	fi;
	completer_done = 1
}

/* No lost wake-up: checked once both threads have finished. */
active proctype monitor()
{
	(pusher_done && completer_done);
#if VACUITY
	/* Sanity: a cork must still be reachable, or the proof is empty. */
	assert(!corked)
#else
	assert(!corked || woken)
#endif
}
