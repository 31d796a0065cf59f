/**
 * Crash safety of the sweep engine on TRON (java-tron emulator), both gas paths — the scenarios every
 * chain runs (test/support/sweep-crash-scenarios.ts): the engine killed right after each step, two
 * engines racing, a sweep re-orged out.
 * - TRX top-up (emulator as `npm start` runs it, no resource model): the gas tank activates each
 *   deposit and sends it TRX, then the deposit signs its own transfer.
 * - Delegated energy (resource model on, the tank has staked TRX for energy): the tank activates the
 *   deposit and delegates it energy, the deposit's transfer burns nothing, and once the sweep is
 *   confirmed the tank takes the energy back (`reclaim-sign` is one more step to be killed at; the
 *   loan must come back exactly once and the tank's free stake be whole again).
 */
import { randomBytes } from 'node:crypto';
import { watchedNetworks, type WatchedNetwork } from '../../src/chains/networks';
import type { TronAdapter } from '../../src/chains/tron';
import { tronDriver } from '../../src/chains/tron/tron.driver';
import { startTronEmulator, type TronEmulator } from '../../src/devchain/tron.emulator';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { sweepCrashScenarios, type SweepCrashChain } from '../support/sweep-crash-scenarios';

const TRX = 1_000_000n;

let emu: TronEmulator;
let energyEmu: TronEmulator;
let gw: TestGateway;
/** Its own database: one (environment, network) is one chain, as in production (the engine re-checks its recent transactions against the chain it is given). */
let energyGw: TestGateway;
let usdt: string;
let energyUsdt: string;
let target: WatchedNetwork;
let energyTarget: WatchedNetwork;

const tank = () => gw.app.gasTanks.address('sandbox', 'TRON')!;
const energyTank = () => energyGw.app.gasTanks.address('sandbox', 'TRON')!;
const targetOf = (g: TestGateway, url: string) =>
  watchedNetworks(g.app.config, { 'sandbox:TRON': [url] }).find((t) => t.environment === 'sandbox' && t.network === 'TRON')!;

beforeAll(async () => {
  emu = await startTronEmulator({ solidityLag: 0 });
  energyEmu = await startTronEmulator({ solidityLag: 0, resources: true });
  usdt = await emu.deployToken({ name: 'Tether USD (emulator)', symbol: 'USDT', decimals: 6 });
  energyUsdt = await energyEmu.deployToken({ name: 'Tether USD (emulator)', symbol: 'USDT', decimals: 6 });
  gw = await startTestGateway({ ROLE: 'api', SANDBOX_TRON_CONFIRMATIONS: '1' });
  energyGw = await startTestGateway({ ROLE: 'api', SANDBOX_TRON_CONFIRMATIONS: '1' });
  target = targetOf(gw, emu.url);
  energyTarget = targetOf(energyGw, energyEmu.url);
  await emu.setTrx(tank(), 100_000n * TRX);
  await energyEmu.setTrx(energyTank(), 100_000n * TRX);
  // The operator stakes once (CLI `gas-tank stake`): enough energy for every deposit in flight.
  const tron = energyTarget.adapter as TronAdapter;
  const key = energyGw.app.gasTanks.signingKey('sandbox', 'TRON');
  try {
    const stake = await tron.sweeps.signStake(key, 50_000n * TRX);
    await tron.sweeps.broadcast(stake);
  } finally {
    key.fill(0);
  }
  expect((await tron.sweeps.tankStake(energyTank())).delegatableSun).toBe(50_000n * TRX);
}, 60_000);

afterAll(async () => {
  await gw?.close();
  await energyGw?.close();
  await emu?.stop();
  await energyEmu?.stop();
});

/**
 * A re-org on the emulator: anvil's snapshot and revert with the emulator's own state. The blocks to
 * drop must not be solidified yet (java-tron never reverts those): the solidity lag is deepened while
 * the fork lives, and set back once it is replaced.
 */
const reorgOf = (e: () => TronEmulator): SweepCrashChain['reorg'] => ({
  mark: async () => {
    e().solidityLag = 20;
    return e().snapshot();
  },
  reorg: async (mark) => {
    await e().revert(mark as string);
    await e().mine(3);
    e().solidityLag = 0;
  },
});

const common = {
  network: 'TRON',
  family: 'tron',
  walletType: 'TRUSTWALLET',
  app: () => gw.app,
  newAddress: () => tronDriver.deriveAddress(randomBytes(64), 0),
  amount: 7_000_000n,
} as const;

describe('TRX top-up path', () =>
  sweepCrashScenarios({
    ...common,
    adapter: () => target.adapter,
    token: () => ({ symbol: 'USDT', name: 'Tether USD (emulator)', address: usdt, decimals: 6 }),
    pay: async (owner, amount) => (await emu.mint(usdt, owner, amount)).txId,
    tokenBalance: (owner) => emu.balanceOf(usdt, owner),
    advance: () => emu.mine(1),
    steps: ['plan', 'fund-sign', 'fund-broadcast', 'funded', 'send-sign', 'send-broadcast', 'sent'],
    reorg: reorgOf(() => emu),
  }));

describe('delegated energy path', () =>
  sweepCrashScenarios({
    ...common,
    app: () => energyGw.app,
    adapter: () => energyTarget.adapter,
    token: () => ({ symbol: 'USDT', name: 'Tether USD (emulator)', address: energyUsdt, decimals: 6 }),
    pay: async (owner, amount) => (await energyEmu.mint(energyUsdt, owner, amount)).txId,
    tokenBalance: (owner) => energyEmu.balanceOf(energyUsdt, owner),
    advance: () => energyEmu.mine(1),
    steps: ['plan', 'fund-sign', 'fund-broadcast', 'funded', 'send-sign', 'send-broadcast', 'sent', 'reclaim-sign'],
    reorg: reorgOf(() => energyEmu),
    loan: {
      lentTo: async (address) => {
        const res = await fetch(`${energyEmu.url}/wallet/getdelegatedresourcev2`, {
          method: 'POST',
          body: JSON.stringify({ fromAddress: energyTank(), toAddress: address, visible: true }),
        });
        const json = (await res.json()) as { delegatedResource?: { frozen_balance_for_energy?: number }[] };
        return BigInt(json.delegatedResource?.[0]?.frozen_balance_for_energy ?? 0);
      },
      free: async () => (await (energyTarget.adapter as TronAdapter).sweeps.tankStake(energyTank())).delegatableSun,
    },
  }));
