import type { EntityManager } from '@mikro-orm/postgresql';
import DataLoader from 'dataloader';
import { Deposit } from '../deposits/deposit.entity.js';
import { Payment } from '../payments/payment.entity.js';
import { UnattributedReceipt } from '../payments/unattributed-receipt.entity.js';
import { Quote } from '../quotes/quote.entity.js';
import { Token } from '../tokens/token.entity.js';

/**
 * Per-request batch loaders for an order's children, so a page of N orders costs one query per
 * child kind instead of three per order (GraphQL `orders`). Created with the request's context and
 * dropped with it: nothing is cached across requests, so a later request sees fresh rows.
 */
export interface OrderLoaders {
  quotes: DataLoader<string, Quote[]>;
  deposits: DataLoader<string, Deposit[]>;
  payments: DataLoader<string, Payment[]>;
  /** Receipts at the order's deposit addresses that never count (late, wrong token, wrong network). */
  receipts: DataLoader<string, UnattributedReceipt[]>;
  /** Tokens by id (the paying token of a page of orders). */
  tokens: DataLoader<string, Token | null>;
}

/** Rows grouped by their order id, in the order the query returned them, one (possibly empty) list per key. */
function byOrder<T extends { order: { id: string } }>(ids: readonly string[], rows: T[]): T[][] {
  const groups = new Map<string, T[]>(ids.map((id) => [id, []]));
  for (const row of rows) groups.get(row.order.id)?.push(row);
  return ids.map((id) => groups.get(id)!);
}

export function createOrderLoaders(em: EntityManager): OrderLoaders {
  return {
    quotes: new DataLoader(async (ids) =>
      byOrder(ids, await em.find(Quote, { order: { $in: [...ids] } }, { populate: ['token'], orderBy: { lockedAt: 'asc', id: 'asc' } })),
    ),
    deposits: new DataLoader(async (ids) =>
      byOrder(ids, await em.find(Deposit, { order: { $in: [...ids] } }, { populate: ['token'], orderBy: { createdAt: 'asc', id: 'asc' } })),
    ),
    tokens: new DataLoader(async (ids) => {
      const rows = await em.find(Token, { id: { $in: [...ids] } });
      return ids.map((id) => rows.find((t) => t.id === id) ?? null);
    }),
    payments: new DataLoader(async (ids) =>
      byOrder(ids, await em.find(Payment, { order: { $in: [...ids] } }, { populate: ['token'], orderBy: { detectedAt: 'asc', id: 'asc' } })),
    ),
    receipts: new DataLoader(async (ids) =>
      byOrder(
        ids,
        await em.find(
          UnattributedReceipt,
          { order: { $in: [...ids] }, status: { $ne: 'orphaned' } },
          { populate: ['token'], orderBy: { detectedAt: 'asc', id: 'asc' } },
        ),
      ),
    ),
  };
}
