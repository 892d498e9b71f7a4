// SPDX-License-Identifier: GPL-2.0
/// One writer per u64_stats_sync on a Tx ring: the transmit path writes
/// ->syncp (under the Tx queue lock or xdp_tx_lock), the ring's NAPI poll
/// writes ->napi_syncp.
///
/// A poll function is one that calls napi_complete_done().  A function is
/// run only by NAPI when it is a poll function, or when it has callers in
/// the input and every one of them is run only by NAPI (functions called
/// through pointers have no callers here, so they never qualify unless
/// they are poll functions).  Reported:
///  - a write of ->napi_syncp (u64_stats_update_begin(&E->napi_syncp),
///    ena_increase_stat(..., &E->napi_syncp)) in a function that is not
///    run only by NAPI: a second writer, e.g. the transmit path or
///    ena_up();
///  - a write of ->syncp in a poll function, or in a function that a
///    poll function calls and that is not run only by NAPI (such as
///    ena_unmask_interrupt(), which ena_up() calls too);
///  - a write of a ring's ->syncp or ->napi_syncp (any but adapter->syncp,
///    which this check is not about) in a function the timer service
///    reaches (the callback given to timer_setup() and every function it
///    calls, directly or not): the timer runs beside the transmit path and
///    NAPI, and writes under a u64_stats_sync of its own (timer_syncp).
/// Writes of ->syncp by functions run only by NAPI are not reported: the
/// Rx ring's statistics and the Tx queue wake-up under the Tx queue lock
/// are written there; nor are writes of rx_ring->syncp in a poll function
/// (amzn-drivers counts busy-poll invocations there): NAPI is the Rx
/// ring's writer.
//
// Confidence: High for the ENA driver it was written for.
// Options: --no-includes

@initialize:python@
@@
callers = {}
polls = set()
napi_writes = []
syncp_writes = []
timer_roots = set()
ring_writes = set()

@poller@
position p;
@@
napi_complete_done@p(...)

@script:python@
p << poller.p;
@@
polls.add(p[0].current_element)

@call@
identifier callee;
position p;
@@
callee@p(...)

@script:python@
callee << call.callee;
p << call.p;
@@
callers.setdefault(callee, set()).add(p[0].current_element)

@timer@
expression T, F;
identifier fn;
@@
timer_setup(T, fn, F)

@script:python@
fn << timer.fn;
@@
timer_roots.add(fn)

@nw@
expression E;
position p;
@@
(
u64_stats_update_begin@p(&E->napi_syncp)
|
ena_increase_stat@p(..., &E->napi_syncp)
)

@script:python@
p << nw.p;
e << nw.E;
@@
napi_writes.append((p[0].current_element, p[0].file, p[0].line))
if e.strip() != "adapter":
    ring_writes.add((p[0].current_element, p[0].file, p[0].line))

@sw@
expression E;
position p;
@@
(
u64_stats_update_begin@p(&E->syncp)
|
ena_increase_stat@p(..., &E->syncp)
)

@script:python@
p << sw.p;
e << sw.E;
@@
syncp_writes.append((p[0].current_element, p[0].file, p[0].line, e.strip()))
if e.strip() != "adapter":
    ring_writes.add((p[0].current_element, p[0].file, p[0].line))

@finalize:python@
@@
for fn in sorted(polls | timer_roots):
    print("checked: %s()" % fn)

napi_only = set(polls)
changed = True
while changed:
    changed = False
    for f, cs in callers.items():
        if f not in napi_only and cs and cs <= napi_only:
            napi_only.add(f)
            changed = True

for fn, fl, ln in sorted(set(napi_writes)):
    if fn not in napi_only:
        who = ", ".join(sorted(callers.get(fn, ()))) or "none: called through a pointer"
        print("%s:%s: %s(): writes napi_syncp but is not run only by NAPI (callers: %s)" %
              (fl, ln, fn, who))

poll_callees = set(c for c, cs in callers.items() if cs & polls)
for fn, fl, ln, e in sorted(set(syncp_writes)):
    if fn in polls and e == "rx_ring":
        continue
    if fn in polls:
        print("%s:%s: %s(): poll function writes the transmit path's syncp" %
              (fl, ln, fn))
    elif fn in poll_callees and fn not in napi_only:
        who = ", ".join(sorted(callers[fn] & polls))
        print("%s:%s: %s(): writes the transmit path's syncp, called by poll function %s and outside NAPI" %
              (fl, ln, fn, who))

callees = {}
for f, cs in callers.items():
    for c in cs:
        callees.setdefault(c, set()).add(f)
by_timer = set(timer_roots)
todo = list(timer_roots)
while todo:
    f = todo.pop()
    for c in callees.get(f, ()):
        if c not in by_timer:
            by_timer.add(c)
            todo.append(c)
for fn, fl, ln in sorted(ring_writes):
    if fn in by_timer:
        print("%s:%s: %s(): reached by the timer service (%s) and writes a u64_stats_sync of the transmit path or NAPI" %
              (fl, ln, fn, ", ".join(sorted(timer_roots))))
