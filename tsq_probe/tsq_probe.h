/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tsq_probe: what its files share (tsq_main.c says which file does what).
 * Everything here is the module's own: names start with tsq_, except the
 * counters' and clocks' short helpers, which are static inline.
 */
#ifndef _TSQ_PROBE_H
#define _TSQ_PROBE_H

#include <linux/atomic.h>
#include <linux/hash.h>
#include <linux/percpu.h>
#include <linux/types.h>

struct kobj_attribute;
struct net_device;
struct notifier_block;
struct sk_buff;
struct sock;

#define HIST_BUCKETS	40	/* log2 of nanoseconds: up to ~550 s */
#define DEV_SLOT_BITS	8	/* per-device TX-completion histograms: 256 */
#define CORK_BITS	8	/* sockets with corked data */
#define PPM		1000000U

/* ---- parameters (tsq_stats.c) ------------------------------------------- */

/* fault_mode: what an injected fault does (see tsq_stats.c). */
enum { FAULT_FLAG, FAULT_COMPLETER, FAULT_NR };
/* xmit_attach, wfree_attach: how a hook attaches (see attach_cheapest()). */
enum { ATTACH_AUTO, ATTACH_TRACEPOINT, ATTACH_FTRACE, ATTACH_KPROBE, ATTACH_NR };

extern bool tsq_recover;
extern bool tsq_fault_inject;
extern int tsq_fault_mode;
extern unsigned int tsq_fault_ppm;
extern unsigned int tsq_late_cork_ms;
extern unsigned int tsq_txc_sample;
#define TSQ_TXC_SAMPLE_MAX	65536
extern int tsq_xmit_attach;
extern int tsq_wfree_attach;
extern const char *const tsq_fault_mode_names[FAULT_NR];
extern const char *const tsq_attach_names[ATTACH_NR];

bool tsq_fault_completer(void);
int tsq_params_check(void);

/* ---- statistics (tsq_stats.c) ------------------------------------------- */

enum tsq_stat {
	ST_AUTOCORK,		/* tcp_push() corked: flag newly set, nothing sent */
	ST_LOST_WAKEUPS,	/* stalled sockets confirmed under the socket lock */
	ST_RECOVERIES,		/* pushes done for a stalled socket */
	ST_RECOVERIES_IDLE,	/* ... of which sent nothing */
	ST_WAKEUP_CHECKS,	/* suspects checked under the lock */
	ST_CHECK_OVERFLOW,	/* suspects dropped: every check slot busy */
	ST_FAULTS_INJECTED,	/* completions made to miss TSQ_THROTTLED */
	ST_TXC_SAMPLES,		/* TX completions timed */
	ST_TXC_EVICTED,		/* stamps overwritten before their completion */
	ST_CORK_SAMPLES,	/* corks timed until their data left */
	ST_CORK_EVICTED,	/* cork clocks overwritten before the data left */
	ST_APP_HOLDS,		/* tcp_push() with MSG_MORE/TCP_NAGLE_CORK */
	ST_TXC_TASK,		/* TX completions in task context, BH enabled */
	ST_LATE_CORK,		/* corks released late with nothing below TCP */
	ST_TXC_SW_GSO,		/* skbs left untimed: software GSO segments them */
	ST_CORK_EXPIRED,	/* cork clocks restarted: stale, or a new socket */
	ST_DEV_SLOTS_FULL,	/* TX stamps without a device: every slot taken */
	ST_REARMED,		/* checks that left the push to a completion under way */
	ST_REPUSH_SKIPPED,	/* stalled again where the last push sent nothing */
	ST_TXC_STAMPS,		/* TCP skbs stamped on their way to a device */
	ST_TXC_UNSEEN,		/* ... in watch periods that timed no completion */
	ST_FLAGGED,		/* last completions that found the flag set: re-read after */
	ST_NR,
};

struct log2_hist {
	u64 bucket[HIST_BUCKETS];	/* bucket i: [2^i, 2^(i+1)) ns */
	u64 max_ns;
	u64 sum_ns;
};

