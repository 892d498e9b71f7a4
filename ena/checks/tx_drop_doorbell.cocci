// SPDX-License-Identifier: GPL-2.0
/// A transmit function that drops a packet must still make the doorbell
/// decision before it returns: descriptors queued earlier with xmit_more
/// (or, for XDP, without XDP_XMIT_FLUSH) wait for a doorbell that only a
/// later packet would ring, and a drop that ends the batch must ring it.
///
/// Drop paths checked:
///  - in a function returning netdev_tx_t: every path from freeing the skb
///    (dev_kfree_skb*(), dev_consume_skb_any()) to a return;
///  - in an XDP transmit function (its name has "xmit" and it tests
///    XDP_XMIT_FLUSH): every path from the branch taken when a status
///    variable reports failure ("if (rc)", "if (unlikely(rc))") to a return.
/// The doorbell decision is a call of a function whose name has "doorbell".
/// Helpers that only queue (no skb freed, no XDP_XMIT_FLUSH) are left to
/// their callers.
//
// Confidence: High for the ENA driver it was written for.
// Options: --no-includes

@checked_skb@
typedef netdev_tx_t;
identifier xmit;
@@
netdev_tx_t xmit(...) { ... }

@script:python@
xmit << checked_skb.xmit;
@@
print("checked: %s()" % xmit)

@skb_drop exists@
identifier checked_skb.xmit;
identifier db =~ "doorbell";
expression skb;
position p;
@@
netdev_tx_t xmit(...)
{
  ... when any
(
  dev_kfree_skb(skb)@p;
|
  dev_kfree_skb_any(skb)@p;
|
  dev_consume_skb_any(skb)@p;
)
  ... when != db(...)
  return ...;
}

@script:python@
p << skb_drop.p;
xmit << checked_skb.xmit;
@@
print("%s:%s: %s(): drop path returns without a doorbell decision" %
      (p[0].file, p[0].line, xmit))

@xdpfn@
identifier fn =~ "xmit";
@@
fn(...)
{
  <+... XDP_XMIT_FLUSH ...+>
}

@script:python@
fn << xdpfn.fn;
@@
print("checked: %s()" % fn)

@xdp_drop exists@
identifier xdpfn.fn;
identifier db =~ "doorbell";
identifier rc;
position p;
@@
fn(...)
{
  ... when any
  if (\(rc\|unlikely(rc)\)) {
  ... when != db(...)
  return@p ...;
  }
  ... when any
}

@script:python@
p << xdp_drop.p;
fn << xdpfn.fn;
@@
print("%s:%s: %s(): drop path returns without a doorbell decision" %
      (p[0].file, p[0].line, fn))
