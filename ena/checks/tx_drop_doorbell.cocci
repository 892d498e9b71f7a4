// SPDX-License-Identifier: GPL-2.0
/// A transmit function (one returning netdev_tx_t) that drops a packet
/// must make the same doorbell decision as when it sends one: descriptors
/// queued earlier with xmit_more wait for the doorbell of the packet that
/// ends the batch, and a dropped packet that ends it must ring for them.
///
/// What is checked, for every such function:
///  - a doorbell function is one that writes the doorbell register
///    (ena_com_write_sq_doorbell(), amzn-drivers'
///    ena_com_write_tx_sq_doorbell()) on every path through it, early
///    returns included ("when strict"): a helper that returns at once, or
///    on some path, or does not write it, is not one;
///  - the success path has the decision "if (C) doorbell()" where C
///    mentions netdev_xmit_more(); a function without one is reported;
///  - a function that frees no skb is reported (its drop path was not
///    seen: a free this check does not know would pass it vacuously);
///  - every path that frees the skb (dev_kfree_skb*(),
///    dev_consume_skb_any(), napi_consume_skb()) and returns goes through "if (E) { ...
///    doorbell(); ... }" where E is C itself or "X && (C)" / "(C) && X"
///    (X: e.g. "descriptors are pending"), or "!netdev_xmit_more() && X"
///    / "X && !netdev_xmit_more()" (Amazon's variant in amzn-drivers:
///    ring when the dropped packet ends the batch and descriptors are
///    pending; the success path already rang when it stopped the queue),
///    before the free (as amzn-drivers has it) or after it (as the
///    kernel's driver with this package's patch has it).  X, "descriptors
///    are pending", is one of the two forms that say it: the ring's
///    doorbell_pending flag (this package's patch) or
///    ena_com_used_q_entries() (amzn-drivers); any other X (a constant, an
///    unrelated test) does not count;
///  - the doorbell_pending flag is set by a function after it queues
///    descriptors (ena_com_prepare_tx()), and the transmit function never
///    clears it itself.
//
// Confidence: High for the ENA driver it was written for.
// Options: --no-includes

@initialize:python@
@@
import re

def norm(s):
    return re.sub(r'\s+', '', s)

decisions = {}
xmits = set()
drops = set()
pending_readers = set()
pending_setters = set()

@dbfn@
identifier db;
@@
db(...)
{
  ... when strict
(
  ena_com_write_sq_doorbell(...);
|
  ena_com_write_tx_sq_doorbell(...);
)
  ...
}

@checked_skb@
typedef netdev_tx_t;
identifier xmit;
@@
netdev_tx_t xmit(...) { ... }

@script:python@
xmit << checked_skb.xmit;
@@
xmits.add(xmit)
print("checked: %s()" % xmit)

@frees exists@
identifier checked_skb.xmit;
expression skb;
@@
netdev_tx_t xmit(...)
{
  ... when any
(
  dev_kfree_skb(skb);
|
  dev_kfree_skb_any(skb);
|
  dev_consume_skb_any(skb);
|
  napi_consume_skb(skb, ...);
)
  ... when any
}

@script:python depends on frees@
xmit << checked_skb.xmit;
@@
drops.add(xmit)

@success exists@
identifier checked_skb.xmit;
identifier dbfn.db;
expression C;
@@
netdev_tx_t xmit(...)
{
  ... when any
(
  if (C) { ... db(...); ... }
|
  if (C) db(...);
)
  ... when any
}

@script:python@
xmit << checked_skb.xmit;
c << success.C;
@@
if 'netdev_xmit_more' in c:
    decisions.setdefault(xmit, set()).add(norm(c))
else:
    cocci.include_match(False)

