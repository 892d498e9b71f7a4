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
 * This module hooks three places:
 *   tcp_push() (kretprobe) counts autocork events, starts the cork-hold
 *                        clock and re-checks the handshake after a full
 *                        barrier;
 *   __dev_queue_xmit()   (tracepoint net_dev_queue, else a kprobe) stamps
 *                        TCP skbs handed to a device and stops the
 *                        cork-hold clock when the corked bytes leave;
 *   tcp_wfree()          (ftrace, else a kprobe; a kretprobe with
 *                        fault_mode=completer) measures TX-completion
 *                        latency per device, injects missed flags on
 *                        request, and re-checks the handshake after a full
 *                        barrier.
 * A socket that may have lost its wake-up is checked again under its lock
 * from a work item; if it really is stalled (unsent data TCP may send now,
 * nothing below TCP, no push pending, nothing else that will send it) it is
 * counted and, with recover=1, pushed through tcp_release_cb() exactly as
 * the TSQ tasklet would have.
 *
 * Contexts.  Handlers never sleep and never take the socket lock.
 *   push_entry/push_return: task context, the socket owned by the caller
 *	(tcp_sendmsg()/do_tcp_sendpages() under lock_sock()), BH enabled.
 *   xmit_hit: from the tracepoint always with BH disabled (the function
 *	takes rcu_read_lock_bh() before it); from the kprobe also in task
 *	context with BH enabled (the function's entry), softirq (forwarding,
 *	TSQ tasklet, timers), or task context with BH disabled (release_sock(),
 *	veth).
 *   wfree_hit: softirq (NAPI TX completion, the usual case), hardirq
 *	(drivers freeing in their IRQ handler), task context with BH disabled
 *	(veth, release_sock()) and task context with BH *enabled*: an skb
 *	dropped inside tcp_sendmsg() (no route, LOCAL_OUT drop).
 * On architectures without kprobes-on-ftrace the kprobe handlers run from a
 * breakpoint exception, which the kernel accounts as NMI (in_nmi()); the
 * ftrace callback runs in its caller's context.
 * Where a handler may run decides what it may do: a handler only queues
 * a suspect (tsq_suspect() and tsq_kick_check_work() in tsq_check.c); the
 * work item decides, under the socket lock.
 *
 * Everything is exported in /sys/kernel/tsq_probe/ (stats, histograms,
 * reset); see tsq_probe/README.md for the meaning of every key.
 *
 * The files, by concern (tsq_probe.h is what they share), this one loads
 * and unloads the module:
 *   tsq_stats.c   parameters, per-CPU counters, /sys/kernel/tsq_probe/;
 *   tsq_hist.c    latency histograms, one per device and three for corks;
 *   tsq_clocks.c  the lock-free per-skb and per-socket clocks;
 *   tsq_stall.c   the stall predicate: the one part that must follow each
 *                 kernel's tcp_output.c (tcp_write_xmit() and tcp_wfree());
 *   tsq_check.c   checks under the socket lock, and recovery;
 *   tsq_hooks.c   the hooks on tcp_push(), __dev_queue_xmit() and
 *                 tcp_wfree(), fault injection, and the watch on them.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/netdevice.h>

#include "tsq_probe.h"

#ifndef TAILFIX_VERSION
#define TAILFIX_VERSION "unknown"
#endif

static int __init tsq_probe_init(void)
{
	int ret;

	ret = tsq_params_check();
	if (ret)
		return ret;
	tsq_txc_seed();
	ret = tsq_hists_alloc();
	if (ret)
		return ret;
	ret = tsq_checks_start();
	if (ret)
		goto err_hists;

	ret = register_netdevice_notifier(&tsq_netdev_nb);
	if (ret) {
		pr_err("refusing to load: cannot register a netdevice notifier (%d)\n", ret);
		goto err_checks;
	}
	ret = tsq_hooks_attach();
	if (ret)
		goto err_notifier;
	ret = tsq_sysfs_add();
	if (ret)
		goto err_hooks;
	tsq_watch_start();
	pr_info("version %s loaded: recover=%d fault_inject=%d fault_mode=%s fault_ppm=%u txc_sample=%u xmit_attach=%s wfree_attach=%s%s\n",
		TAILFIX_VERSION, tsq_recover, tsq_fault_inject,
		tsq_fault_mode_names[tsq_fault_mode], tsq_fault_ppm, tsq_txc_sample,
		tsq_attach_names[tsq_xmit_attach], tsq_attach_names[tsq_wfree_attach],
		tsq_fault_completer() ? " (a kretprobe: fault_mode=completer)" : "");
	return 0;

err_hooks:
	tsq_hooks_detach();
err_notifier:
	unregister_netdevice_notifier(&tsq_netdev_nb);
err_checks:
	/* The probes are gone: undo what their handlers queued. */
	tsq_checks_stop(false);
err_hists:
	tsq_hists_free();
	return ret;
}

static void __exit tsq_probe_exit(void)
{
	tsq_watch_stop();
	tsq_sysfs_remove();
	/* After this no handler runs and none will queue a check. */
	tsq_hooks_detach();
	unregister_netdevice_notifier(&tsq_netdev_nb);
	tsq_checks_stop(true);
	tsq_hists_free();
	pr_info("unloaded: %llu lost wake-ups, %llu recoveries\n",
		tsq_stat_sum(ST_LOST_WAKEUPS), tsq_stat_sum(ST_RECOVERIES));
}

module_init(tsq_probe_init);
module_exit(tsq_probe_exit);

MODULE_DESCRIPTION("Measure, detect and recover TCP small queue lost wake-ups");
MODULE_AUTHOR("ena-tcp-tailfix developers");
MODULE_LICENSE("GPL");
MODULE_VERSION(TAILFIX_VERSION);
