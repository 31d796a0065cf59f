/**
 * Crash safety of the sweep engine on anvil (sandbox ETHEREUM, the batch path of the dev chain and the
 * top-up path without it): paid deposits (fixture rows + real tokens minted to real HD deposit
 * addresses) are swept while the engine dies right after each step in turn — a fresh engine (new
 * process state, same database and chain) takes over. Also two engines racing on the same network.
 * Whatever happens: exactly one confirmed sweep per deposit, every nonce used once, and the
 * settlement wallet holds exactly what was paid.
 *
 * The crash here is simulated inside the process (the step throws and the engine is dropped, with
 * concurrency 1 so nothing of it keeps running); the built worker's `SWEEP_CRASH_AFTER` hook exits
 * the process hard at the same points.
 */
import { Interface, Wallet, toQuantity } from 'ethers';
import pino from 'pino';
import type { WatchedNetwork } from '../../src/chains/networks';
import { watchedNetworks } from '../../src/chains/networks';
import { DEPLOYER_ADDRESS, DEV_TOKEN_ADDRESSES, startDevChains, type DevChains } from '../../src/devchain';
import { SweepEngine, type SweepStep } from '../../src/modules/sweeps/sweep.engine';
import { startTestGateway, type TestGateway } from '../support/gateway';

const erc20 = new Interface(['function mint(address to, uint256 value)', 'function balanceOf(address) view returns (uint256)']);
const AMOUNT = 7_000_000n;
const STEPS: SweepStep[] = ['plan', 'funded', 'send-sign', 'send-broadcast', 'sent'];

let chains: DevChains;
let gw: TestGateway;
let target: WatchedNetwork;
let seq = 0;

beforeAll(async () => {
  chains = await startDevChains();
  gw = await startTestGateway({ DEV_CHAINS: 'true', SANDBOX_ETHEREUM_CONFIRMATIONS: '1', ROLE: 'api' });
  target = watchedNetworks(gw.app.config, { 'sandbox:ETHEREUM': [chains.ETHEREUM.rpcUrl] }).find((t) => t.environment === 'sandbox' && t.network === 'ETHEREUM')!;
});
afterAll(async () => {
  await gw?.close();
  await chains?.stop();
});

const sql = <R>(q: string, p: unknown[] = []) => gw.app.orm.em.fork().getConnection().execute<R[]>(q, p);

class Killed extends Error {
  readonly fatal = true;
}

function engine(crashAt?: SweepStep, confirmations = 1): SweepEngine {
  const app = gw.app;
  return new SweepEngine({
    environment: 'sandbox',
    network: 'ETHEREUM',
    adapter: target.adapter,
    confirmations,
    status: app.sweepStatus,
    tanks: app.gasTanks,
    wallets: app.wallets,
    log: pino({ level: 'silent' }),
    dustPercent: 5,
    nativePriceUsd: 3000,
    batchSize: 1,
    stuckAfterS: 3600,
    maxFeeBumpPercent: 300,
    concurrency: 1,
    crashPoint: (step) => {
      if (step === crashAt) throw new Killed(`killed after ${step}`);
    },
  });
}

