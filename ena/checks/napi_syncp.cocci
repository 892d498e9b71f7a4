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
///    ena_unmask_interrupt(), which ena_up() calls too).
/// Writes of ->syncp by functions run only by NAPI are not reported: the
/// Rx ring's statistics and the Tx queue wake-up under the Tx queue lock
/// are written there.
//
// Confidence: High for the ENA driver it was written for.
// Options: --no-includes

@initialize:python@
@@
callers = {}
polls = set()
napi_writes = []
syncp_writes = []

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
@@
napi_writes.append((p[0].current_element, p[0].file, p[0].line))

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
@@
syncp_writes.append((p[0].current_element, p[0].file, p[0].line))

@finalize:python@
@@
for fn in sorted(polls):
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
for fn, fl, ln in sorted(set(syncp_writes)):
    if fn in polls:
        print("%s:%s: %s(): poll function writes the transmit path's syncp" %
              (fl, ln, fn))
    elif fn in poll_callees and fn not in napi_only:
        who = ", ".join(sorted(callers[fn] & polls))
        print("%s:%s: %s(): writes the transmit path's syncp, called by poll function %s and outside NAPI" %
              (fl, ln, fn, who))