@skb_drop exists@
identifier checked_skb.xmit;
identifier dbfn.db;
expression success.C;
expression skb, E;
position p;
@@
netdev_tx_t xmit(...)
{
  ...
      when != if (C) { ... db(...); ... }
      when != if (E->doorbell_pending && C) { ... db(...); ... }
      when != if (E->doorbell_pending && (C)) { ... db(...); ... }
      when != if (C && E->doorbell_pending) { ... db(...); ... }
      when != if ((C) && E->doorbell_pending) { ... db(...); ... }
      when != if (!netdev_xmit_more() && ena_com_used_q_entries(...)) { ... db(...); ... }
      when != if (ena_com_used_q_entries(...) && !netdev_xmit_more()) { ... db(...); ... }
      when != if (!netdev_xmit_more() && ena_com_used_q_entries(...)) db(...);
      when != if (ena_com_used_q_entries(...) && !netdev_xmit_more()) db(...);
(
  dev_kfree_skb(skb)@p;
|
  dev_kfree_skb_any(skb)@p;
|
  dev_consume_skb_any(skb)@p;
|
  napi_consume_skb(skb, ...)@p;
)
  ...
      when != if (C) { ... db(...); ... }
      when != if (E->doorbell_pending && C) { ... db(...); ... }
      when != if (E->doorbell_pending && (C)) { ... db(...); ... }
      when != if (C && E->doorbell_pending) { ... db(...); ... }
      when != if ((C) && E->doorbell_pending) { ... db(...); ... }
      when != if (!netdev_xmit_more() && ena_com_used_q_entries(...)) { ... db(...); ... }
      when != if (ena_com_used_q_entries(...) && !netdev_xmit_more()) { ... db(...); ... }
      when != if (!netdev_xmit_more() && ena_com_used_q_entries(...)) db(...);
      when != if (ena_com_used_q_entries(...) && !netdev_xmit_more()) db(...);
  return ...;
}

@script:python@
p << skb_drop.p;
xmit << checked_skb.xmit;
@@
print("%s:%s: %s(): drop path returns without the success path's doorbell decision" %
      (p[0].file, p[0].line, xmit))

// The pending flag the kernel patch's drop decision reads: set where a
// packet's descriptors are queued (after ena_com_prepare_tx()), and never
// cleared by the transmit function itself (only the doorbell function
// clears it, once it has rung).
@uses_pending exists@
identifier checked_skb.xmit;
identifier dbfn.db;
expression E, C2;
@@
netdev_tx_t xmit(...)
{
  ... when any
(
  if (E->doorbell_pending && C2) { ... db(...); ... }
|
  if (C2 && E->doorbell_pending) { ... db(...); ... }
)
  ... when any
}

@script:python depends on uses_pending@
xmit << checked_skb.xmit;
@@
pending_readers.add(xmit)

@pending_set exists@
identifier fn;
expression E, rc;
@@
fn(...)
{
  ... when any
(
  ena_com_prepare_tx(...);
|
  rc = ena_com_prepare_tx(...);
)
  ... when any
  E->doorbell_pending = true;
  ... when any
}

@script:python@
fn << pending_set.fn;
@@
pending_setters.add(fn)

@pending_cleared exists@
identifier checked_skb.xmit;
expression E;
position p;
@@
netdev_tx_t xmit(...)
{
  ... when any
  E->doorbell_pending@p = false;
  ... when any
}

@script:python@
p << pending_cleared.p;
xmit << checked_skb.xmit;
@@
print("%s:%s: %s(): clears the pending-doorbell flag itself: a drop after it would not ring for descriptors queued earlier" %
      (p[0].file, p[0].line, xmit))

@finalize:python@
@@
for x in sorted(pending_readers):
    if not pending_setters:
        print("ena_all.c:1: %s(): its drop decision reads doorbell_pending, but no function sets it after ena_com_prepare_tx(): the drop path never rings" % x)
for x in sorted(xmits):
    if x not in drops:
        print("ena_all.c:1: %s(): no skb free (dev_kfree_skb*(), dev_consume_skb_any(), napi_consume_skb()): no drop path examined" % x)
    if x not in decisions:
        print("ena_all.c:1: %s(): no doorbell decision (if (...netdev_xmit_more()...) doorbell) on the success path, or no function that rings the doorbell" % x)
