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
///    kernel's driver with this package's patch has it).
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

@script:python@
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
expression skb, X;
position p;
@@
netdev_tx_t xmit(...)
{
  ...
      when != if (C) { ... db(...); ... }
      when != if (X && C) { ... db(...); ... }
      when != if (X && (C)) { ... db(...); ... }
      when != if (C && X) { ... db(...); ... }
      when != if ((C) && X) { ... db(...); ... }
      when != if (!netdev_xmit_more() && X) { ... db(...); ... }
      when != if (X && !netdev_xmit_more()) { ... db(...); ... }
      when != if (!netdev_xmit_more() && X) db(...);
      when != if (X && !netdev_xmit_more()) db(...);
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
      when != if (X && C) { ... db(...); ... }
      when != if (X && (C)) { ... db(...); ... }
      when != if (C && X) { ... db(...); ... }
      when != if ((C) && X) { ... db(...); ... }
      when != if (!netdev_xmit_more() && X) { ... db(...); ... }
      when != if (X && !netdev_xmit_more()) { ... db(...); ... }
      when != if (!netdev_xmit_more() && X) db(...);
      when != if (X && !netdev_xmit_more()) db(...);
  return ...;
}

@script:python@
p << skb_drop.p;
xmit << checked_skb.xmit;
@@
print("%s:%s: %s(): drop path returns without the success path's doorbell decision" %
      (p[0].file, p[0].line, xmit))

@finalize:python@
@@
for x in sorted(xmits):
    if x not in drops:
        print("ena_all.c:1: %s(): no skb free (dev_kfree_skb*(), dev_consume_skb_any(), napi_consume_skb()): no drop path examined" % x)
    if x not in decisions:
        print("ena_all.c:1: %s(): no doorbell decision (if (...netdev_xmit_more()...) doorbell) on the success path, or no function that rings the doorbell" % x)
