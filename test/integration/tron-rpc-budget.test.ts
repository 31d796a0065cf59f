/**
 * The TRON watcher's RPC budget, counted through the real java-tron emulator with the hook behind
 * `cpg_rpc_calls_total`: the watcher's own tick, one per new block (TRON's HTTP API has no push; the
 * watcher polls at block cadence). A poll that finds the head unchanged costs one `getnowblock`; a new
 * block costs at most two calls, whether no deposit or 10,000 are open. A payment is still recorded
 * once and confirmed, the solidified head read on each new block only while the payment waits for it.
 */
import { randomBytes } from 'node:crypto';
import type { TronWeb } from 'tronweb';
import { watchedNetworks } from '../../src/chains/networks';
import { tronAddressFromBody } from '../../src/chains/tron/tron.address';
import { startTronEmulator, type TronEmulator } from '../../src/devchain/tron.emulator';
import { createChainWatcher } from '../../src/jobs/chain-watcher.factory';
import type { ChainWatcher } from '../../src/modules/payments/chain-watcher';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { tronCustomer, tronTransfer } from '../support/tron-wallet';

jest.setTimeout(180_000);

const LAG = 3;
const MERCHANT = '00000000-0000-4000-8000-0000000000e1';
const WALLET_ID = '00000000-0000-4000-8000-0000000000e2';

let emu: TronEmulator;
let gw: TestGateway;
let usdt: string;
let tokenId: string;
let watcher: ChainWatcher;
let customer: string;
let wallet: TronWeb;
const calls: string[] = [];

beforeAll(async () => {
  emu = await startTronEmulator({ solidityLag: LAG });
  usdt = await emu.deployToken({ name: 'Tether USD (emulator)', symbol: 'USDT', decimals: 6 });
  // No worker: the test runs the watcher's ticks itself. Identity rechecks (one getblockbynum(0) per
  // CHAIN_IDENTITY_RECHECK_MS, 30 s by default) are left out of the per-block count.
  gw = await startTestGateway(
    { ROLE: 'api', SANDBOX_TRON_CONFIRMATIONS: '1', CHAIN_IDENTITY_RECHECK_MS: '3600000' },
    { rpcOverrides: { 'sandbox:TRON': [emu.url] } },
  );
  const em = gw.app.orm.em.fork();
  const c = em.getConnection();
  await c.execute(`update tokens set active = false where environment = 'sandbox' and network = 'TRON'`);
  await gw.app.tokens.upsert(em, { environment: 'sandbox', network: 'TRON', symbol: 'USDT', name: 'Tether USD (emulator)', address: usdt, decimals: 6 });
  await em.flush();
  tokenId = (await c.execute<{ id: string }[]>(`select id from tokens where environment = 'sandbox' and network = 'TRON' and address = ?`, [usdt]))[0]!.id;
  await c.execute(`insert into merchants (id, name) values ('${MERCHANT}', 'TRON budget')`);
  await c.execute(
    `insert into merchant_wallets (id, merchant_id, environment, mnemonic_ciphertext) values ('${WALLET_ID}', '${MERCHANT}', 'sandbox', 'fixture')`,
  );
  ({ address: customer, wallet } = tronCustomer(emu));
  await emu.mint(usdt, customer, 10n ** 12n);
  const target = watchedNetworks(gw.app.config, { 'sandbox:TRON': [emu.url] }, { onRpcCall: (call) => calls.push(call.method) }).find(
    (t) => t.environment === 'sandbox' && t.network === 'TRON',
  )!;
  watcher = createChainWatcher(gw.app, target);
  // First ticks: the chain identity, the start cursor and its look-back scan.
  await watcher.tick(gw.app.orm.em.fork());
  await watcher.tick(gw.app.orm.em.fork());
});

afterAll(async () => {
  await gw?.close();
  await emu?.stop();
});

