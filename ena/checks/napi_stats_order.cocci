// SPDX-License-Identifier: GPL-2.0
/// No statistics update after napi_complete_done() in a poll function.
///
/// Once napi_complete_done() has run, the poller no longer owns the NAPI
/// instance: the next poll of the same ring may already run on another CPU
/// (interrupt or busy polling) and write the same counters under the same
/// u64_stats_sync.  Every counter must be written before.
///
/// A statistics update is: u64_stats_update_begin(), ena_increase_stat(),
/// a write to a field of ->tx_stats or ->rx_stats, or a call of a function
/// that does one of these (found in the same input, so give the checker
/// the driver's files as one unit).
//
// Confidence: High for the ENA driver it was written for.
// Options: --no-includes

// The functions that update statistics are collected by position (the
// enclosing function of each match): a rule matching "f(...) { <+...
// update ...+> }" over every function found the same set, ten times
// slower (23 s against 2 s on amzn-drivers 2.17 resolved for 6.1).
@initialize:python@
@@
updaters = set()

@updater@
expression E, V;
identifier fld;
position p;
@@
(
  u64_stats_update_begin@p(...)
|
  ena_increase_stat@p(...)
|
  E->\(tx_stats\|rx_stats\).fld@p = V
|
  E->\(tx_stats\|rx_stats\).fld@p += V
|
  E->\(tx_stats\|rx_stats\).fld@p++
|
  WRITE_ONCE@p(E->\(tx_stats\|rx_stats\).fld, V)
)

@script:python@
p << updater.p;
@@
updaters.add(p[0].current_element)

@poller@
identifier fn;
@@
fn(...)
{
  <+... napi_complete_done(...) ...+>
}

@script:python@
fn << poller.fn;
@@
print("checked: %s()" % fn)

@late exists@
identifier poller.fn;
identifier f : script:python () { f in updaters };
expression E, V;
identifier fld;
position p1, p2;
@@
fn(...)
{
  ... when any
  napi_complete_done@p1(...)
  ... when any
(
  u64_stats_update_begin@p2(...)
|
  ena_increase_stat@p2(...)
|
  f@p2(...)
|
  E->\(tx_stats\|rx_stats\).fld@p2 = V
|
  E->\(tx_stats\|rx_stats\).fld@p2 += V
|
  E->\(tx_stats\|rx_stats\).fld@p2++
|
  WRITE_ONCE@p2(E->\(tx_stats\|rx_stats\).fld, V)
)
  ... when any
}

@script:python@
p1 << late.p1;
p2 << late.p2;
fn << poller.fn;
@@
print("%s:%s: %s(): statistics updated after napi_complete_done() at line %s" %
      (p2[0].file, p2[0].line, fn, p1[0].line))
