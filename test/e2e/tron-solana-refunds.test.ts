/**
 * Refunds on the local TRON emulator (its resource model: energy, bandwidth and activation paid for
 * real) and the SOLANA facade (litesvm; the gas tank is the fee payer): an overpayment's excess goes
 * back from the deposit to the merchant-given address, exactly, through a crash between storing the
 * signed transfer and broadcasting it (a fresh engine broadcasts the same transaction); a refund above
 * what was received is refused; reconciliation stays clean. The refund engine is driven tick by tick.
 */
import { randomBytes } from 'node:crypto';
import { Connection, Keypair, LAMPORTS_PER_SOL, PublicKey, Transaction, sendAndConfirmTransaction } from '@solana/web3.js';
import {
  TOKEN_PROGRAM_ID,
  createAssociatedTokenAccountIdempotentInstruction,
  createTransferCheckedInstruction,
  getAssociatedTokenAddressSync,
} from '@solana/spl-token';
import type { TronWeb } from 'tronweb';
import { watchedNetworks, type WatchedNetwork } from '../../src/chains/networks';
import { tronDriver } from '../../src/chains/tron/tron.driver';
import { startSolanaFacade, type SolanaFacade } from '../../src/devchain/solana.facade';
import { startTronEmulator, type TronEmulator } from '../../src/devchain/tron.emulator';
import { createRefundEngine } from '../../src/jobs/refund.job';
import type { RefundStep } from '../../src/modules/refunds/refund.engine';
import { http } from '../support/http';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { checkout, eventually } from '../support/order-watch';
import { settlementReads } from '../support/settlement-scenarios';
import { tronCustomer, tronTransfer } from '../support/tron-wallet';
import { WATCH_ENV } from '../support/evm-harness';

const TRX = 1_000_000n;
let emu: TronEmulator;
let facade: SolanaFacade;
let gw: TestGateway;
let tronUsdt: string;
let tron: { address: string; wallet: TronWeb };
let mint: PublicKey;
let solCustomer: Keypair;
let sol: Connection;
const targets = new Map<string, WatchedNetwork>();

beforeAll(async () => {
  [emu, facade] = await Promise.all([startTronEmulator({ resources: true, solidityLag: 1 }), startSolanaFacade({ finalityLag: 1 })]);
  tronUsdt = await emu.deployToken({ name: 'Tether USD (emulator)', symbol: 'USDT', decimals: 6 });
  mint = await facade.createUsdcMint({ decimals: 6 });
  gw = await startTestGateway(
    {
      ...WATCH_ENV,
      DEV_CHAINS: 'false',
      SANDBOX_TRON_CONFIRMATIONS: '1',
      SANDBOX_SOLANA_CONFIRMATIONS: '1',
      SWEEP_POLL_MS: '200',
      REFUND_POLL_MS: '0',
      CLOSED_DEPOSIT_POLL_EVERY: '1',
    },
    { rpcOverrides: { 'sandbox:TRON': [emu.url], 'sandbox:SOLANA': [facade.url] } },
  );
  const em = gw.app.orm.em.fork();
  await gw.app.tokens.upsert(em, { environment: 'sandbox', network: 'TRON', symbol: 'USDT', name: 'Tether USD (emulator)', address: tronUsdt, decimals: 6 });
  await gw.app.tokens.upsert(em, {
    environment: 'sandbox',
    network: 'SOLANA',
    symbol: 'USDC',
    name: 'USD Coin (litesvm)',
    address: mint.toBase58(),
    decimals: 6,
  });
  tron = tronCustomer(emu);
  await emu.setTrx(tron.address, 100_000n * TRX);
  await emu.mint(tronUsdt, tron.address, 10n ** 12n);
  await emu.setTrx(gw.app.gasTanks.address('sandbox', 'TRON')!, 10_000n * TRX);
  sol = new Connection(facade.url, 'confirmed');
  solCustomer = await facade.fundedKeypair(5);
  await facade.mintTo(solCustomer.publicKey, mint, 10n ** 12n);
  const tank = new PublicKey(gw.app.gasTanks.address('sandbox', 'SOLANA')!);
  const sig = await sol.requestAirdrop(tank, 100 * LAMPORTS_PER_SOL);
  await sol.confirmTransaction({ signature: sig, ...(await sol.getLatestBlockhash('confirmed')) }, 'confirmed');
  for (const [n, url] of [
    ['TRON', emu.url],
    ['SOLANA', facade.url],
  ] as const) {
    targets.set(
      n,
      watchedNetworks(gw.app.config, { [`sandbox:${n}`]: [url] }).find((t) => t.environment === 'sandbox' && t.network === n)!,
    );
  }
}, 240_000);

