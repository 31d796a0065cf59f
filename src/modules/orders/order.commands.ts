import { z } from 'zod';
import { returnUrlFields } from './return-urls.js';
import { NETWORKS, WALLET_TYPES } from '../../common/environment.js';
import { ORDER_STATUSES } from './order.transitions.js';

/**
 * The order flow's commands: what OrderService, QuoteService and DepositService accept, validated
 * once at the service boundary. The field validators are exported so the legacy REST dialect
 * (`src/rest/order.mappers.ts`) checks its snake_case bodies with the same rules and messages.
 */

// Merchant order numbers: printable ASCII without spaces, so they survive URLs, logs and CSVs.
export const orderNo = z.string().regex(/^[\x21-\x7E]{1,64}$/, 'must be 1-64 printable ASCII characters without spaces');
const idr = z.string().regex(/^[1-9][0-9]{0,17}$/, 'must be a positive whole number of rupiah as a string, e.g. "150000"');
/** IDR amount of a new order, within the configured bounds. */
export const orderAmount = (min: number, max: number) => {
  const lo = BigInt(min);
  const hi = BigInt(max);
  // zod runs a refinement even when `idr`'s pattern failed: only digits reach BigInt.
  return idr.refine((s) => /^\d+$/.test(s) && BigInt(s) >= lo && BigInt(s) <= hi, `must be between ${min} and ${max} IDR`);
};
export const customerName = z.string().trim().min(1).max(200).optional().nullable();
export const customerEmail = z.email('must be a valid email address').max(254).optional().nullable();
export const network = z.enum(NETWORKS, { message: `must be one of ${NETWORKS.join(', ')}` });
export const walletType = z.enum(WALLET_TYPES, { message: `must be one of ${WALLET_TYPES.join(', ')}` });
export const tokenAddress = z.string().min(20).max(100);

export const createOrderCommand = (min: number, max: number) =>
  z.object({ orderNo, amount: orderAmount(min, max), customerName, customerEmail, ...returnUrlFields });
export type CreateOrderCommand = z.input<ReturnType<typeof createOrderCommand>>;
export type CreateOrderData = z.output<ReturnType<typeof createOrderCommand>>;

/**
 * A create-order command that a transport has already parsed with these same field validators and
 * bounds (REST's legacy body, `order.mappers.ts`, which must word errors in its own field names), so
 * the service does not parse it a second time (one zod pass per order, not two: bench:orders). Only
 * code can make one; a client's JSON never is one.
 */
export class CheckedCreateOrder {
  constructor(readonly data: CreateOrderData) {}
}

export const getOrderCommand = z.object({ orderNo });
export type GetOrderCommand = z.input<typeof getOrderCommand>;

export const lockQuoteCommand = z.object({ orderNo, network, tokenAddress });
export type LockQuoteCommand = z.input<typeof lockQuoteCommand>;

export const createDepositCommand = lockQuoteCommand.extend({ walletType });
export type CreateDepositCommand = z.input<typeof createDepositCommand>;

/**
 * Instants a client may filter or page by: years 1970–9999. JavaScript dates reach ±275760 and year 0,
 * which PostgreSQL refuses (it has no year 0): outside these bounds is the caller's mistake, a 400.
 */
export const INSTANT_MIN = new Date('1970-01-01T00:00:00Z');
export const INSTANT_MAX = new Date('9999-12-31T23:59:59.999Z');
export const isInstantInRange = (d: Date): boolean => !Number.isNaN(d.getTime()) && d >= INSTANT_MIN && d <= INSTANT_MAX;
export const instant = z.date().refine(isInstantInRange, 'must be a date between 1970-01-01 and 9999-12-31');

export const ORDER_SORTS = ['CREATED_AT', 'AMOUNT', 'PAID_AT'] as const;
export type OrderSort = (typeof ORDER_SORTS)[number];
export const SORT_DIRECTIONS = ['DESC', 'ASC'] as const;
export type SortDirection = (typeof SORT_DIRECTIONS)[number];

const range = { message: 'the range end must be after its start' };

/**
 * The filters and sort of an order listing: what the GraphQL `orders` query and the orders CSV export
 * both accept (one parser; the SQL is order-filter.sql.ts). Each transport adds its own fields:
 * paging for GraphQL, the time zone for CSV.
 */
export const orderFilterFields = {
  /** Any of these statuses (empty or absent: all). */
  statuses: z.array(z.enum(ORDER_STATUSES)).max(ORDER_STATUSES.length).optional(),
  createdFrom: instant.optional(),
  createdTo: instant.optional(),
  paidFrom: instant.optional(),
  paidTo: instant.optional(),
  /** Network / token of the deposit that paid the order (not any deposit it had). */
  network: network.optional(),
  tokenAddress: tokenAddress.optional(),
  /** Order number prefix, or part of the customer's name or email (case-insensitive). */
  search: z.string().trim().min(1).max(100).optional(),
  paymentLinkId: z.uuid('must be a payment link id').optional(),
  overpaid: z.boolean().optional(),
  sort: z.enum(ORDER_SORTS).default('CREATED_AT'),
  direction: z.enum(SORT_DIRECTIONS).default('DESC'),
};

/** An order filter schema with its range checks (created and paid ranges must not be empty). */
export const withOrderRanges = <T extends z.ZodType<{ createdFrom?: Date; createdTo?: Date; paidFrom?: Date; paidTo?: Date }>>(schema: T) =>
  schema
    .refine((c) => !c.createdFrom || !c.createdTo || c.createdFrom < c.createdTo, { ...range, path: ['createdTo'] })
    .refine((c) => !c.paidFrom || !c.paidTo || c.paidFrom < c.paidTo, { ...range, path: ['paidTo'] });

export const listOrdersCommand = withOrderRanges(
  z.object({
    ...orderFilterFields,
    first: z.number().int().min(1).max(100).default(20),
    after: z.string().max(1000).optional(),
  }),
);
export type ListOrdersCommand = z.input<typeof listOrdersCommand>;
/** A parsed order filter with its sort (the input of order-filter.sql.ts). */
export type OrderFilter = Pick<z.output<typeof listOrdersCommand>, keyof typeof orderFilterFields>;

export const STATS_GROUPS = ['DAY', 'HOUR', 'STATUS', 'NETWORK', 'TOKEN'] as const;
export type StatsGroup = (typeof STATS_GROUPS)[number];
/** Longest `orderStats` range, in days (HOUR buckets: STATS_MAX_HOUR_DAYS). */
export const STATS_MAX_DAYS = 366;
export const STATS_MAX_HOUR_DAYS = 31;

export const orderStatsCommand = z
  .object({
    from: instant,
    to: instant,
    groupBy: z.array(z.enum(STATS_GROUPS)).max(STATS_GROUPS.length).default([]),
    timeZone: z.string().min(1).max(64).default('Asia/Jakarta'),
  })
  .refine((c) => c.from < c.to, { message: 'to must be after from', path: ['to'] })
  .refine((c) => !(c.groupBy.includes('DAY') && c.groupBy.includes('HOUR')), { message: 'group by DAY or HOUR, not both', path: ['groupBy'] });
export type OrderStatsCommand = z.input<typeof orderStatsCommand>;
