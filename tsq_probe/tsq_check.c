// SPDX-License-Identifier: GPL-2.0
/*
 * tsq_probe: a suspect socket is checked again under its lock, from a work
 * item, and pushed if it really is stalled (recovery), or left to the
 * task that owns it right now.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/hardirq.h>
#include <linux/irq_work.h>
#include <linux/rcupdate.h>
#include <linux/workqueue.h>
#include <net/sock.h>
#include <net/tcp.h>

#include "tsq_probe.h"

#define CHECK_SLOTS	64	/* sockets waiting for a check under lock */

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

void tsq_kick_check_work(void)
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
	tsq_kick_check_work();
}

/*
 * Queue sk for a check under its lock.  A task may own the socket right
 * now, most often a sendmsg() half-way through its own tcp_push(): a last
 * completion that lands after tcp_mark_push() and before the transmit sees
 * sendable data, nothing below and no flag, and the owner sends it a
 * moment later.  Nothing is decided here, then: the check's lock_sock()
 * waits for the owner's release_sock() and finds what it left.
 */
void tsq_suspect(struct sock *sk)
{
	suspect_in(check_slots, sk);
}

/*
 * Queue sk, whose last completion found TSQ_THROTTLED set, for a look once
 * that completion has returned (drain_check_slots()).
 */
void tsq_suspect_flagged(struct sock *sk)
{
	suspect_in(flag_slots, sk);
}

static void check_stalled(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	bool stalled, push = READ_ONCE(tsq_recover);
	u32 snd_nxt;

	lock_sock(sk);
	stat_inc(ST_WAKEUP_CHECKS);
	snd_nxt = tp->snd_nxt;
	stalled = tsq_sock_stalled(sk, push);
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
			tsq_cork_recovering(sk);
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
		if (check && tsq_stall_hint(sk, refcount_read(&sk->sk_wmem_alloc)))
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

static void check_work_fn(struct work_struct *work)
{
	tsq_fault_say();
	drain_check_slots(true);
}

int tsq_checks_start(void)
{
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
	return 0;
}

/* After the probes are gone: nothing may run or hold a socket. */
void tsq_checks_stop(bool check)
{
	irq_work_sync(&check_kick);
	cancel_work_sync(&check_work);
	/* Sockets still waiting: check them (with recover, push) or let go. */
	drain_check_slots(check);
	tsq_fault_say();
	destroy_workqueue(check_wq);
}
