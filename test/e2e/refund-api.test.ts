/**
 * The refund API's own answers to what a dashboard needs, over GraphQL on the real gateway, PostgreSQL
 * and the local anvil chain: a new claim link for a refund still waiting for its address (the old link
 * stops working, the new one claims), refused in the right code for a refund that has its address, an
 * unknown or another merchant's refund and a malformed id (nothing changes, never a 500);
 * `Refund.explorerUrl`, null on the local dev chains; and what the gateway says may still be refunded
 * of a deposit and of a wrong-token receipt (`refundable`), exactly what createRefund then allows.
 */
import { Wallet } from 'ethers';
import { CUSTOMER_PRIVATE_KEYS, startDevChains, type DevChains } from '../../src/devchain';
import { CreateRefundDocument, OrderRefundsDocument, RefundDocument, RenewRefundClaimLinkDocument } from '../generated/graphql';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { gql } from '../support/graphql';
import { createMerchant } from '../support/fixtures';
import { eventually, fundedCustomer, pay, placeOrder, sql, T, WATCH_ENV } from '../support/evm-harness';
import { http } from '../support/http';

let chains: DevChains;
let gw: TestGateway;
let customer: string;

beforeAll(async () => {
  chains = await startDevChains();
  gw = await startTestGateway({ ...WATCH_ENV, SANDBOX_ETHEREUM_CONFIRMATIONS: '1', REFUND_POLL_MS: '0' }, { devChains: chains });
  customer = await fundedCustomer(chains, CUSTOMER_PRIVATE_KEYS[3]!);
}, 120_000);
afterAll(async () => {
  await gw?.close();
  await chains?.stop();
});

