/**
 * A refund's gas top-up that landed but became too small: the fee rose between the tank's top-up of
 * the deposit and the transfer's signing (anvil's base fee raised tenfold). The engine tops up the
 * difference with a further top-up, stored with the first before it is broadcast, and the refund
 * reaches the address exactly; the gas tank's ledger, opened before, counts both top-ups: the
 * reconciliation is clean, the tank included. Real gateway, PostgreSQL and anvil; the refund engine is
 * driven tick by tick (REFUND_POLL_MS=0).
 */
import { Wallet } from 'ethers';
import { watchedNetworks, type WatchedNetwork } from '../../src/chains/networks';
import { balanceOf, CUSTOMER_PRIVATE_KEYS, DEV_TOKEN_ADDRESSES, startDevChains, type DevChains } from '../../src/devchain';
import { createRefundEngine } from '../../src/jobs/refund.job';
import type { RefundStep } from '../../src/modules/refunds/refund.engine';
import { parseFunding } from '../../src/modules/refunds/refund.store';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { http } from '../support/http';
import { createMerchant } from '../support/fixtures';
import { eventually, fundedCustomer, pay, placeOrder, sql, T, WATCH_ENV } from '../support/evm-harness';

let chains: DevChains;
let gw: TestGateway;
let customer: string;
let target: WatchedNetwork;

beforeAll(async () => {
  chains = await startDevChains();
  gw = await startTestGateway({ ...WATCH_ENV, SANDBOX_ETHEREUM_CONFIRMATIONS: '2', WATCH_RUN_MS: '4000', REFUND_POLL_MS: '0' }, { devChains: chains });
  customer = await fundedCustomer(chains, CUSTOMER_PRIVATE_KEYS[1]!);
  target = watchedNetworks(gw.app.config, { 'sandbox:ETHEREUM': [chains.ETHEREUM.rpcUrl] }).find(
    (t) => t.environment === 'sandbox' && t.network === 'ETHEREUM',
  )!;
}, 120_000);
afterAll(async () => {
  await target?.adapter.close();
  await gw?.close();
  await chains?.stop();
});

it('a top-up included but short after a fee rise is topped up by the difference (stored before broadcast); the refund arrives exactly; the tank’s ledger counts both', async () => {
  const chain = chains.ETHEREUM;
  const mine = (n = 1) => chain.rpc.call('anvil_mine', [`0x${n.toString(16)}`]);
  const m = await createMerchant(gw.app); // no settlement wallet: nothing is swept
  await sql(gw.app, `insert into refund_settings (merchant_id, environment, auto_approve_limit) values (?, 'sandbox', 100)`, [m.merchantId]);
  await gw.app.reconciliation.tanks.open(gw.app.orm.em.fork(), target);
  const o = await placeOrder(gw.url, gw.app, m, 'ETHEREUM');
  const excess = 3_000_000n;
  await pay(chain, customer, o.address, o.total + excess);
  await eventually(
    async () => {
      await mine(2);
      return (await sql<{ status: string }>(gw.app, `select status from orders where id = ?`, [o.orderId]))[0]!.status === 'Success';
    },
    'order paid',
    60_000,
  );
  const to = Wallet.createRandom().address;
  const created = await http(gw.url, `${T}/merchant/fiat/refund`, {
    body: { merchant_id: m.merchantId, order_no: o.orderNo, kind: 'overpayment_excess', address: to },
    headers: { 'api-key': m.sandboxKey },
  });
  expect([created.status, created.body.data.request.status]).toEqual([201, 'approved']);
  const id = created.body.data.request.refund_id as string;
  const row = async () =>
    (
      await sql<{ status: string; funding_raw: string | null; funding_spent: string | null; failure_reason: string | null }>(
        gw.app,
        `select status, funding_raw, funding_spent::text, failure_reason from refunds where id = ?`,
        [id],
      )
    )[0]!;

  // The first top-up is signed and stored at today's fee (stopped before its broadcast), then broadcast and included.
  const stop = (step: RefundStep) => {
    if (step === 'fund-sign') throw Object.assign(new Error('stopped after storing the top-up'), { fatal: true });
  };
  await expect(createRefundEngine(gw.app, target, stop).tick(gw.app.orm.em.fork())).rejects.toThrow('stopped after storing the top-up');
  const first = parseFunding((await row()).funding_raw!);
  expect(first).toHaveLength(1);
  const engine = createRefundEngine(gw.app, target);
  await eventually(
    async () => {
      await engine.tick(gw.app.orm.em.fork());
      return (await chain.provider.getTransactionReceipt(first[0]!.txHash)) !== null;
    },
    'first top-up included',
    60_000,
  );
  // The fee rises tenfold before the transfer is signed and stays there (every block mined at it): what
  // the first top-up brought is short for good.
  const base = BigInt((await chain.provider.getBlock('latest'))!.baseFeePerGas!);
  const mineHigh = async () => {
    await chain.rpc.call('anvil_setNextBlockBaseFeePerGas', [`0x${(base * 10n).toString(16)}`]);
    await mine();
  };
  await mineHigh();
  await eventually(
    async () => {
      await engine.tick(gw.app.orm.em.fork());
      await mineHigh();
      const r = await row();
      if (r.status === 'failed') throw new Error(`refund failed: ${r.failure_reason}`);
      return r.status === 'confirmed';
    },
    'refund confirmed after a further top-up',
    90_000,
  );
  const done = await row();
  const funding = parseFunding(done.funding_raw!);
  // The first top-up kept as stored, a second one after it; both in blocks, their cost the tank's.
  expect(funding.map((f) => f.txHash)[0]).toBe(first[0]!.txHash);
  expect(funding).toHaveLength(2);
  for (const f of funding) expect([f.block !== null, (f.spent ?? 0n) > 0n]).toEqual([true, true]);
  expect(BigInt(done.funding_spent!)).toBe(funding[0]!.spent! + funding[1]!.spent!);
  expect(await balanceOf(chain, DEV_TOKEN_ADDRESSES.ETHEREUM.USDT, to)).toBe(excess);

  let run: Awaited<ReturnType<typeof gw.app.reconciliation.reconcile>> | undefined;
  await eventually(
    async () => {
      await mine();
      run = await gw.app.reconciliation.reconcile(gw.app.orm.em.fork(), target);
      return run.error === null && run.mismatches.length === 0;
    },
    'a clean reconciliation',
    60_000,
  ).catch((err: unknown) => {
    throw new Error(`${String(err)}: ${JSON.stringify(run)}`);
  });
  // The tank was compared too: its ledger is open and nothing of it is in flight.
  const book = await gw.app.reconciliation.tanks.book(gw.app.orm.em.fork(), target, gw.app.gasTanks.address('sandbox', 'ETHEREUM')!, 0n, BigInt(run!.atBlock!));
  expect([book.funded !== null, book.inFlight, book.after.length]).toEqual([true, false, 2]);
}, 240_000);
