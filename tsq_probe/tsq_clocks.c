// SPDX-License-Identifier: GPL-2.0
/*
 * tsq_probe: the clocks, lock-free: TX-completion latency per skb, cork
 * hold and wake-up delay per socket.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/netdevice.h>
#include <linux/random.h>
#include <linux/skbuff.h>
#include <net/sock.h>
#include <net/tcp.h>

#include "tsq_probe.h"

/*
 * A stamp waits for its completion in a slot of a shared table: the skb is
 * stamped on the CPU that transmits it and completed on the CPU that frees
 * it, so a per-CPU table could not match them.  Each slot is one 64-bit
 * word, written with plain stores and taken with one cmpxchg, so stamp and
 * completion never lock and never see a torn entry:
 *
 *	bits 63..48  tag: 16 more bits of the key's hash (never 0)
 *	bits 47..39  device histogram + 1 (0: none)		[txc only]
 *	bits 38..0   ktime_get_ns() modulo 2^39 (549 s)	[txc]
 *	bits 47..0   ktime_get_ns() modulo 2^48 (78 hours)	[cork]
 *
 * Keys (skb and socket pointers) are hashed, never dereferenced.  A newer
 * stamp in the same slot evicts an older one (counted).  Two live keys with
 * the same slot and the same tag (one pair in 65535 among colliding keys)
 * can take each other's stamp: one histogram sample is off, nothing else.
 */
#define TXC_BITS	12	/* skbs waiting for their completion */
/* DEV_SLOT_BITS + 1 bits: every slot + 1, and 0 for none. */
#define TXC_DEV_SHIFT	(SLOT_TAG_SHIFT - DEV_SLOT_BITS - 1)
#define TXC_DEV_MASK	((1U << (DEV_SLOT_BITS + 1)) - 1)
#define TXC_TIME_MASK	((1ULL << TXC_DEV_SHIFT) - 1)

static u64 txc_table[1 << TXC_BITS];

struct cork_slot {
	u64 key;	/* tag | time corked, 0: free */
	u64 idle_ns;	/* since when nothing is below TCP, data sendable; 0: not */
	u32 seq;	/* write_seq when corked: the data leaves once sent */
	u32 recovered;	/* tsq_probe pushed it (a lost wake-up recovered) */
};

static struct cork_slot cork_table[1 << CORK_BITS];
atomic_t tsq_corks_open;

/*
 * The same skb a second time within this long is a stacked device (bridge,
 * vlan, bond, tunnel over veth...) passing it down: its clock keeps running
 * from the upper device, and the lower one, which completes it, owns it.
 */
#define TXC_RESTACK_NS	NSEC_PER_SEC

/*
 * Which skbs get a clock: one in txc_sample, drawn from a per-CPU xorshift
 * generator, a few instructions per skb.  Not a counter: with two flows
 * taking turns on a CPU (request and response) every N-th skb would always
 * be the same flow's.  An interrupt on the same CPU may reuse a draw: one
 * skb more or less is timed, nothing else.
 */
static DEFINE_PER_CPU(u64, txc_rnd);

void tsq_txc_seed(void)
{
	int cpu;

	for_each_possible_cpu(cpu)
		per_cpu(txc_rnd, cpu) = get_random_u64() | 1;
}

static bool txc_draw(void)
{
	u32 n = READ_ONCE(tsq_txc_sample);
	u64 x;

	if (n <= 1)
		return true;
	x = this_cpu_read(txc_rnd);
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	this_cpu_write(txc_rnd, x);
	/* (x >> 32) * n / 2^32 is uniform over 0..n-1. */
	return !(((x >> 32) * n) >> 32);
}

void tsq_txc_stamp(struct sk_buff *skb, struct net_device *dev)
{
	unsigned int idx;
	u64 tag = slot_hash(skb, TXC_BITS, &idx);
	u64 old = READ_ONCE(txc_table[idx]);
	bool same = old && (old & ~((1ULL << SLOT_TAG_SHIFT) - 1)) == tag;
	u64 t;
	int dh;

	/*
	 * A lower device of a stack finds the upper one's stamp (same) and
	 * carries it on.  An skb not drawn at its upper device is drawn again
	 * at the lower one, and then timed from there: stacked devices' skbs
	 * are timed a little more often, never twice.
	 */
	if (!same && !txc_draw())
		return;
	t = ktime_get_ns() & TXC_TIME_MASK;

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
	dh = tsq_dev_hist_get(dev);
	WRITE_ONCE(txc_table[idx], tag | ((u64)(dh + 1) << TXC_DEV_SHIFT) | t);
	stat_inc(ST_TXC_STAMPS);
}

