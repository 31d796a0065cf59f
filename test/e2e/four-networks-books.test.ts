/**
 * The books close on all four networks at once: one gateway watching ETHEREUM and BINANCE (anvil),
 * TRON (the emulator with its resource model: fees, activation and bandwidth are paid for real) and
 * SOLANA (litesvm facade). On each network a merchant's order is paid, native coin is sent to the
 * same deposit, everything is swept to the merchant's settlement wallet (the token, then the coin),
 * and the operator CLI's `reconcile --json` (the built dist/, as a process) reports every network
 * clean: every deposit's tokens and native coin match the ledger. Each order is overpaid and its excess
 * refunded (the worker's refund engine) to a merchant-given address before any native coin arrives,
 * with every gas tank's ledger opened first (`gas-tank ledger-open`): the tank's top-up of the deposit
 * (ETHEREUM, BINANCE, TRON) or the fee it pays as fee payer (SOLANA) is counted as tank spending, so
 * every tank's balance = funded − spent too. Nothing mocked.
 */
import { randomBytes } from 'node:crypto';
import { Keypair, LAMPORTS_PER_SOL, PublicKey, SystemProgram, Transaction, sendAndConfirmTransaction, Connection } from '@solana/web3.js';
import {
  TOKEN_PROGRAM_ID,
  createAssociatedTokenAccountIdempotentInstruction,
  createTransferCheckedInstruction,
  getAssociatedTokenAddressSync,
} from '@solana/spl-token';
import { Wallet } from 'ethers';
import type { TronWeb } from 'tronweb';
import { tronDriver } from '../../src/chains/tron/tron.driver';
import { CUSTOMER_PRIVATE_KEYS, startDevChains, type DevChains } from '../../src/devchain';
import { startSolanaFacade, type SolanaFacade } from '../../src/devchain/solana.facade';
import { startTronEmulator, type TronEmulator } from '../../src/devchain/tron.emulator';
import type { ReconciliationRun } from '../../src/modules/reconciliation/reconciliation.service';
import { fundedCustomer, pay as payEvm, placeOrder, WATCH_ENV, type EvmNet } from '../support/evm-harness';
import { createMerchant } from '../support/fixtures';
import { TEST_JWT_SECRET, TEST_MASTER_KEY, startTestGateway, type TestGateway } from '../support/gateway';
import { http } from '../support/http';
import { checkout, eventually } from '../support/order-watch';
import { bareEnv, CLI_JS, requireDist, runProcess } from '../support/process';
import { settlementReads } from '../support/settlement-scenarios';
import { tronCustomer, tronSendTrx, tronTransfer } from '../support/tron-wallet';

const TRX = 1_000_000n;
let chains: DevChains;
let emu: TronEmulator;
let facade: SolanaFacade;
let gw: TestGateway;
let evmCustomer: string;
let tronUsdt: string;
let tron: { address: string; wallet: TronWeb };
let mint: PublicKey;
let solCustomer: Keypair;
let sol: Connection;

