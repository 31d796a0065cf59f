import type { ObservedTransfer } from '../../src/chains/chain-adapter';
import type { Network, WalletType } from '../../src/common/environment';
import { CreateOrderDocument } from '../generated/graphql';
import { gql } from './graphql';
import { http } from './http';
import type { TestGateway } from './gateway';
import { checkout, type CheckoutDeposit } from './order-watch';

/** Sandbox tokens seeded by the migration (no node is watched: payments are handed to the services as a watcher would). */
export const NILE_USDT = 'TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf'; // TRON, 6 decimals
export const BSC_TESTNET_USDT = '0x337610d27c682E347C9cD60BD4b3b107C9d34dDd'; // BINANCE, 18 decimals
const PAYERS: Record<string, string> = { TRON: 'TLa2f6VPqDgRE67v1736s7bJ8Ray5wYjU7', BINANCE: '0x9858EfFD232B4033E47d90003D41EC34EcaEda94' };

let txSeq = 0;

export const sql = <T>(gw: TestGateway, query: string, params: unknown[] = []) => gw.app.orm.em.fork().getConnection().execute<T[]>(query, params);

/**
 * A paid order through the real services: checkout over GraphQL, the transfer recorded as a watcher
 * records it, confirmed, settled to Success.
 */
export async function paidOrder(
  gw: TestGateway,
  apiKey: string,
  opts: { network: Network; tokenAddress: string; walletType: WalletType; amountIdr?: string },
): Promise<CheckoutDeposit & { txHash: string }> {
  const d = await checkout(gw.url, apiKey, {
    amountIdr: opts.amountIdr ?? '150000',
    tokenAddress: opts.tokenAddress,
    network: opts.network,
    walletType: opts.walletType,
  });
  const [dep] = await sql<{ id: string; token_id: string }>(gw, 'select id, token_id from deposits where order_id = ?', [d.orderId]);
  const txHash = (opts.network === 'TRON' ? '' : '0x') + (++txSeq).toString(16).padStart(64, 'a');
  const t: ObservedTransfer = {
    txHash,
    index: 0,
    blockNumber: 100n,
    blockHash: 'ab'.repeat(32),
    token: opts.tokenAddress,
    from: PAYERS[opts.network]!,
    to: d.address,
    amount: d.total,
  };
  await gw.app.orm.em
    .fork()
    .transactional((tx) =>
      gw.app.payments.record(tx, 'sandbox', opts.network, [{ transfer: t, depositId: dep!.id, orderId: d.orderId, tokenId: dep!.token_id }]),
    );
  const [p] = await sql<{ id: string }>(gw, 'select id from payments where tx_hash = ?', [txHash]);
  await gw.app.payments.markConfirmed(gw.app.orm.em.fork(), [p!.id]);
  const status = await gw.app.settlement.settle(gw.app.orm.em.fork(), d.orderId);
  if (status !== 'Success') throw new Error(`expected Success, got ${status}`);
  return { ...d, txHash };
}

/** An unpaid order with the given customer fields (GraphQL createOrder, the merchant's API key). */
export async function plainOrder(gw: TestGateway, apiKey: string, orderNo: string, customer: { name?: string; email?: string } = {}): Promise<string> {
  const r = await gql(gw.url, CreateOrderDocument, { input: { orderNo, amount: '50000', ...customer } }, { 'api-key': apiKey });
  if (r.errors || !r.data) throw new Error(`createOrder: ${JSON.stringify(r.errors)}`);
  return r.data.createOrder.order.id;
}

/** A dashboard access token for the merchant's owner (POST /api/v2/auth/login). */
export async function dashboardToken(gw: TestGateway, email: string, password: string): Promise<string> {
  const r = await http(gw.url, '/api/v2/auth/login', { method: 'POST', body: { email, password, user_type: 'merchant' } });
  if (r.status !== 200) throw new Error(`login: ${r.text}`);
  return r.body.data.token as string;
}

/**
 * RFC 4180 reader for the tests (deliberately not the library the server writes with, so the two
 * check each other): quoted fields, doubled quotes, commas and line breaks inside quotes.
 */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(cell);
      cell = '';
    } else if (c === '\n' || (c === '\r' && text[i + 1] === '\n')) {
      if (c === '\r') i++;
      row.push(cell);
      rows.push(row);
      row = [];
      cell = '';
    } else cell += c;
  }
  if (cell !== '' || row.length) {
    row.push(cell);
    rows.push(row);
  }
  return rows;
}

/** CSV text → objects keyed by the header row. */
export function csvRecords(text: string): Record<string, string>[] {
  const [header, ...rows] = parseCsv(text);
  return rows.map((r) => Object.fromEntries(header!.map((h, i) => [h, r[i] ?? ''])));
}
