/**
 * Refunds on a local EVM chain, end to end: real gateway, PostgreSQL and anvil. The refund engine is
 * driven here tick by tick (REFUND_POLL_MS=0: the worker runs none), so a crash between signing and
 * broadcasting is a step this test takes, and the fresh engine after it is another instance. Sweeps
 * run as the worker runs them.
 */
import { Wallet } from 'ethers';
import { watchedNetworks, type WatchedNetwork } from '../../src/chains/networks';
import { balanceOf, CUSTOMER_PRIVATE_KEYS, DEV_TOKEN_ADDRESSES, mintTo, startDevChains, type DevChains } from '../../src/devchain';
import { createRefundEngine } from '../../src/jobs/refund.job';
import type { RefundStep } from '../../src/modules/refunds/refund.engine';
import { ApproveRefundDocument, CreateRefundDocument, OrderRefundsDocument, RefundWalletsDocument } from '../generated/graphql';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { bearer, gql } from '../support/graphql';
import { createMerchant } from '../support/fixtures';
import { eventually, fundedCustomer, pay, placeOrder, sql, WATCH_ENV, type EvmNet } from '../support/evm-harness';
import { freshLogin } from '../support/reauth';
import { csvRecords } from '../support/analytics';

let chains: DevChains;
let gw: TestGateway;
let customer: string;
const targets = new Map<EvmNet, WatchedNetwork>();

beforeAll(async () => {
  chains = await startDevChains();
  gw = await startTestGateway(
    {
      ...WATCH_ENV,
      SANDBOX_ETHEREUM_CONFIRMATIONS: '2',
      SANDBOX_BINANCE_CONFIRMATIONS: '2',
      SWEEP_POLL_MS: '200',
      WATCH_RUN_MS: '4000',
      REFUND_POLL_MS: '0',
    },
    { devChains: chains },
  );
  customer = await fundedCustomer(chains, CUSTOMER_PRIVATE_KEYS[1]!);
  for (const n of ['ETHEREUM', 'BINANCE'] as const)
    targets.set(
      n,
      watchedNetworks(gw.app.config, {
        [`sandbox:${n}`]: [chains[n].rpcUrl],
      }).find((t) => t.environment === 'sandbox' && t.network === n)!,
    );
}, 120_000);
afterAll(async () => {
  for (const t of targets.values()) await t.adapter.close();
  await gw?.close();
  await chains?.stop();
});