/** `n` open TRON deposits of the fixture merchant (bulk SQL, fresh addresses, USDT); their addresses and totals. */
async function openDeposits(n: number, from: number): Promise<{ address: string; total: bigint }[]> {
  const rows = Array.from({ length: n }, (_, k) => {
    const i = from + k;
    const code = (i % 999) + 1;
    return { i, address: tronAddressFromBody(randomBytes(20).toString('hex')), code, total: (9_230_769n + BigInt(code) * 10n).toString() };
  });
  const c = gw.app.orm.em.getConnection();
  for (let at = 0; at < rows.length; at += 5000) {
    await c.execute(
      `with r as (select * from jsonb_to_recordset(?::jsonb) as r(i int, address text, code int, total numeric))
       , o as (insert into orders (id, merchant_id, environment, order_no, amount, expires_at, created_at, updated_at)
               select md5('to' || i)::uuid, '${MERCHANT}', 'sandbox', 'TRONBUDGET-' || i, 150000, now() + interval '1 day', now(), now() from r returning id)
       , q as (insert into quotes (id, order_id, token_id, network, decimals, rate_source, crypto_rate, amount_idr, amount_crypto, fee_percent, fee_included,
                                   fee_amount_idr, fee_amount_crypto, total_idr, total_crypto, merchant_receives_idr, merchant_receives_crypto)
               select md5('tq' || i)::uuid, md5('to' || i)::uuid, '${tokenId}', 'TRON', 6, 'fallback', '16250', 150000, 9230769, '1', true, 1500, 92308,
                      150000, total, 148500, 9138461 from r returning id)
       insert into deposits (id, order_id, token_id, quote_id, wallet_id, environment, network, family, derivation_index, address, wallet_type,
                             unique_code, unique_code_amount, total_amount, total_amount_fiat, expires_at, created_at)
       select md5('td' || i)::uuid, md5('to' || i)::uuid, '${tokenId}', md5('tq' || i)::uuid, '${WALLET_ID}', 'sandbox', 'TRON', 'tron', i,
              address, 'TRUSTWALLET', code, code * 10, total, 150000, now() + interval '1 day', now()
       from r`,
      [JSON.stringify(rows.slice(at, at + 5000))],
    );
  }
  return rows.map((r) => ({ address: r.address, total: BigInt(r.total) }));
}

/** Mines one block, runs one tick: the calls that tick made. */
async function blockThenTick(): Promise<string[]> {
  await emu.mine(1);
  const before = calls.length;
  await watcher.tick(gw.app.orm.em.fork());
  return calls.slice(before);
}

async function tickOnly(): Promise<string[]> {
  const before = calls.length;
  await watcher.tick(gw.app.orm.em.fork());
  return calls.slice(before);
}

const BLOCKS = 12;

/** Idle blocks: each tick at most two calls, ≤ 2 × blocks in all, the watcher caught up to the head. */
async function idleBlocks(): Promise<string[]> {
  const made: string[] = [];
  for (let i = 0; i < BLOCKS; i++) {
    const tick = await blockThenTick();
    expect(tick.length).toBeLessThanOrEqual(2);
    made.push(...tick);
  }
  const lag = watcher.lag();
  expect(lag.headBlock).toBe(await emu.latestBlock());
  expect(lag.scannedBlock).toBe(lag.headBlock);
  return made;
}

it('a poll whose head did not move costs one getnowblock', async () => {
  await blockThenTick();
  for (let i = 0; i < 3; i++) expect(await tickOnly()).toEqual(['/wallet/getnowblock']);
});

it('idle, no deposit open: at most 2 calls per new block', async () => {
  const made = await idleBlocks();
  expect(made.length).toBeLessThanOrEqual(2 * BLOCKS);
  // empty blocks: neither their transaction infos nor the block itself is read again
  expect(made.filter((m) => m === '/wallet/gettransactioninfobyblocknum')).toEqual([]);
});

it('10,000 open deposits: the same cost per new block; a payment to one of them is recorded once and confirmed', async () => {
  const open = await openDeposits(10_000, 0);
  await tickOnly(); // loads the watch set
  const made = await idleBlocks();
  expect(made.length).toBeLessThanOrEqual(2 * BLOCKS);

  const paid = open[4321]!;
  const txId = await tronTransfer(emu, wallet, customer, usdt, paid.address, paid.total);
  const before = calls.length;
  await tickOnly();
  const payment = async () =>
    gw.app.orm.em
      .getConnection()
      .execute<{ status: string; n: string }[]>(
        `select p.status, count(*) over () as n from payments p join deposits d on d.id = p.deposit_id where d.address = ? and lower(p.tx_hash) = lower(?)`,
        [paid.address, txId],
      );
  expect(await payment()).toEqual([{ status: 'pending', n: '1' }]);
  // the block with the payment: the head block reused and its infos read; its hash read again after the
  // scan (still canonical?) and by the confirmation check
  expect(calls.slice(before).sort()).toEqual(['/wallet/getblockbynum', '/wallet/getblockbynum', '/wallet/getnowblock', '/wallet/gettransactioninfobyblocknum']);
  // while it waits for the solidified head, each new block reads that head too
  let solidReads = 0;
  for (let i = 0; i < LAG + 1 && (await payment())[0]?.status === 'pending'; i++)
    solidReads += (await blockThenTick()).filter((m) => m === '/walletsolidity/getnowblock').length;
  expect(await payment()).toEqual([{ status: 'confirmed', n: '1' }]);
  expect(solidReads).toBeGreaterThan(0);
  // nothing waits any more: back to idle cost
  const after = await idleBlocks();
  expect(after.length).toBeLessThanOrEqual(2 * BLOCKS);
});