afterAll(async () => {
  for (const t of targets.values()) await t.adapter.close();
  await gw?.close();
  await Promise.all([emu?.stop(), facade?.stop()]);
});

const { sql } = settlementReads(() => gw.app);

async function solSend(tx: Transaction): Promise<string> {
  for (let attempt = 1; ; attempt++) {
    tx.feePayer = solCustomer.publicKey;
    tx.recentBlockhash = (await sol.getLatestBlockhash('confirmed')).blockhash;
    try {
      return await sendAndConfirmTransaction(sol, tx, [solCustomer], { commitment: 'confirmed' });
    } catch (err) {
      if (attempt >= 3 || !String(err).includes('Blockhash not found')) throw err;
      facade.advanceSlots(1);
    }
  }
}

interface Net {
  network: 'TRON' | 'SOLANA';
  token: () => string;
  newAddress(): string;
  order(m: { merchantId: string; sandboxKey: string }): Promise<{ orderId: string; orderNo: string; address: string; total: bigint }>;
  pay(to: string, amount: bigint): Promise<unknown>;
  makeFinal(): Promise<unknown>;
}

const NETS: Net[] = [
  {
    network: 'TRON',
    token: () => tronUsdt,
    newAddress: () => tronDriver.deriveAddress(randomBytes(64), 0),
    order: (m) => checkout(gw.url, m.sandboxKey, { amountIdr: '150000', tokenAddress: tronUsdt, network: 'TRON', walletType: 'TRUSTWALLET' }),
    pay: (to, amount) => tronTransfer(emu, tron.wallet, tron.address, tronUsdt, to, amount),
    makeFinal: () => emu.mine(emu.solidityLag + 1),
  },
  {
    network: 'SOLANA',
    token: () => mint.toBase58(),
    newAddress: () => Keypair.generate().publicKey.toBase58(),
    order: (m) => checkout(gw.url, m.sandboxKey, { amountIdr: '150000', tokenAddress: mint.toBase58(), network: 'SOLANA', walletType: 'PHANTOM' }),
    pay(to, amount) {
      const owner = new PublicKey(to);
      const source = getAssociatedTokenAddressSync(mint, solCustomer.publicKey, false, TOKEN_PROGRAM_ID);
      const dest = getAssociatedTokenAddressSync(mint, owner, false, TOKEN_PROGRAM_ID);
      return solSend(
        new Transaction().add(
          createAssociatedTokenAccountIdempotentInstruction(solCustomer.publicKey, dest, owner, mint, TOKEN_PROGRAM_ID),
          createTransferCheckedInstruction(source, mint, dest, solCustomer.publicKey, amount, 6, [], TOKEN_PROGRAM_ID),
        ),
      );
    },
    makeFinal: async () => facade.advanceSlots(facade.slot() - facade.finalizedSlot() + 1),
  },
];