describe.each(['ETHEREUM', 'BINANCE'] as EvmNet[])('%s', (NETWORK) => {
  const target = () => targets.get(NETWORK)!;
  const chain = () => chains[NETWORK];
  const token = () => DEV_TOKEN_ADDRESSES[NETWORK].USDT;
  const mine = (n = 3) => chain().rpc.call('anvil_mine', [`0x${n.toString(16)}`]);
  const tokenBalance = (owner: string) => balanceOf(chain(), token(), owner);
  const apiKey = (k: string) => ({ 'api-key': k });
  const refundRow = async (id: string) =>
    (
      await sql<{
        status: string;
        tx_hash: string | null;
        raw_tx: string | null;
        source: string;
        from_address: string;
        sent_amount: string | null;
        failure_reason: string | null;
      }>(gw.app, `select status, tx_hash, raw_tx, source, from_address, sent_amount::text as sent_amount, failure_reason from refunds where id = ?`, [id])
    )[0]!;

  /** Ticks an engine (a fresh one unless given) and mines until the refund is final; fails on a failed refund. */
  async function untilConfirmed(id: string, engine = createRefundEngine(gw.app, target())) {
    await eventually(
      async () => {
        await engine.tick(gw.app.orm.em.fork());
        await mine();
        const r = await refundRow(id);
        if (r.status === 'failed') throw new Error(`refund failed: ${r.failure_reason}`);
        return r.status === 'confirmed';
      },
      `refund ${id} confirmed`,
      90_000,
    );
    return refundRow(id);
  }

  /** An order paid `amount` (confirmed and settled). */
  async function paidOrder(m: Awaited<ReturnType<typeof createMerchant>>, extra = 0n) {
    const o = await placeOrder(gw.url, gw.app, m, NETWORK);
    await pay(chain(), customer, o.address, o.total + extra);
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

  const claimToken = (url: string) => new URL(url).hash.replace(/^#token=/, '');

  it('an overpayment’s excess goes back from the deposit to the address the customer claimed, exactly, once; refund.* webhooks recorded', async () => {
    const m = await createMerchant(gw.app); // no settlement wallet: nothing is swept
    const excess = 7_250_000n * (NETWORK === 'BINANCE' ? 10n ** 12n : 1n); // 7.25 tokens (BSC USDT has 18 decimals)
    const o = await paidOrder(m, excess);
    const created = await gql(
      gw.url,
      CreateRefundDocument,
      {
        environment: 'SANDBOX' as never,
        input: { orderId: o.orderId, kind: 'overpayment_excess' as never },
      },
      apiKey(m.sandboxKey),
    );
    expect(created.errors).toBeUndefined();
    const refund = created.data!.createRefund.refund;
    expect(refund).toEqual(
      expect.objectContaining({
        status: 'requested',
        kind: 'overpayment_excess',
        source: 'deposit',
        fromAddress: o.address,
        amount: expect.objectContaining({ units: excess.toString() }),
      }),
    );
    const url = created.data!.createRefund.claimUrl!;
    expect(url).toMatch(/\/refund#token=[A-Za-z0-9_-]{43}$/);
    // Only the hash is stored.
    expect(JSON.stringify(await sql(gw.app, `select * from refunds where id = ?`, [refund.id]))).not.toContain(claimToken(url));

    const info = await gw.app.refunds.claimInfo(gw.app.orm.em.fork(), claimToken(url));
    expect(info).toEqual(
      expect.objectContaining({
        open: true,
        network: NETWORK,
        amount: excess.toString(),
        tokenSymbol: 'USDT',
      }),
    );
    const to = Wallet.createRandom().address;
    const claimed = await gw.app.refunds.claim(gw.app.orm.em.fork(), claimToken(url), to.toLowerCase(), to.toLowerCase());
    expect(claimed).toEqual(
      expect.objectContaining({
        status: 'claimed',
        toAddress: to,
        open: false,
      }),
    );
    // A second claim of the same link is refused, nothing changes.
    const other = Wallet.createRandom().address;
    await expect(gw.app.refunds.claim(gw.app.orm.em.fork(), claimToken(url), other, other)).rejects.toMatchObject({ code: 'REFUND_STATE' });
    expect((await refundRow(refund.id)).status).toBe('claimed');

    // An API key cannot approve; the owner can, re-authenticated.
    const byKey = await gql(gw.url, ApproveRefundDocument, { environment: 'SANDBOX' as never, id: refund.id }, apiKey(m.sandboxKey));
    expect(byKey.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    const owner = await freshLogin(gw.url, m);
    const approved = await gql(gw.url, ApproveRefundDocument, { environment: 'SANDBOX' as never, id: refund.id }, bearer(owner));
    expect(approved.errors).toBeUndefined();
    expect(approved.data!.approveRefund.status).toBe('approved');

    const done = await untilConfirmed(refund.id);
    expect(done).toEqual(
      expect.objectContaining({
        status: 'confirmed',
        sent_amount: excess.toString(),
        source: 'deposit',
      }),
    );
    expect(await tokenBalance(to)).toBe(excess);
    expect(await tokenBalance(o.address)).toBe(o.total);
    // Revenue nets the refund out: the order received exactly what it asked (its locked IDR total), not the excess.
    const [rev] = await sql<{ received_idr: string; total_idr: string }>(
      gw.app,
      `select o.received_idr::text as received_idr, q.total_idr::text as total_idr from orders o join deposits d on d.order_id = o.id join quotes q on q.id = d.quote_id where o.id = ?`,
      [o.orderId],
    );
    expect(rev!.received_idr).toBe(rev!.total_idr);
    // The orders CSV shows the same netted figure and what the refund took back.
    const exported = await fetch(`${gw.url}/api/v2/testnet/merchant/export/orders.csv`, { headers: bearer(owner) });
    const row = csvRecords(await exported.text()).find((r) => r.order_no === o.orderNo)!;
    expect(row.received_idr).toBe(rev!.total_idr);
    expect(BigInt(row.refunded_idr!)).toBe((BigInt(rev!.total_idr) * excess) / o.total);
    expect(BigInt(row.refunded_idr!)).toBeGreaterThan(0n);
    const events = await sql<{ type: string }>(gw.app, `select type from merchant_events where merchant_id = ? and type like 'refund.%' order by seq`, [
      m.merchantId,
    ]);
    expect(events.map((e) => e.type)).toEqual(['refund.created', 'refund.claimed', 'refund.sent', 'refund.confirmed']);
    // The order shows its refund.
    const view = await gql(gw.url, OrderRefundsDocument, { environment: 'SANDBOX' as never, orderNo: o.orderNo }, apiKey(m.sandboxKey));
    expect(view.data!.order.refunds).toEqual([
      expect.objectContaining({
        id: refund.id,
        status: 'confirmed',
        kind: 'overpayment_excess',
      }),
    ]);
    // Nothing more is refundable as excess: the offer is used up.
    const again = await gql(
      gw.url,
      CreateRefundDocument,
      {
        environment: 'SANDBOX' as never,
        input: {
          orderId: o.orderId,
          kind: 'overpayment_excess' as never,
          amount: '1',
        },
      },
      apiKey(m.sandboxKey),
    );
    expect(again.errors?.[0]?.extensions?.code).toBe('REFUND_EXCEEDS_RECEIVED');
  }, 180_000);

  it('a refund above what was received is refused and changes nothing; a kind the order does not offer is refused', async () => {
    const m = await createMerchant(gw.app);
    const o = await paidOrder(m);
    const above = await gql(
      gw.url,
      CreateRefundDocument,
      {
        environment: 'SANDBOX' as never,
        input: {
          orderId: o.orderId,
          kind: 'merchant' as never,
          amount: (o.total + 1n).toString(),
          address: Wallet.createRandom().address,
        },
      },
      apiKey(m.sandboxKey),
    );
    expect(above.errors?.[0]?.extensions?.code).toBe('REFUND_EXCEEDS_RECEIVED');
    const excess = await gql(
      gw.url,
      CreateRefundDocument,
      {
        environment: 'SANDBOX' as never,
        input: { orderId: o.orderId, kind: 'overpayment_excess' as never },
      },
      apiKey(m.sandboxKey),
    );
    expect(excess.errors?.[0]?.extensions?.code).toBe('REFUND_NOT_OFFERED');
    // Two refunds that together exceed it: the second is refused.
    const first = await gql(
      gw.url,
      CreateRefundDocument,
      {
        environment: 'SANDBOX' as never,
        input: {
          orderId: o.orderId,
          kind: 'merchant' as never,
          amount: (o.total - 5n).toString(),
        },
      },
      apiKey(m.sandboxKey),
    );
    expect(first.errors).toBeUndefined();
    const second = await gql(
      gw.url,
      CreateRefundDocument,
      {
        environment: 'SANDBOX' as never,
        input: { orderId: o.orderId, kind: 'merchant' as never, amount: '6' },
      },
      apiKey(m.sandboxKey),
    );
    expect(second.errors?.[0]?.extensions?.code).toBe('REFUND_EXCEEDS_RECEIVED');
    expect(await sql(gw.app, `select id from refunds where order_id = ?`, [o.orderId])).toHaveLength(1);
  }, 120_000);

  it('a claim with a malformed, a deposit, a gas tank or a contract address is refused and changes nothing', async () => {
    const m = await createMerchant(gw.app);
    const o = await paidOrder(m);
    const created = await gql(
      gw.url,
      CreateRefundDocument,
      {
        environment: 'SANDBOX' as never,
        input: {
          orderId: o.orderId,
          kind: 'merchant' as never,
          amount: '1000',
        },
      },
      apiKey(m.sandboxKey),
    );
    const t = claimToken(created.data!.createRefund.claimUrl!);
    const other = await placeOrder(gw.url, gw.app, m, NETWORK);
    const tank = gw.app.gasTanks.address('sandbox', NETWORK)!;
    const claim = (a: string) => gw.app.refunds.claim(gw.app.orm.em.fork(), t, a, a);
    for (const bad of ['0x1234', 'not an address', '0x0000000000000000000000000000000000000000'])
      await expect(claim(bad)).rejects.toMatchObject({
        code: 'REFUND_ADDRESS_REFUSED',
      });
    await expect(claim(o.address)).rejects.toMatchObject({
      code: 'REFUND_ADDRESS_REFUSED',
    });
    await expect(claim(other.address)).rejects.toMatchObject({
      code: 'REFUND_ADDRESS_REFUSED',
    });
    await expect(claim(tank)).rejects.toMatchObject({
      code: 'REFUND_ADDRESS_REFUSED',
    });
    await expect(claim(token())).rejects.toMatchObject({
      code: 'REFUND_ADDRESS_REFUSED',
      message: expect.stringContaining('contract'),
    });
    // The two entries differ: refused before anything is looked up.
    await expect(gw.app.refunds.claim(gw.app.orm.em.fork(), t, Wallet.createRandom().address, Wallet.createRandom().address)).rejects.toMatchObject({
      code: 'VALIDATION_FAILED',
    });
    await expect(gw.app.refunds.claimInfo(gw.app.orm.em.fork(), 'x'.repeat(43))).rejects.toMatchObject({ code: 'CLAIM_NOT_FOUND' });
    expect(await refundRow(created.data!.createRefund.refund.id)).toEqual(expect.objectContaining({ status: 'requested' }));
  }, 120_000);

  it('a partial refund of a paid, already-swept order is paid from the merchant’s refund wallet', async () => {
    const m = await createMerchant(gw.app);
    const settlement = Wallet.createRandom().address;
    await sql(gw.app, `insert into settlement_wallets (merchant_id, environment, network, address, active_from) values (?, 'sandbox', ?, ?, now())`, [
      m.merchantId,
      NETWORK,
      settlement,
    ]);
    const o = await paidOrder(m);
    await eventually(
      async () => {
        await mine();
        return (await tokenBalance(settlement)) === o.total;
      },
      'order swept',
      90_000,
    );
    const wallets = await gql(gw.url, RefundWalletsDocument, { environment: 'SANDBOX' as never }, apiKey(m.sandboxKey));
    const wallet = wallets.data!.refundWallets.find((w) => w.network === NETWORK)!;
    const part = o.total / 3n;
    await mintTo(chain(), 'USDT', wallet.address, part);
    const to = Wallet.createRandom().address;
    const created = await gql(
      gw.url,
      CreateRefundDocument,
      {
        environment: 'SANDBOX' as never,
        input: {
          orderId: o.orderId,
          kind: 'merchant' as never,
          amount: part.toString(),
          address: to,
          reason: 'returned goods',
        },
      },
      apiKey(m.sandboxKey),
    );
    expect(created.errors).toBeUndefined();
    const refund = created.data!.createRefund.refund;
    expect(refund).toEqual(
      expect.objectContaining({
        status: 'claimed',
        source: 'refund_wallet',
        fromAddress: wallet.address,
        toAddress: to,
        addressSource: 'merchant',
      }),
    );
    expect(created.data!.createRefund.claimUrl).toBeNull();
    const balances = (await gql(gw.url, RefundWalletsDocument, { environment: 'SANDBOX' as never }, apiKey(m.sandboxKey))).data!.refundWallets.find(
      (w) => w.network === NETWORK,
    )!.balances!;
    expect(balances.find((b) => b.tokenSymbol === 'USDT')!.amount.units).toBe(part.toString());
    const owner = await freshLogin(gw.url, m);
    expect((await gql(gw.url, ApproveRefundDocument, { environment: 'SANDBOX' as never, id: refund.id }, bearer(owner))).errors).toBeUndefined();
    await untilConfirmed(refund.id);
    expect(await tokenBalance(to)).toBe(part);
    expect(await tokenBalance(wallet.address)).toBe(0n);
    expect(await tokenBalance(settlement)).toBe(o.total);
  }, 180_000);

  it('a crash between storing the signed transfer and broadcasting it: a fresh engine broadcasts the SAME transaction, one transfer reaches the customer', async () => {
    const m = await createMerchant(gw.app);
    const o = await paidOrder(m, 3_000_000n);
    const to = Wallet.createRandom().address;
    const created = await gql(
      gw.url,
      CreateRefundDocument,
      {
        environment: 'SANDBOX' as never,
        input: {
          orderId: o.orderId,
          kind: 'overpayment_excess' as never,
          address: to,
        },
      },
      apiKey(m.sandboxKey),
    );
    const id = created.data!.createRefund.refund.id;
    const owner = await freshLogin(gw.url, m);
    expect((await gql(gw.url, ApproveRefundDocument, { environment: 'SANDBOX' as never, id }, bearer(owner))).errors).toBeUndefined();
    const crash = (step: RefundStep) => {
      if (step === 'send-sign')
        throw Object.assign(new Error('simulated crash after send-sign'), {
          fatal: true,
        });
    };
    const dying = createRefundEngine(gw.app, target(), crash);
    // Ticks until the transfer is signed and stored (the gas top-up goes first), then "dies" before broadcasting.
    await eventually(
      async () => {
        try {
          await dying.tick(gw.app.orm.em.fork());
        } catch (err) {
          if ((err as { fatal?: boolean }).fatal) return true;
          throw err;
        }
        await mine(1);
        return false;
      },
      'transfer signed and stored',
      60_000,
    );
    const stored = await refundRow(id);
    expect(stored.status).toBe('sending');
    expect(stored.tx_hash).toMatch(/^0x[0-9a-f]{64}$/);
    // Never broadcast: the node does not know it.
    expect(await chain().rpc.call('eth_getTransactionByHash', [stored.tx_hash])).toBeNull();
    const done = await untilConfirmed(id, createRefundEngine(gw.app, target()));
    expect(done.tx_hash).toBe(stored.tx_hash);
    expect(done.raw_tx).toBe(stored.raw_tx);
    expect(await tokenBalance(to)).toBe(3_000_000n);
    const receipt = await chain().rpc.call<{ status: string } | null>('eth_getTransactionReceipt', [stored.tx_hash]);
    expect(receipt?.status).toBe('0x1');
  }, 180_000);

  it('a refund transfer reorganised away is broadcast again, the SAME transaction, and confirmed once: one transfer reaches the customer', async () => {
    const m = await createMerchant(gw.app);
    const o = await paidOrder(m, 2_000_000n);
    const to = Wallet.createRandom().address;
    const created = await gql(
      gw.url,
      CreateRefundDocument,
      { environment: 'SANDBOX' as never, input: { orderId: o.orderId, kind: 'overpayment_excess' as never, address: to } },
      apiKey(m.sandboxKey),
    );
    const id = created.data!.createRefund.refund.id;
    const owner = await freshLogin(gw.url, m);
    expect((await gql(gw.url, ApproveRefundDocument, { environment: 'SANDBOX' as never, id }, bearer(owner))).errors).toBeUndefined();
    // Three confirmations: a window in which the transfer is in a block and not final yet.
    const deep = { ...target(), config: { ...target().config, confirmations: 3 } };
    const stopAtSign = (step: RefundStep) => {
      if (step === 'send-sign') throw Object.assign(new Error('stop before broadcasting'), { fatal: true });
    };
    const signing = createRefundEngine(gw.app, deep, stopAtSign);
    await eventually(
      async () => {
        try {
          await signing.tick(gw.app.orm.em.fork());
        } catch (err) {
          if ((err as { fatal?: boolean }).fatal) return true;
          throw err;
        }
        await mine(1);
        return false;
      },
      'transfer signed and stored',
      60_000,
    );
    // The chain before the transfer's block: reverted to below, other (empty) blocks take its height.
    const beforeTransfer = await chain().rpc.call<string>('evm_snapshot', []);
    const engine = createRefundEngine(gw.app, deep);
    const blockOf = async () => (await sql<{ block_hash: string | null }>(gw.app, `select block_hash from refunds where id = ?`, [id]))[0]!.block_hash;
    await eventually(async () => (await engine.tick(gw.app.orm.em.fork()), (await blockOf()) !== null), 'transfer in a block', 60_000);
    const first = { ...(await refundRow(id)), block_hash: await blockOf() };
    expect(first.status).toBe('sending');
    expect(await tokenBalance(to)).toBe(2_000_000n);
    await chain().rpc.call('evm_revert', [beforeTransfer]);
    await mine(2);
    expect(await tokenBalance(to)).toBe(0n);
    const done = await untilConfirmed(id, engine);
    expect(done.tx_hash).toBe(first.tx_hash);
    expect(done.raw_tx).toBe(first.raw_tx);
    expect(await blockOf()).not.toBe(first.block_hash);
    expect(await tokenBalance(to)).toBe(2_000_000n);
    const receipt = await chain().rpc.call<{ status: string } | null>('eth_getTransactionReceipt', [first.tx_hash]);
    expect(receipt?.status).toBe('0x1');
  }, 180_000);

  it('a wrong-token receipt goes back in the token that arrived, to the claimed address, exactly; the receipt shows its refund', async () => {
    const m = await createMerchant(gw.app);
    const o = await placeOrder(gw.url, gw.app, m, NETWORK);
    const wrong = 4_500_000n;
    await pay(chain(), customer, o.address, wrong, 'USDC');
    let receiptId = '';
    await eventually(
      async () => {
        await mine();
        const [r] = await sql<{ id: string }>(
          gw.app,
          `select id from unattributed_receipts where order_id = ? and reason = 'wrong_token' and status = 'confirmed'`,
          [o.orderId],
        );
        receiptId = r?.id ?? '';
        return receiptId !== '';
      },
      'wrong-token receipt confirmed',
      60_000,
    );
    const created = await gql(
      gw.url,
      CreateRefundDocument,
      {
        environment: 'SANDBOX' as never,
        input: { orderId: o.orderId, receiptId, kind: 'wrong_token' as never },
      },
      apiKey(m.sandboxKey),
    );
    expect(created.errors).toBeUndefined();
    const refund = created.data!.createRefund.refund;
    expect(refund).toEqual(
      expect.objectContaining({
        receiptId,
        tokenSymbol: 'USDC',
        source: 'deposit',
        amount: expect.objectContaining({ units: wrong.toString() }),
      }),
    );
    const to = Wallet.createRandom().address;
    await gw.app.refunds.claim(gw.app.orm.em.fork(), claimToken(created.data!.createRefund.claimUrl!), to, to);
    const owner = await freshLogin(gw.url, m);
    expect((await gql(gw.url, ApproveRefundDocument, { environment: 'SANDBOX' as never, id: refund.id }, bearer(owner))).errors).toBeUndefined();
    await untilConfirmed(refund.id);
    expect(await balanceOf(chain(), DEV_TOKEN_ADDRESSES[NETWORK].USDC, to)).toBe(wrong);
    expect(await balanceOf(chain(), DEV_TOKEN_ADDRESSES[NETWORK].USDC, o.address)).toBe(0n);
    const view = await gql(gw.url, OrderRefundsDocument, { environment: 'SANDBOX' as never, orderNo: o.orderNo }, apiKey(m.sandboxKey));
    expect(view.data!.order.unattributedReceipts.find((r) => r.id === receiptId)!.refunds).toEqual([
      expect.objectContaining({ id: refund.id, status: 'confirmed' }),
    ]);
  }, 180_000);

  it('the books close: reconciliation, at a block past every refund, finds no mismatch (refunded deposits included)', async () => {
    const [last] = await sql<{ block: string; n: string }>(
      gw.app,
      `select max(block_number)::text as block, count(*)::text as n from refunds where status = 'confirmed' and source = 'deposit' and network = ?`,
      [NETWORK],
    );
    expect(Number(last!.n)).toBeGreaterThanOrEqual(2);
    const refunded = await sql<{ from_address: string }>(
      gw.app,
      `select distinct from_address from refunds where status = 'confirmed' and source = 'deposit' and network = ?`,
      [NETWORK],
    );
    let run: Awaited<ReturnType<typeof gw.app.reconciliation.reconcile>> | undefined;
    await eventually(
      async () => {
        await mine();
        run = await gw.app.reconciliation.reconcile(gw.app.orm.em.fork(), target());
        return run.error === null && run.atBlock !== null && BigInt(run.atBlock) >= BigInt(last!.block);
      },
      'a reconciliation past the refunds',
      60_000,
    );
    expect(run!.mismatches).toEqual([]);
    expect(run!.checked).toBeGreaterThan(0);
    // Every refunded deposit is among the addresses compared (the family's deposits are all read).
    const compared = await sql<{ n: string }>(
      gw.app,
      `select count(*)::text as n from deposits where environment = 'sandbox' and family = 'evm' and address = any(?)`,
      [`{${refunded.map((r) => r.from_address).join(',')}}`],
    );
    expect(Number(compared[0]!.n)).toBe(refunded.length);
  }, 120_000);
});
