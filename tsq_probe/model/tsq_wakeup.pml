/*
 * tsq_wakeup.pml - the TSQ wake-up handshake between tcp_push() and
 * tcp_wfree(), with the stores of each CPU going through a store buffer.
 *
 * tcp_push() (the "pusher", CPU 0) decides to autocork the tail skb, marks
 * the socket throttled, then looks at how many bytes are still below TCP:
 * if some are, it leaves the data queued and relies on their TX completion
 * to push it later.  Both Debian 6.1.192 and 6.12.118 have:
 *
 *	set_bit(TSQ_THROTTLED, &sk->sk_tsq_flags);	relaxed RMW
 *	smp_mb__after_atomic();				<- BARRIER (7267e8dcad6b)
 *	if (refcount_read(&sk->sk_wmem_alloc) > skb->truesize)
 *		return;					   corked
 *
 * tcp_wfree() (the "completer", CPU 1), the destructor of the skb that was
 * below TCP, gives its bytes back and then schedules the TSQ tasklet (the
 * wake-up that pushes the corked data) only if the socket is throttled:
 *
 *	refcount_sub_and_test(skb->truesize - 1, &sk->sk_wmem_alloc);
 *		= atomic_fetch_sub_release(): a release RMW (arm64: LDADDL,
 *		  or LDXR/STLXR without LSE), no full barrier
 *	6.1:   oval = READ_ONCE(sk->sk_tsq_flags);		(arm64: LDR)
 *	6.12:  oval = smp_load_acquire(&sk->sk_tsq_flags);	(arm64: LDAR)
 *	if (oval & TSQF_THROTTLED) -> cmpxchg it away, schedule the tasklet
 *
 * This is the store-buffering (Dekker) shape: each side stores one location
 * and then loads the other.  If both loads can see the old values, the
 * pusher sees bytes still in flight and corks, the completer sees the socket
 * not throttled and does not wake it: the data waits for the peer's delayed
 * ACK (>= 40 ms) or an RTO.  (The ksoftirqd early exit of tcp_wfree() is left
 * out: it is taken only while more bytes are below TCP, whose completion
 * comes later and does the check.)
 *
 * Machine: each CPU has a store buffer.  A store goes into its CPU's buffer
 * and reaches memory at any later moment (a separate process per buffer
 * drains it nondeterministically); a load reads memory.  A load would first
 * look in its own CPU's buffer, but here no CPU loads a location it stores,
 * so that forwarding never matters and is left out.  An instruction that
 * orders the store before the later load is modelled as waiting until the
 * buffer is empty.  One entry per buffer is enough: each CPU makes one store.
 *
 * Which instructions order "store, then load of another location" depends on
 * the memory model (MM):
 *
 *   MM_X86	every locked RMW is a full barrier: set_bit() and the refcount
 *		RMW never leave a store buffered.  smp_mb__after_atomic() is a
 *		compiler barrier only.
 *   MM_ARM64	set_bit() is relaxed; smp_mb__after_atomic() is DMB ISH (full).
 *		A load-acquire (LDAR) is ordered after an earlier store-release
 *		in program order, including the release write of LDADDL/STLXR
 *		(ARMv8 release/acquire are RCsc); a plain LDR is not.
 *   MM_LKMM	the Linux-kernel memory model (tools/memory-model): only a
 *		strong fence orders a store before a later load of another
 *		location.  smp_mb__after_atomic() after an RMW is one;
 *		release-then-acquire is not (po-rel and acq-po only order
 *		towards the release and away from the acquire; the SB shape is
 *		forbidden by the "propagation" axiom only with a strong fence
 *		on both sides, as SB+fencembonceonces.litmus says).  So under
 *		LKMM 6.12's smp_load_acquire() is NOT enough: what closes the
 *		window on arm64 is the RCsc property of LDAR, which LKMM does
 *		not promise and which powerpc (lwsync) and riscv (fence-based
 *		acquire) do not provide.
 *
 * Knobs (spin -DNAME=VALUE):
 *   BARRIER=0|1	the smp_mb__after_atomic() in tcp_push() (patch 0001).
 *   COMPLETER=C61|C612|CMB
 *			C61:  6.1.y tcp_wfree(), READ_ONCE() of the flags;
 *			C612: smp_load_acquire() (6.12, mainline since
 *			      b548b17a93fd; 6.1.y with patch 0002);
 *			CMB:  READ_ONCE() with smp_mb__after_atomic() after
 *			      the refcount RMW (what LKMM would need).
 *   MM=MM_ARM64|MM_LKMM|MM_X86	the memory model, default MM_ARM64.
 *   VACUITY=1		assert instead that the pusher never corks: spin must
 *			find a cork, so a "no loss" proof is not vacuous.
 *
 * Property: if the pusher corked, the completer scheduled the wake-up.  Both
 * values are final once both threads are done, so one assert checks it.
 * The case where THROTTLED was already set (tcp_push() skips the set_bit)
 * is left out: the flag then stays set until a completer sees it.
 */

#define C61		1
#define C612		2
#define CMB		3

#define MM_ARM64	1
#define MM_LKMM		2
#define MM_X86		3

#ifndef BARRIER
#define BARRIER 0
#endif
#ifndef COMPLETER
#define COMPLETER C61
#endif
#ifndef MM
#define MM MM_ARM64
#endif
#ifndef VACUITY
#define VACUITY 0
#endif

#if COMPLETER != C61 && COMPLETER != C612 && COMPLETER != CMB
#error "COMPLETER must be C61, C612 or CMB"
#endif
#if MM != MM_ARM64 && MM != MM_LKMM && MM != MM_X86
#error "MM must be MM_ARM64, MM_LKMM or MM_X86"
#endif

/* Does the completer's load wait for its own release store to be visible? */
#if MM == MM_X86 || COMPLETER == CMB
#define WFREE_ORDERED 1
#elif COMPLETER == C612 && MM == MM_ARM64
#define WFREE_ORDERED 1
#else
#define WFREE_ORDERED 0
#endif

/* Is the pusher's store visible before its load? */
#if MM == MM_X86 || BARRIER
#define PUSH_ORDERED 1
#else
#define PUSH_ORDERED 0
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
#if PUSH_ORDERED
	/* smp_mb__after_atomic() (or x86's locked RMW): wait for the store */
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
	/* x86 locked RMW, arm64 LDAR after the release, or a full barrier */
	!sb1_full;
#endif
	/* READ_ONCE() or smp_load_acquire() of sk_tsq_flags, & THROTTLED */
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
