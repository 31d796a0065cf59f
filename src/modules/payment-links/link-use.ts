/**
 * Payment-link uses follow their orders: a use is *reserved* when an order is
 * opened from the link (PaymentLinkService.open, one conditional UPDATE, so usage_count never passes
 * max_usage) and *released* when that order expires unpaid, so anonymous opens that never pay cannot
 * burn a link's uses for good. `orders.link_use_held` says whether an order holds one, which makes
 * both moves idempotent; `usage_count` is the number of orders holding a use.
 *
 * Rules (SettlementService calls `syncLinkUse` after every status change, in its transaction, with
 * the order row locked):
 *   Expired                        → release the use (if held)
 *   Success / Underpaid after Expired (a late payment inside the late window)
 *                                  → take a use back if the link has room; if it filled meanwhile, the
 *                                    order is still honoured as paid — money is never refused — and
 *                                    simply not counted (usage_count stays ≤ max_usage; returns false)
 *   anything else                  → nothing (an order holds its use from open to expiry)
 * An Underpaid order keeps its use: the shopper sent money, the merchant settles it with them.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { OrderStatus } from '../orders/order.transitions.js';

/** Reconciles an order's link use with its new status. Returns whether the order holds a use afterwards. */
export async function syncLinkUse(tx: EntityManager, orderId: string, status: OrderStatus): Promise<boolean> {
  if (status === 'Expired') {
    await tx.execute(
      `with o as (update orders set link_use_held = false where id = ? and link_use_held returning payment_link_id)
       update payment_links l set usage_count = l.usage_count - 1, updated_at = now() from o where l.id = o.payment_link_id`,
      [orderId],
    );
    return false;
  }
  if (status !== 'Success' && status !== 'Underpaid') return true;
  // Re-take after a release: the link row's conditional UPDATE is the same race-safe gate as open().
  const rows = await tx.execute<{ held: boolean }[]>(
    `with o as (select payment_link_id, link_use_held from orders where id = ?),
          l as (update payment_links set usage_count = usage_count + 1, updated_at = now()
                 where id = (select payment_link_id from o where not link_use_held) and usage_count < max_usage returning id),
          u as (update orders set link_use_held = true where id = ? and exists (select 1 from l) returning id)
     select (select link_use_held from o) or exists (select 1 from u) as held`,
    [orderId, orderId],
  );
  return rows[0]?.held ?? false;
}