/* The cork histograms (the device ones are in tsq_hist.c): */
#define HIST_CORK	0	/* autocork until the data left */
#define HIST_WAKE	1	/* could leave (last completion) until it left */
#define HIST_RECOVERY	2	/* ... for the corks tsq_probe pushed */
#define HIST_NR		3

/*
 * Everything a probe hit writes lives here, on its own CPU.  this_cpu_*()
 * operations are safe against an interrupt on the same CPU; readers sum
 * over CPUs and may see a hit half counted, never a torn value.
 */
struct tsq_pcpu {
	u64 stat[ST_NR];
	struct log2_hist hist[HIST_NR];	/* the cork histograms */
};

DECLARE_PER_CPU_ALIGNED(struct tsq_pcpu, tsq_pcpu);

static inline void stat_inc(enum tsq_stat s)
{
	this_cpu_inc(tsq_pcpu.stat[s]);
}

u64 tsq_stat_sum(enum tsq_stat s);
int tsq_sysfs_add(void);
void tsq_sysfs_remove(void);

/* ---- histograms (tsq_hist.c) -------------------------------------------- */

void tsq_hist_add(int h, u64 ns);
void tsq_hist_read(int h, struct log2_hist *out);
int tsq_dev_hist_get(const struct net_device *dev);
void tsq_dev_hist_add(int i, u64 ns);
int tsq_hists_alloc(void);
void tsq_hists_free(void);
void tsq_hists_reset(void);
u64 tsq_txc_max_ns(void);
int tsq_hist_proc_add(void);
void tsq_hist_proc_remove(void);
extern struct notifier_block tsq_netdev_nb;
extern struct kobj_attribute tsq_histograms_attr;

/* ---- clocks (tsq_clocks.c) ---------------------------------------------- */

/*
 * A table slot keyed by a pointer: its index and the tag that tells its
 * key (bits 63..48 of the slot's word; see tsq_clocks.c).
 */
#define SLOT_TAG_SHIFT	48
#define CORK_TIME_MASK	((1ULL << SLOT_TAG_SHIFT) - 1)

static inline u64 slot_hash(const void *key, unsigned int bits, unsigned int *idx)
{
	u64 h = (u64)(unsigned long)key * GOLDEN_RATIO_64;
	u64 tag = (h >> (64 - bits - 16)) & 0xffff;

	*idx = h >> (64 - bits);
	return (tag ? tag : 1) << SLOT_TAG_SHIFT;
}

extern atomic_t tsq_corks_open;

void tsq_txc_seed(void);
void tsq_txc_stamp(struct sk_buff *skb, struct net_device *dev);
void tsq_txc_complete(const struct sk_buff *skb);
void tsq_cork_start(const struct sock *sk, u32 seq);
void tsq_cork_stop(const struct sock *sk, u32 end_seq);
void tsq_cork_recovering(const struct sock *sk);
void tsq_cork_idle(const struct sock *sk);

/* ---- the stall predicate (tsq_stall.c) ---------------------------------- */

bool tsq_data_below(int wmem);
bool tsq_sendable_hint(const struct sock *sk);
bool tsq_stall_hint(const struct sock *sk, int below);
bool tsq_sock_stalled(struct sock *sk, bool rearm);

/* ---- checks under the socket lock, recovery (tsq_check.c) --------------- */

int tsq_checks_start(void);
void tsq_checks_stop(bool check);
void tsq_kick_check_work(void);
void tsq_suspect(struct sock *sk);
void tsq_suspect_flagged(struct sock *sk);

/* ---- hooks (tsq_hooks.c) ------------------------------------------------ */

int tsq_hooks_attach(void);
void tsq_hooks_detach(void);
unsigned long tsq_probes_missed_raw(void);
void tsq_fault_say(void);
void tsq_watch_start(void);
void tsq_watch_stop(void);

#endif /* _TSQ_PROBE_H */