void tsq_txc_complete(const struct sk_buff *skb)
{
	unsigned int idx;
	u64 tag = slot_hash(skb, TXC_BITS, &idx);
	u64 w = READ_ONCE(txc_table[idx]);
	int dh;

	if ((w & ~((1ULL << SLOT_TAG_SHIFT) - 1)) != tag ||
	    cmpxchg(&txc_table[idx], w, 0) != w)
		return;
	stat_inc(ST_TXC_SAMPLES);
	dh = (int)((w >> TXC_DEV_SHIFT) & TXC_DEV_MASK) - 1;
	if (dh >= 0)
		tsq_dev_hist_add(dh, (ktime_get_ns() - w) & TXC_TIME_MASK);
}

#define CORK_EXPIRE_NS	(10 * NSEC_PER_SEC)

/* tcp_push() return (the socket owned by the caller) corked up to seq. */
void tsq_cork_start(const struct sock *sk, u32 seq)
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
	/* seq and idle_ns first: tsq_cork_stop() reads them after the key. */
	smp_wmb();
	old = xchg(&s->key, tag | (now & CORK_TIME_MASK));
	if (!old)
		atomic_inc(&tsq_corks_open);
	else if ((old & ~CORK_TIME_MASK) != tag)
		stat_inc(ST_CORK_EVICTED);
}

/* A segment of sk ending at end_seq goes to a device: stop its cork clock. */
void tsq_cork_stop(const struct sock *sk, u32 end_seq)
{
	unsigned int idx;
	u64 tag = slot_hash(sk, CORK_BITS, &idx);
	struct cork_slot *s = &cork_table[idx];
	u64 w = READ_ONCE(s->key);
	u64 idle, now, wait;
	u32 recovered;

	if (!w || (w & ~CORK_TIME_MASK) != tag)
		return;
	/* The key before the seq: pairs with smp_wmb() in tsq_cork_start(). */
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
	atomic_dec(&tsq_corks_open);
	now = ktime_get_ns();
	stat_inc(ST_CORK_SAMPLES);
	tsq_hist_add(HIST_CORK, (now - w) & CORK_TIME_MASK);
	/*
	 * The backstop: the data could have left when the last completion
	 * emptied the socket, and did not for late_cork_ms.  Whatever lost the
	 * wake-up (a missed TSQ_THROTTLED, a race this module does not know),
	 * something else -- most often the peer's delayed ACK -- released it.
	 */
	if (!idle)
		return;
	wait = now - idle;
	tsq_hist_add(HIST_WAKE, wait);
	if (recovered)
		tsq_hist_add(HIST_RECOVERY, wait);
	if (wait >= (u64)READ_ONCE(tsq_late_cork_ms) * NSEC_PER_MSEC)
		stat_inc(ST_LATE_CORK);
}

/*
 * tsq_probe is about to push sk's corked data (a lost wake-up recovered):
 * its release counts in the recovery-delay histogram.
 */
void tsq_cork_recovering(const struct sock *sk)
{
	unsigned int idx;
	u64 tag = slot_hash(sk, CORK_BITS, &idx);
	struct cork_slot *s = &cork_table[idx];
	u64 w = READ_ONCE(s->key);

	if (w && (w & ~CORK_TIME_MASK) == tag)
		WRITE_ONCE(s->recovered, 1);
}

/*
 * A completion of sk left nothing below TCP: if it is corked and its data
 * could go now, start the clock tsq_cork_stop() judges (the first such moment
 * of the cork; a later one does not move it).
 */
void tsq_cork_idle(const struct sock *sk)
{
	unsigned int idx;
	u64 tag = slot_hash(sk, CORK_BITS, &idx);
	struct cork_slot *s = &cork_table[idx];
	u64 w = READ_ONCE(s->key);

	if (!w || (w & ~CORK_TIME_MASK) != tag || READ_ONCE(s->idle_ns) ||
	    !tsq_sendable_hint(sk))
		return;
	WRITE_ONCE(s->idle_ns, ktime_get_ns() | 1);
}
