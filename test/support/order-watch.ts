import { print } from 'graphql';
import type { Client } from 'graphql-ws';
import { CreateDepositDocument, CreateOrderDocument, LockQuoteDocument, OrderUpdatedDocument, type OrderUpdatedSubscription } from '../generated/graphql';
import type { Network, WalletType } from '../../src/common/environment';
import { gql, wsClient } from './graphql';

export type OrderUpdate = OrderUpdatedSubscription['orderUpdated'];

export interface OrderWatch {
  /** Statuses received so far, in order (the current status comes first). */
  statuses(): string[];
  /** Waits until an update with `status` has been received. */
  until(status: string, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

/** A live `orderUpdated` subscription over graphql-ws (codegen document) that records what it receives. */
export function watchOrder(base: string, connectionParams: Record<string, unknown>, orderNo: string): OrderWatch {
  const client: Client = wsClient(base, connectionParams);
  const received: OrderUpdate[] = [];
  let failure: unknown;
  const wake: (() => void)[] = [];
  const notify = () => wake.splice(0).forEach((f) => f());
  const unsubscribe = client.subscribe<OrderUpdatedSubscription>(
    { query: print(OrderUpdatedDocument), variables: { orderNo } },
    {
      next: (v) => {
        if (v.errors) failure = v.errors;
        if (v.data) received.push(v.data.orderUpdated);
        notify();
      },
      error: (e) => {
        failure = e;
        notify();
      },
      complete: notify,
    },
  );
  return {
    statuses: () => received.map((u) => u.status),
    async until(status, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      while (!received.some((u) => u.status === status)) {
        if (failure) throw new Error(`subscription failed while waiting for ${status}: ${JSON.stringify(failure)}`);
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`timed out waiting for ${status}; received ${JSON.stringify(received.map((u) => u.status))}`);
        await new Promise<void>((r) => {
          const t = setTimeout(r, left);
          wake.push(() => (clearTimeout(t), r()));
        });
      }
    },
    async close() {
      unsubscribe();
      await client.dispose();
    },
  };
}

export interface CheckoutDeposit {
  orderId: string;
  orderNo: string;
  /** Scoped checkout key of the order. */
  key: string;
  address: string;
  /** Total the customer owes, in token base units. */
  total: bigint;
  qrValue: string;
}

let seq = 0;

/** order → quote → deposit over GraphQL, the way a checkout page does it. */
export async function checkout(
  base: string,
  apiKey: string,
  opts: { amountIdr: string; tokenAddress: string; network: Network; walletType: WalletType },
): Promise<CheckoutDeposit> {
  const orderNo = `E2E-${opts.network}-${++seq}-${Date.now()}`;
  const created = await gql(base, CreateOrderDocument, { input: { orderNo, amount: opts.amountIdr } }, { 'api-key': apiKey });
  if (created.errors || !created.data) throw new Error(`createOrder: ${JSON.stringify(created.errors)}`);
  const ck = { 'x-checkout-key': created.data.createOrder.key };
  const quote = await gql(base, LockQuoteDocument, { orderNo, tokenAddress: opts.tokenAddress, network: opts.network }, ck);
  if (quote.errors || !quote.data) throw new Error(`lockQuote: ${JSON.stringify(quote.errors)}`);
  const dep = await gql(base, CreateDepositDocument, { orderNo, tokenAddress: opts.tokenAddress, network: opts.network, walletType: opts.walletType }, ck);
  if (dep.errors || !dep.data) throw new Error(`createDeposit: ${JSON.stringify(dep.errors)}`);
  const d = dep.data.createDeposit;
  return {
    orderId: created.data.createOrder.order.id,
    orderNo,
    key: created.data.createOrder.key,
    address: d.deposit.destinationAddress,
    total: BigInt(d.deposit.totalAmountBaseUnits),
    qrValue: d.qrValue,
  };
}

/** Polls `probe` every 50 ms until it returns true (or throws after `timeoutMs`). */
export async function eventually(probe: () => Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
