/**
 * Crash safety with the BUILT worker on TRON: the kill scenarios every chain runs
 * (test/support/sweep-kill-scenarios.ts) on the java-tron emulator the dev chains run, here with its
 * resource model on (accounts must be activated, energy and bandwidth are paid), so the top-up path is
 * the real one: the gas tank activates each deposit and either delegates ENERGY from its stake or sends
 * the TRX the transfer burns, and takes the energy back once the sweep is confirmed.
 *
 * The tank's stake covers one deposit's energy and no more, so every step's funding batch holds both
 * kinds: the first deposit gets activation + delegation, the others a TRX top-up. Besides the shared
 * checks: each step delegated energy to one of its deposits, and after the restart the engine took
 * all of it back (the tank's free stake is whole again, the reclaim included) — so the next step
 * starts from the same stake. TRON transactions carry no nonce (reference block + expiry), so there
 * is no nonce gap to check; the shared check that no nonce is used twice is vacuous here.
 */
import { randomBytes } from 'node:crypto';
import { id as topicOf, zeroPadValue } from 'ethers';
import type { TronWeb } from 'tronweb';
import { createTronAdapter, tronAddressBody, tronAddressFromBody, tronDriver, type TronAdapter } from '../../src/chains/tron';
import { startTronEmulator, type TronEmulator } from '../../src/devchain/tron.emulator';
import { createTestDatabase } from '../support/db';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { checkout } from '../support/order-watch';
import { requireDist } from '../support/process';
import { KILL_TANK_MNEMONIC, sweepKillScenarios } from '../support/sweep-kill-scenarios';
import { tronCustomer, tronTransfer } from '../support/tron-wallet';

const TRX = 1_000_000n;
/**
 * ~10 energy per staked TRX on the emulator; a transfer from a new deposit is quoted ~2.9 TRX of burn,
 * i.e. ~35k energy with the 20 % margin, ~3,500 TRX of stake: 5,000 TRX covers one deposit, not two.
 */
const STAKE = 5_000n * TRX;
const TRANSFER_TOPIC = topicOf('Transfer(address,address,uint256)');

let emu: TronEmulator;
let api: TestGateway;
let adapter: TronAdapter;
let usdt: string;
let customer: string;
let wallet: TronWeb;
let tank: string;

beforeAll(async () => {
  requireDist();
  emu = await startTronEmulator({ resources: true, solidityLag: 1 });
  usdt = await emu.deployToken({ name: 'Tether USD (emulator)', symbol: 'USDT', decimals: 6 });
  api = await startTestGateway({ ROLE: 'api', GAS_TANK_MNEMONIC_SANDBOX: KILL_TANK_MNEMONIC }, { db: await createTestDatabase() });
  // Without DEV_CHAINS the sandbox's TRON tokens are the testnet ones: the emulator's USDT is added like an operator would.
  await api.app.tokens.upsert(api.app.orm.em.fork(), {
    environment: 'sandbox',
    network: 'TRON',
    symbol: 'USDT',
    name: 'Tether USD (emulator)',
    address: usdt,
    decimals: 6,
  });
  ({ address: customer, wallet } = tronCustomer(emu));
  await emu.setTrx(customer, 100_000n * TRX); // it pays its own energy and bandwidth
  await emu.mint(usdt, customer, 10n ** 12n);
  // The tank: funded, and part of it staked for ENERGY (what the operator's `gas-tank stake` does).
  tank = api.app.gasTanks.address('sandbox', 'TRON')!;
  await emu.setTrx(tank, 100_000n * TRX);
  adapter = createTronAdapter({ network: 'TRON', rpcUrls: [emu.url], confirmations: 0, maxBlockRange: 100, timeoutMs: 5000 });
  const stake = await adapter.sweeps.signStake(api.app.gasTanks.signingKey('sandbox', 'TRON'), STAKE);
  await adapter.sweeps.broadcast(stake);
  expect((await emu.getTx(stake.txHash))?.success).toBe(true);
  expect((await adapter.sweeps.tankStake(tank)).delegatableSun).toBe(STAKE);
}, 120_000);

afterAll(async () => {
  await api?.close();
  await emu?.stop();
});

/** Every TRC-20 Transfer out of `owner`: the emulator executes on anvil, whose logs are the chain's. */
async function transfersFrom(owner: string): Promise<{ to: string; amount: bigint }[]> {
  const res = await fetch(emu.anvilUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'eth_getLogs',
      params: [
        {
          address: `0x${tronAddressBody(usdt)}`,
          fromBlock: '0x0',
          toBlock: 'latest',
          topics: [TRANSFER_TOPIC, zeroPadValue(`0x${tronAddressBody(owner)}`, 32)],
        },
      ],
    }),
  });
  const { result } = (await res.json()) as { result: { topics: string[]; data: string }[] };
  return result.map((l) => ({ to: tronAddressFromBody(l.topics[2]!), amount: BigInt(l.data) }));
}

const sql = <R>(q: string, p: unknown[] = []) => api.app.orm.em.fork().getConnection().execute<R[]>(q, p);

sweepKillScenarios({
  network: 'TRON',
  api: () => api,
  workerEnv: () => ({ SANDBOX_TRON_RPC_URLS: emu.url, SANDBOX_TRON_CONFIRMATIONS: '1' }),
  async newOrder(m) {
    const d = await checkout(api.url, m.sandboxKey, { amountIdr: '150000', tokenAddress: usdt, network: 'TRON', walletType: 'TRUSTWALLET' });
    const [dep] = await sql<{ id: string }>('select id from deposits where order_id = ?', [d.orderId]);
    return { orderId: d.orderId, depositId: dep!.id, address: d.address, total: d.total };
  },
  pay: (to, amount) => tronTransfer(emu, wallet, customer, usdt, to, amount),
  advance: () => emu.mine(1),
  tokenBalance: (owner) => emu.balanceOf(usdt, owner),
  transfersFrom,
  newAddress: () => tronDriver.deriveAddress(randomBytes(64), 0),
  steps: ['plan', 'fund-sign', 'fund-broadcast', 'funded', 'send-sign', 'send-broadcast', 'sent'],
  async afterSwept(run, until) {
    const sweeps = `{${run.sweepIds.join(',')}}`;
    // The energy lent for this step is back: nothing delegated any more, the reclaim included.
    await until(async () => {
      const [open] = await sql<{ n: number }>(
        `select count(*)::int as n from sweep_txs where network = 'TRON' and kind = 'reclaim' and state in ('signed','broadcast')`,
      );
      return open!.n === 0 && (await adapter.sweeps.tankStake(tank)).delegatableSun === STAKE;
    }, 'the delegated energy taken back');
    const funding = await sql<{ kind: string; type: string; state: string }>(
      `select distinct t.id, t.kind, t.raw::jsonb #>> '{raw_data,contract,0,type}' as type, t.state from sweep_txs t join sweep_tx_links l on l.tx_id = t.id
       where l.sweep_id = any(?::uuid[]) and t.kind in ('funding','reclaim') and t.state = 'included'`,
      [sweeps],
    );
    // One deposit's energy delegated (and reclaimed), the others topped up with TRX to burn.
    expect(funding.filter((f) => f.kind === 'funding' && f.type === 'DelegateResourceContract')).toHaveLength(1);
    expect(funding.filter((f) => f.kind === 'reclaim' && f.type === 'UnDelegateResourceContract')).toHaveLength(1);
    expect(funding.filter((f) => f.kind === 'funding' && f.type === 'TransferContract').length).toBeGreaterThanOrEqual(run.deposits.length);
  },
});