/** A merchant with `n` paid deposits holding AMOUNT each on chain, and a settlement wallet. */
async function paidDeposits(n: number): Promise<{ merchantId: string; settlement: string; deposits: string[] }> {
  const em = gw.app.orm.em.fork();
  const merchantId = (await sql<{ id: string }>(`insert into merchants (id, name) values (gen_random_uuid(), 'Crash') returning id`))[0]!.id;
  const wallet = await gw.app.wallets.walletFor(em, merchantId, 'sandbox');
  const usdt = DEV_TOKEN_ADDRESSES.ETHEREUM.USDT;
  const [tok] = await sql<{ id: string }>(`select id from tokens where environment = 'sandbox' and network = 'ETHEREUM' and profile = 'local' and address = ?`, [usdt]);
  const deposits: string[] = [];
  for (let i = 0; i < n; i++) {
    const address = gw.app.wallets.deriveAddress(wallet, 'evm', i);
    const hash = await chains.ETHEREUM.rpc.call<string>('eth_sendTransaction', [{ from: DEPLOYER_ADDRESS, to: usdt, data: erc20.encodeFunctionData('mint', [address, AMOUNT]), gas: toQuantity(100_000n) }]);
    const k = `${++seq}-${Date.now()}`;
    const [d] = await sql<{ id: string }>(
      `with o as (insert into orders (id, merchant_id, environment, order_no, amount, status, expires_at) values (gen_random_uuid(), ?, 'sandbox', ?, 113750, 'Success', now() + interval '1 day') returning id),
       q as (insert into quotes (id, order_id, token_id, network, decimals, rate_source, crypto_rate, amount_idr, amount_crypto, fee_percent, fee_included, fee_amount_idr, fee_amount_crypto, total_idr, total_crypto, merchant_receives_idr, merchant_receives_crypto)
             select gen_random_uuid(), o.id, ?, 'ETHEREUM', 6, 'fallback', '16250', 113750, 7000000, '0', true, 0, 0, 113750, 7000000, 113750, 7000000 from o returning id, order_id),
       d as (insert into deposits (id, order_id, token_id, quote_id, wallet_id, environment, network, family, derivation_index, address, wallet_type, unique_code, unique_code_amount, total_amount, total_amount_fiat, expires_at, status, amount_received)
             select gen_random_uuid(), q.order_id, ?, q.id, ?, 'sandbox', 'ETHEREUM', 'evm', ?, ?, 'METAMASK', ?, 0, 7000000, 113750, now() + interval '1 day', 'settled', 7000000 from q returning id, order_id)
       insert into payments (id, environment, network, tx_hash, log_index, block_number, block_hash, token_id, deposit_id, order_id, from_address, to_address, amount, status, confirmed_at)
       select gen_random_uuid(), 'sandbox', 'ETHEREUM', ?, 0, 1, '0x00', ?, d.id, d.order_id, ?, ?, 7000000, 'confirmed', now() from d returning deposit_id as id`,
      [merchantId, `CRASH-${k}`, tok!.id, tok!.id, wallet.id, i, address, (seq % 999) + 1, hash, tok!.id, DEPLOYER_ADDRESS, address],
    );
    deposits.push(d!.id);
  }
  const settlement = Wallet.createRandom().address;
  await sql(`insert into settlement_wallets (merchant_id, environment, network, address, active_from) values (?, 'sandbox', 'ETHEREUM', ?, now())`, [merchantId, settlement]);
  return { merchantId, settlement, deposits };
}

const balanceOf = async (owner: string) =>
  BigInt(await chains.ETHEREUM.rpc.call<string>('eth_call', [{ to: DEV_TOKEN_ADDRESSES.ETHEREUM.USDT, data: erc20.encodeFunctionData('balanceOf', [owner]) }, 'latest']));

async function runUntilConfirmed(deposits: string[], make: () => SweepEngine[], maxTicks = 60): Promise<void> {
  for (let i = 0; i < maxTicks; i++) {
    await Promise.all(make().map((e) => e.tick(gw.app.orm.em.fork())));
    const [r] = await sql<{ n: number }>(`select count(*)::int as n from sweeps where deposit_id = any(?::uuid[]) and status = 'confirmed'`, [`{${deposits.join(',')}}`]);
    if (r!.n === deposits.length) return;
  }
  throw new Error('sweeps not all confirmed');
}

async function expectSweptOnce(deposits: string[], settlement: string): Promise<void> {
  const rows = await sql<{ deposit_id: string; status: string; amount: string }>(`select deposit_id, status, amount::text from sweeps where deposit_id = any(?::uuid[])`, [`{${deposits.join(',')}}`]);
  expect(rows).toHaveLength(deposits.length);
  expect(rows.every((r) => r.status === 'confirmed' && r.amount === AMOUNT.toString())).toBe(true);
  expect(await balanceOf(settlement)).toBe(AMOUNT * BigInt(deposits.length));
  // No nonce of any signer used by two included transactions, none skipped.
  const dup = await sql<{ n: number }>(`select count(*)::int as n from (select signer, nonce from sweep_txs where state = 'included' and nonce is not null group by 1, 2 having count(*) > 1) x`);
  expect(dup[0]!.n).toBe(0);
  const events = await sql<{ n: number }>(`select count(*)::int as n from merchant_events where type = 'sweep.completed' and payload->'depositIds'->>0 = any(?::text[])`, [`{${deposits.join(',')}}`]);
  expect(events[0]!.n).toBe(deposits.length);
}