describe.each(NETS)('$network', (net) => {
  const target = () => targets.get(net.network)!;
  const balance = async (owner: string) =>
    (await target().adapter.balances!.tokenBalances([{ owner, token: { address: net.token(), decimals: 6, symbol: 'T' } }], null, 1))[0]!;
  /** The merchant's server asks over REST (legacy style, `api-key`). */
  const requestRefund = (m: { merchantId: string; sandboxKey: string }, body: Record<string, unknown>) =>
    http(gw.url, '/api/v2/testnet/merchant/fiat/refund', { body: { merchant_id: m.merchantId, ...body }, headers: { 'api-key': m.sandboxKey } });

  it('an overpayment’s excess reaches the given address exactly, through a crash between storing and broadcasting (the same transaction); above received is refused; the books close', async () => {
    const m = await createMerchant(gw.app); // no settlement wallet: nothing is swept
    // Gateway-offered kinds up to 100 tokens are approved without a person.
    await sql(`insert into refund_settings (merchant_id, environment, auto_approve_limit) values (?, 'sandbox', 100)`, [m.merchantId]);
    const o = await net.order(m);
    const excess = 2_500_000n;
    await net.pay(o.address, o.total + excess);
    await eventually(
      async () => {
        await net.makeFinal();
        return (await sql<{ status: string }>(`select status from orders where id = ?`, [o.orderId]))[0]!.status === 'Success';
      },
      `${net.network}: order paid`,
      90_000,
    );
    const above = await requestRefund(m, { order_no: o.orderNo, kind: 'merchant', amount: (o.total + excess + 1n).toString(), address: net.newAddress() });
    expect([above.status, above.body.status_code, above.body.data.code]).toEqual([422, 422, 'REFUND_EXCEEDS_RECEIVED']);
    const ours = await requestRefund(m, { order_no: o.orderNo, kind: 'overpayment_excess', address: o.address });
    expect([ours.status, ours.body.data.code]).toEqual([422, 'REFUND_ADDRESS_REFUSED']);
    const bad = await requestRefund(m, { order_no: o.orderNo, kind: 'overpayment_excess', address: 'nope' });
    expect([bad.status, bad.body.data.code]).toEqual([422, 'REFUND_ADDRESS_REFUSED']);
    const to = net.newAddress();
    const created = await requestRefund(m, { order_no: o.orderNo, kind: 'overpayment_excess', address: to });
    expect(created.status).toBe(201);
    const refund = { id: created.body.data.request.refund_id as string };
    expect(created.body.data.request).toEqual(
      expect.objectContaining({ status: 'approved', source: 'deposit', amount_units: excess.toString(), approved_by: 'auto', to_address: to }),
    );
    expect(created.body.data.claim_url).toBeNull();
    const listed = await http(gw.url, `/api/v2/testnet/merchant/fiat/refunds?network=${net.network}`, { method: 'GET', headers: { 'api-key': m.sandboxKey } });
    expect(listed.body.data.items.map((r: { refund_id: string }) => r.refund_id)).toEqual([refund.id]);

    const crash = (step: RefundStep) => {
      if (step === 'send-sign') throw Object.assign(new Error('simulated crash after send-sign'), { fatal: true });
    };
    const dying = createRefundEngine(gw.app, target(), crash);
    await eventually(
      async () => {
        try {
          await dying.tick(gw.app.orm.em.fork());
        } catch (err) {
          if ((err as { fatal?: boolean }).fatal) return true;
          throw err;
        }
        await net.makeFinal();
        return false;
      },
      `${net.network}: transfer signed and stored`,
      90_000,
    );
    const [stored] = await sql<{ status: string; tx_hash: string; raw_tx: string }>(`select status, tx_hash, raw_tx from refunds where id = ?`, [refund.id]);
    expect(stored!.status).toBe('sending');
    const fresh = createRefundEngine(gw.app, target());
    await eventually(
      async () => {
        await fresh.tick(gw.app.orm.em.fork());
        await net.makeFinal();
        const [r] = await sql<{ status: string; failure_reason: string | null }>(`select status, failure_reason from refunds where id = ?`, [refund.id]);
        if (r!.status === 'failed') throw new Error(`refund failed: ${r!.failure_reason}`);
        return r!.status === 'confirmed';
      },
      `${net.network}: refund confirmed`,
      120_000,
    );
    const [done] = await sql<{ tx_hash: string; raw_tx: string }>(`select tx_hash, raw_tx from refunds where id = ?`, [refund.id]);
    expect(done).toEqual({ tx_hash: stored!.tx_hash, raw_tx: stored!.raw_tx });
    expect(await balance(to)).toBe(excess);
    expect(await balance(o.address)).toBe(o.total);

    let run: Awaited<ReturnType<typeof gw.app.reconciliation.reconcile>> | undefined;
    await eventually(
      async () => {
        await net.makeFinal();
        run = await gw.app.reconciliation.reconcile(gw.app.orm.em.fork(), target());
        return run.error === null && run.mismatches.length === 0;
      },
      `${net.network}: a clean reconciliation`,
      60_000,
    ).catch((err: unknown) => {
      throw new Error(`${String(err)}: ${JSON.stringify(run)}`);
    });
    expect(run!.checked).toBeGreaterThan(0);
  }, 300_000);
});