beforeAll(async () => {
  requireDist(CLI_JS);
  [chains, emu, facade] = await Promise.all([startDevChains(), startTronEmulator({ resources: true, solidityLag: 1 }), startSolanaFacade({ finalityLag: 1 })]);
  tronUsdt = await emu.deployToken({ name: 'Tether USD (emulator)', symbol: 'USDT', decimals: 6 });
  mint = await facade.createUsdcMint({ decimals: 6 });
  gw = await startTestGateway(
    {
      ...WATCH_ENV,
      SANDBOX_ETHEREUM_CONFIRMATIONS: '1',
      SANDBOX_BINANCE_CONFIRMATIONS: '1',
      SANDBOX_TRON_CONFIRMATIONS: '1',
      SANDBOX_SOLANA_CONFIRMATIONS: '1',
      SWEEP_POLL_MS: '200',
      REFUND_POLL_MS: '200',
      // TRON's sweep of a ~9 USDT order costs a few TRX (burnt energy): not dust here.
      SWEEP_DUST_PERCENT: '100',
      CLOSED_DEPOSIT_POLL_EVERY: '1',
    },
    { devChains: chains, rpcOverrides: { 'sandbox:TRON': [emu.url], 'sandbox:SOLANA': [facade.url] } },
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
  evmCustomer = await fundedCustomer(chains, CUSTOMER_PRIVATE_KEYS[1]!);
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
}, 240_000);

afterAll(async () => {
  await gw?.close();
  await Promise.all([chains?.stop(), emu?.stop(), facade?.stop()]);
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
  network: 'ETHEREUM' | 'BINANCE' | 'TRON' | 'SOLANA';
  settlement: string;
  newAddress(): string;
  order(m: { merchantId: string; sandboxKey: string }): Promise<{ orderId: string; orderNo: string; address: string; total: bigint }>;
  pay(to: string, amount: bigint): Promise<unknown>;
  sendNative(to: string): Promise<unknown>;
  makeFinal(): Promise<unknown>;
}

const evm = (network: EvmNet): Net => ({
  network,
  settlement: Wallet.createRandom().address,
  newAddress: () => Wallet.createRandom().address,
  order: (m) => placeOrder(gw.url, gw.app, m, network),
  pay: (to, amount) => payEvm(chains[network], evmCustomer, to, amount),
  async sendNative(to) {
    const wallet = new Wallet(evmCustomer, chains[network].provider);
    const gas = network === 'BINANCE' ? { type: 0, gasPrice: BigInt(await chains[network].rpc.call<string>('eth_gasPrice', [])) } : {};
    await (await wallet.sendTransaction({ to, value: 10n ** 16n, ...gas })).wait();
  },
  makeFinal: () => chains[network].rpc.call('anvil_mine', ['0x2']),
});

const NETS: Net[] = [
  evm('ETHEREUM'),
  evm('BINANCE'),
  {
    network: 'TRON',
    settlement: tronDriver.deriveAddress(randomBytes(64), 0),
    newAddress: () => tronDriver.deriveAddress(randomBytes(64), 0),
    order: (m) => checkout(gw.url, m.sandboxKey, { amountIdr: '150000', tokenAddress: tronUsdt, network: 'TRON', walletType: 'TRUSTWALLET' }),
    pay: (to, amount) => tronTransfer(emu, tron.wallet, tron.address, tronUsdt, to, amount),
    sendNative: (to) => tronSendTrx(emu, tron.wallet, tron.address, to, 100n * TRX),
    makeFinal: () => emu.mine(emu.solidityLag + 1),
  },
  {
    network: 'SOLANA',
    settlement: Keypair.generate().publicKey.toBase58(),
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
    sendNative: (to) =>
      solSend(
        new Transaction().add(SystemProgram.transfer({ fromPubkey: solCustomer.publicKey, toPubkey: new PublicKey(to), lamports: LAMPORTS_PER_SOL / 10 })),
      ),
    makeFinal: async () => facade.advanceSlots(facade.slot() - facade.finalizedSlot() + 1),
  },
];

it('payments (overpaid, the excess refunded) and native coin on ETHEREUM, BINANCE, TRON and SOLANA, all swept, the gas tanks’ ledgers open: the CLI reports reconciliation clean on every network', async () => {
  const { config } = gw.app;
  const env = bareEnv({
    DATABASE_URL: config.DATABASE_URL,
    DATA_DIR: config.DATA_DIR,
    MASTER_KEY: TEST_MASTER_KEY,
    JWT_SECRET: TEST_JWT_SECRET,
    NODE_ENV: 'test',
    LOG_LEVEL: 'silent',
    // as the gateway runs: the local chains' profile (their chain ids), at the URLs given below
    DEV_CHAINS: String(config.DEV_CHAINS),
    SANDBOX_ETHEREUM_RPC_URLS: chains.ETHEREUM.rpcUrl,
    SANDBOX_BINANCE_RPC_URLS: chains.BINANCE.rpcUrl,
    SANDBOX_TRON_RPC_URLS: emu.url,
    SANDBOX_SOLANA_RPC_URLS: facade.url,
  });
  // Every tank's ledger opened before anything moves: from here on its balance must be funded − spent.
  for (const net of NETS) {
    const opened = await runProcess(
      process.execPath,
      [CLI_JS, 'gas-tank', 'ledger-open', '--environment', 'sandbox', '--network', net.network, '--json'],
      env,
      120_000,
    );
    expect({ network: net.network, code: opened.code, stderr: opened.stderr }).toEqual({ network: net.network, code: 0, stderr: '' });
  }
  const m = await createMerchant(gw.app);
  // Gateway-offered kinds up to 100 tokens are approved without a person.
  await sql(`insert into refund_settings (merchant_id, environment, auto_approve_limit) values (?, 'sandbox', 100)`, [m.merchantId]);
  const excess = 1_500_000n;
  const deposits: { net: Net; depositId: string; address: string; orderNo: string; orderId: string }[] = [];
  for (const net of NETS) {
    const o = await net.order(m);
    await net.pay(o.address, o.total + excess);
    const [d] = await sql<{ id: string }>('select id from deposits where order_id = ?', [o.orderId]);
    deposits.push({ net, depositId: d!.id, address: o.address, orderNo: o.orderNo, orderId: o.orderId });
  }
  // Each order paid, its excess refunded from the deposit (no native coin there yet: the tank pays the gas).
  const refunds: { net: Net; id: string }[] = [];
  for (const { net, orderId, orderNo } of deposits) {
    await eventually(
      async () => {
        await net.makeFinal();
        return (await sql<{ status: string }>(`select status from orders where id = ?`, [orderId]))[0]!.status === 'Success';
      },
      `${net.network}: order paid`,
      90_000,
    );
    const created = await http(gw.url, '/api/v2/testnet/merchant/fiat/refund', {
      body: { merchant_id: m.merchantId, order_no: orderNo, kind: 'overpayment_excess', address: net.newAddress() },
      headers: { 'api-key': m.sandboxKey },
    });
    expect([created.status, created.body.data.request?.status, created.body.data.request?.source]).toEqual([201, 'approved', 'deposit']);
    refunds.push({ net, id: created.body.data.request.refund_id as string });
  }
  for (const { net, id } of refunds) {
    await eventually(
      async () => {
        const [r] = await sql<{ status: string; failure_reason: string | null }>(`select status, failure_reason from refunds where id = ?`, [id]);
        if (r!.status === 'failed') throw new Error(`${net.network}: refund failed (${r!.failure_reason})`);
        if (r!.status === 'confirmed') return true;
        await net.makeFinal();
        return false;
      },
      `${net.network}: refund confirmed`,
      150_000,
    );
  }
  // The tank paid for every refund, recorded once in a block (a top-up of the deposit, or the fee as fee
  // payer): with no sweep in flight either, the reconciliation below compares every tank.
  const paid = await sql<{ network: string; funding_spent: string | null; tank_spent: string | null }>(
    `select network, funding_spent::text, tank_spent::text from refunds where merchant_id = ? order by network`,
    [m.merchantId],
  );
  for (const p of paid) expect({ network: p.network, paid: BigInt(p.funding_spent ?? p.tank_spent ?? '0') > 0n }).toEqual({ network: p.network, paid: true });
  // Settlement wallets only now: nothing is swept before the refunds left the deposits.
  for (const { net, address } of deposits) {
    await sql(`insert into settlement_wallets (merchant_id, environment, network, address, active_from) values (?, 'sandbox', ?, ?, now())`, [
      m.merchantId,
      net.network,
      net.settlement,
    ]);
    await net.sendNative(address);
  }
  // Every payment and native receipt confirmed, then one "sweep now" per network.
  const received = (depositId: string) =>
    sql<{ n: number }>(
      `select (select count(*) from payments where deposit_id = ? and status = 'confirmed') + (select count(*) from unattributed_receipts where deposit_id = ? and reason = 'native_coin' and status = 'confirmed') as n`,
      [depositId, depositId],
    );
  for (const { net, depositId } of deposits) {
    await eventually(
      async () => {
        await net.makeFinal();
        return Number((await received(depositId))[0]!.n) === 2;
      },
      `${net.network}: payment and native coin confirmed`,
      90_000,
    );
    await sql(`insert into sweep_requests (merchant_id, environment, network) values (?, 'sandbox', ?)`, [m.merchantId, net.network]);
  }
  // Each deposit: its token swept, then its native coin.
  for (const { net, depositId } of deposits) {
    await eventually(
      async () => {
        const s = await sql<{ token_id: string | null; status: string; failure_reason: string | null }>(
          `select token_id, status, failure_reason from sweeps where deposit_id = ?`,
          [depositId],
        );
        const failed = s.find((x) => x.status === 'failed');
        if (failed) throw new Error(`${net.network}: sweep failed (${failed.failure_reason})`);
        if (s.length === 2 && s.every((x) => x.status === 'confirmed') && s.some((x) => x.token_id === null)) return true;
        await net.makeFinal();
        return false;
      },
      `${net.network}: token and native coin swept`,
      150_000,
    );
  }
  // No sweep transaction in flight anywhere: the runs below compare every address.
  await eventually(async () => (await sql(`select 1 from sweep_txs where state in ('signed','broadcast')`)).length === 0, 'nothing in flight', 60_000);

  const r = await runProcess(process.execPath, [CLI_JS, 'reconcile', '--environment', 'sandbox', '--json'], env, 120_000);
  const out = JSON.parse(r.stdout) as { runs: ReconciliationRun[]; mismatches: number };
  expect({ code: r.code, mismatches: out.runs.flatMap((x) => x.mismatches), errors: out.runs.map((x) => x.error) }).toEqual({
    code: 0,
    mismatches: [],
    errors: [null, null, null, null],
  });
  expect(out.runs.map((x) => x.network).sort()).toEqual(['BINANCE', 'ETHEREUM', 'SOLANA', 'TRON']);
  for (const run of out.runs) expect(run.checked).toBeGreaterThan(0);
  const text = await runProcess(process.execPath, [CLI_JS, 'reconcile', '--environment', 'sandbox'], env, 120_000);
  expect(text.code).toBe(0);
  for (const n of ['ETHEREUM', 'BINANCE', 'TRON', 'SOLANA'])
    expect(text.stdout).toMatch(new RegExp(`^sandbox:${n} at block \\d+: \\d+ checked, 0 mismatches$`, 'm'));
  // A network that cannot be compared (here ETHEREUM's URL serves BINANCE's chain) is no clean bill: exit 3, named.
  const blind = await runProcess(
    process.execPath,
    [CLI_JS, 'reconcile', '--environment', 'sandbox'],
    { ...env, SANDBOX_ETHEREUM_RPC_URLS: chains.BINANCE.rpcUrl },
    120_000,
  );
  expect(blind.code).toBe(3);
  expect(blind.stdout).toMatch(/^sandbox:ETHEREUM at block -: not compared \(.+\)$/m);
  expect(blind.stdout).toMatch(/^sandbox:BINANCE at block \d+: \d+ checked, 0 mismatches$/m);
}, 600_000);