it.each(STEPS)('killed right after %s: the next engine finishes; one sweep per deposit, all funds at the settlement wallet', async (step) => {
  const { settlement, deposits } = await paidDeposits(2);
  await sql(`insert into sweep_requests (merchant_id, environment, network) select merchant_id, 'sandbox', 'ETHEREUM' from settlement_wallets where address = ?`, [settlement]);
  // The first engine dies at `step` (possibly more than once: every tick at that step), each next tick is a fresh one.
  let crashed = 0;
  for (let i = 0; i < 6; i++) {
    await engine(step)
      .tick(gw.app.orm.em.fork())
      .catch((err: unknown) => {
        if (!(err instanceof Killed)) throw err;
        crashed++;
      });
  }
  expect(crashed).toBeGreaterThan(0);
  await runUntilConfirmed(deposits, () => [engine()]);
  await expectSweptOnce(deposits, settlement);
}, 120_000);

it('two engines racing on the same network sweep each deposit once', async () => {
  const { settlement, deposits } = await paidDeposits(3);
  await sql(`insert into sweep_requests (merchant_id, environment, network) select merchant_id, 'sandbox', 'ETHEREUM' from settlement_wallets where address = ?`, [settlement]);
  await runUntilConfirmed(deposits, () => [engine(), engine()]);
  await expectSweptOnce(deposits, settlement);
}, 120_000);

it('a sweep reorged out goes back to sending, its stored transaction is broadcast again and confirmed once', async () => {
  const { settlement, deposits } = await paidDeposits(1);
  await sql(`insert into sweep_requests (merchant_id, environment, network) select merchant_id, 'sandbox', 'ETHEREUM' from settlement_wallets where address = ?`, [settlement]);
  const rpc = chains.ETHEREUM.rpc;
  const snapshot = await rpc.call<string>('evm_snapshot', []);
  const status = async () => (await sql<{ status: string; tx_hash: string | null; block_hash: string | null }>(`select status, tx_hash, block_hash from sweeps where deposit_id = ?`, [deposits[0]]))[0];
  const deep = engine(undefined, 3);
  for (let i = 0; i < 10 && (await status())?.status !== 'sent'; i++) await deep.tick(gw.app.orm.em.fork());
  const sent = await status();
  expect(sent?.status).toBe('sent');
  expect(await balanceOf(settlement)).toBe(AMOUNT);
  // The block holding the sweep is replaced: revert, then other (empty) blocks at the same heights.
  await rpc.call('evm_revert', [snapshot]);
  await rpc.call('anvil_mine', ['0x3']);
  expect(await balanceOf(settlement)).toBe(0n);
  await deep.tick(gw.app.orm.em.fork());
  const back = await status();
  expect(['sending', 'sent']).toContain(back?.status); // back to sending; possibly re-included within the same tick
  for (let i = 0; i < 20 && (await status())?.status !== 'confirmed'; i++) {
    await deep.tick(gw.app.orm.em.fork());
    await rpc.call('anvil_mine', ['0x1']);
  }
  const done = await status();
  if (done?.status !== 'confirmed') {
    const [tx] = await sql<{ raw: string; tx_hash: string; nonce: string; signer: string; state: string }>(`select raw, tx_hash, nonce::text, signer, state from sweep_txs where tx_hash = ?`, [sent!.tx_hash]);
    const st = await target.adapter.sweeps!.txState({ txHash: tx!.tx_hash, raw: tx!.raw, nonce: BigInt(tx!.nonce), expiresAt: null }, tx!.signer);
    const br = await target.adapter.sweeps!.broadcast({ txHash: tx!.tx_hash, raw: tx!.raw, nonce: BigInt(tx!.nonce), expiresAt: null }).then(() => 'ok', (e: Error) => e.message);
    throw new Error(`stuck: row ${tx!.state}, txState ${JSON.stringify(st, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v))}, broadcast ${br}`);
  }
  expect(done?.status).toBe('confirmed');
  expect(done?.tx_hash).toBe(sent!.tx_hash); // the same stored transaction, not a new one
  expect(done?.block_hash).not.toBe(sent!.block_hash);
  await expectSweptOnce(deposits, settlement);
}, 120_000);