const env = 'SANDBOX' as never;
const apiKey = (k: string) => ({ 'api-key': k });
const claimToken = (url: string) => new URL(url).hash.replace(/^#token=/, '');
const mine = () => chains.ETHEREUM.rpc.call('anvil_mine', ['0x1']);

async function overpaidOrder(m: Awaited<ReturnType<typeof createMerchant>>) {
  const o = await placeOrder(gw.url, gw.app, m, 'ETHEREUM');
  await pay(chains.ETHEREUM, customer, o.address, o.total + 3_000_000n);
  await eventually(
    async () => {
      await mine();
      return (await sql<{ status: string }>(gw.app, `select status from orders where id = ?`, [o.orderId]))[0]!.status === 'Success';
    },
    'order paid',
    60_000,
  );
  return o;
}

it('a new claim link replaces the old one for a refund waiting for its address; refused with the right code otherwise; explorerUrl null on dev chains', async () => {
  const m = await createMerchant(gw.app);
  const other = await createMerchant(gw.app);
  const o = await overpaidOrder(m);
  const created = await gql(
    gw.url,
    CreateRefundDocument,
    { environment: env, input: { orderId: o.orderId, kind: 'overpayment_excess' as never } },
    apiKey(m.sandboxKey),
  );
  expect(created.errors).toBeUndefined();
  const refund = created.data!.createRefund.refund;
  const first = created.data!.createRefund.claimUrl!;
  expect(refund.explorerUrl).toBeNull();
  const hashOf = async () =>
    (await sql<{ claim_token_hash: string }>(gw.app, `select claim_token_hash from refunds where id = ?`, [refund.id]))[0]!.claim_token_hash;
  const firstHash = await hashOf();

  // Refused: another merchant's refund, an unknown one, a malformed id; nothing changes.
  for (const [id, key, code] of [
    [refund.id, other.sandboxKey, 'REFUND_NOT_FOUND'],
    ['00000000-0000-4000-8000-000000000000', m.sandboxKey, 'REFUND_NOT_FOUND'],
    ['not-a-uuid', m.sandboxKey, 'VALIDATION_FAILED'],
  ] as const) {
    const r = await gql(gw.url, RenewRefundClaimLinkDocument, { environment: env, id }, apiKey(key));
    expect(r.status).not.toBe(500);
    expect(r.errors?.[0]?.extensions?.code).toBe(code);
  }
  expect(await hashOf()).toBe(firstHash);

  const renewed = await gql(gw.url, RenewRefundClaimLinkDocument, { environment: env, id: refund.id }, apiKey(m.sandboxKey));
  expect(renewed.errors).toBeUndefined();
  const second = renewed.data!.renewRefundClaimLink.claimUrl!;
  expect(second).toMatch(/\/refund#token=[A-Za-z0-9_-]{43}$/);
  expect(claimToken(second)).not.toBe(claimToken(first));
  expect(renewed.data!.renewRefundClaimLink.refund).toEqual(expect.objectContaining({ id: refund.id, status: 'requested', toAddress: null }));
  // Only the new hash is stored: the old link is unknown now, the new one opens the refund.
  expect(JSON.stringify(await sql(gw.app, `select * from refunds where id = ?`, [refund.id]))).not.toContain(claimToken(second));
  const em = () => gw.app.orm.em.fork();
  await expect(gw.app.refunds.claimInfo(em(), claimToken(first))).rejects.toMatchObject({ code: 'CLAIM_NOT_FOUND' });
  expect(await gw.app.refunds.claimInfo(em(), claimToken(second))).toEqual(expect.objectContaining({ open: true }));
  // REST does the same for a merchant's server: a third link, in the envelope; the second stops working.
  const rest = await http(gw.url, `${T}/merchant/fiat/renewRefundClaimLink`, {
    body: { merchant_id: m.merchantId, refund_id: refund.id },
    headers: apiKey(m.sandboxKey),
  });
  expect(rest.status).toBe(200);
  expect(rest.body.data.request.status).toBe('requested');
  const third = rest.body.data.claim_url as string;
  expect(third).toMatch(/\/refund#token=[A-Za-z0-9_-]{43}$/);
  await expect(gw.app.refunds.claimInfo(em(), claimToken(second))).rejects.toMatchObject({ code: 'CLAIM_NOT_FOUND' });
  const restMissing = await http(gw.url, `${T}/merchant/fiat/renewRefundClaimLink`, {
    body: { merchant_id: m.merchantId, refund_id: '00000000-0000-4000-8000-000000000000' },
    headers: apiKey(m.sandboxKey),
  });
  expect(restMissing.status).toBe(404);
  expect(restMissing.body).toMatchObject({ status_code: 404, data: { code: 'REFUND_NOT_FOUND' } });

  const to = Wallet.createRandom().address;
  await gw.app.refunds.claim(em(), claimToken(third), to, to);

  // Claimed: it has its address, so no new link; the refund is as it was.
  const late = await gql(gw.url, RenewRefundClaimLinkDocument, { environment: env, id: refund.id }, apiKey(m.sandboxKey));
  expect(late.status).not.toBe(500);
  expect(late.errors?.[0]?.extensions?.code).toBe('REFUND_STATE');
  const now = await gql(gw.url, RefundDocument, { environment: env, id: refund.id }, apiKey(m.sandboxKey));
  expect(now.data!.refund).toEqual(expect.objectContaining({ status: 'claimed', explorerUrl: null }));
  expect(now.data!.refund.toAddress!.toLowerCase()).toBe(to.toLowerCase());
  const audit = await sql<{ action: string }>(gw.app, `select action from audit_events where subject = ? order by id`, [refund.id]);
  expect(audit.map((a) => a.action)).toContain('refund.claim_link_renewed');
}, 180_000);

it('Deposit.refundable and UnattributedReceipt.refundable: received less live refunds, the offer capped by it; createRefund agrees at the limit', async () => {
  const m = await createMerchant(gw.app);
  const o = await overpaidOrder(m);
  const excess = 3_000_000n;
  const read = async () => {
    const r = await gql(gw.url, OrderRefundsDocument, { environment: env, orderNo: o.orderNo }, apiKey(m.sandboxKey));
    expect(r.errors).toBeUndefined();
    return r.data!.order;
  };
  const paid = (await read()).deposits.find((d) => d.refundable && BigInt(d.refundable.amount.units) > 0n)!;
  expect(paid).toEqual(
    expect.objectContaining({
      decimals: 6,
      refundable: {
        decimals: 6,
        amount: { units: (o.total + excess).toString(), decimal: (Number(o.total + excess) / 1e6).toString() },
        offer: { kind: 'overpayment_excess', amount: { units: excess.toString(), decimal: '3' } },
      },
    }),
  );
  // A merchant refund of 1 token: the rest shrinks by it, the offer stays within what is left.
  const one = await gql(
    gw.url,
    CreateRefundDocument,
    { environment: env, input: { orderId: o.orderId, depositId: paid.id, kind: 'merchant' as never, amount: '1000000' } },
    apiKey(m.sandboxKey),
  );
  expect(one.errors).toBeUndefined();
  const after = (await read()).deposits.find((d) => d.id === paid.id)!.refundable!;
  expect(after.amount.units).toBe((o.total + excess - 1_000_000n).toString());
  expect(after.offer!.amount.units).toBe(excess.toString());
  // One unit over what it says is refused with the code, and exactly what it says is accepted.
  const over = await gql(
    gw.url,
    CreateRefundDocument,
    { environment: env, input: { orderId: o.orderId, depositId: paid.id, kind: 'merchant' as never, amount: (BigInt(after.amount.units) + 1n).toString() } },
    apiKey(m.sandboxKey),
  );
  expect(over.status).not.toBe(500);
  expect(over.errors?.[0]?.extensions?.code).toBe('REFUND_EXCEEDS_RECEIVED');
  const all = await gql(
    gw.url,
    CreateRefundDocument,
    { environment: env, input: { orderId: o.orderId, depositId: paid.id, kind: 'merchant' as never, amount: after.amount.units } },
    apiKey(m.sandboxKey),
  );
  expect(all.errors).toBeUndefined();
  expect((await read()).deposits.find((d) => d.id === paid.id)!.refundable).toEqual(
    expect.objectContaining({ amount: { units: '0', decimal: '0' }, offer: expect.objectContaining({ amount: { units: '0', decimal: '0' } }) }),
  );

  // A wrong-token receipt of the same order: its own figure, in its own token.
  const wrong = 4_500_000n;
  await pay(chains.ETHEREUM, customer, o.address, wrong, 'USDC');
  let receipt: Awaited<ReturnType<typeof read>>['unattributedReceipts'][number] | undefined;
  await eventually(
    async () => {
      await mine();
      receipt = (await read()).unattributedReceipts.find((u) => u.reason === 'wrong_token' && u.refundable !== null);
      return receipt !== undefined;
    },
    'wrong-token receipt confirmed',
    60_000,
  );
  expect(receipt!.refundable).toEqual({
    decimals: 6,
    amount: { units: wrong.toString(), decimal: '4.5' },
    offer: { kind: 'wrong_token', amount: { units: wrong.toString(), decimal: '4.5' } },
  });
  const part = await gql(
    gw.url,
    CreateRefundDocument,
    { environment: env, input: { orderId: o.orderId, receiptId: receipt!.id, kind: 'wrong_token' as never, amount: '500000' } },
    apiKey(m.sandboxKey),
  );
  expect(part.errors).toBeUndefined();
  const left = (await read()).unattributedReceipts.find((u) => u.id === receipt!.id)!.refundable!;
  expect(left.amount.units).toBe('4000000');
  expect(left.offer!.amount.units).toBe('4000000');
}, 180_000);
