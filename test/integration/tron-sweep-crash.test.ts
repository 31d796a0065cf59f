/**
 * Crash safety of the sweep engine on TRON (java-tron emulator, the gas tank tops each deposit up:
 * activation + TRX, then the deposit signs its own transfer): the engine killed right after each step,
 * and two engines racing — the scenarios every chain runs (test/support/sweep-crash-scenarios.ts).
 */
import { randomBytes } from 'node:crypto';
import { watchedNetworks, type WatchedNetwork } from '../../src/chains/networks';
import { tronDriver } from '../../src/chains/tron/tron.driver';
import { startTronEmulator, type TronEmulator } from '../../src/devchain/tron.emulator';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { sweepCrashScenarios } from '../support/sweep-crash-scenarios';

let emu: TronEmulator;
let gw: TestGateway;
let usdt: string;
let target: WatchedNetwork;

beforeAll(async () => {
  emu = await startTronEmulator({ solidityLag: 0 });
  usdt = await emu.deployToken({ name: 'Tether USD (emulator)', symbol: 'USDT', decimals: 6 });
  gw = await startTestGateway({ ROLE: 'api', SANDBOX_TRON_CONFIRMATIONS: '1' });
  target = watchedNetworks(gw.app.config, { 'sandbox:TRON': [emu.url] }).find((t) => t.environment === 'sandbox' && t.network === 'TRON')!;
  await emu.setTrx(gw.app.gasTanks.address('sandbox', 'TRON')!, 100_000n * 1_000_000n);
}, 60_000);

afterAll(async () => {
  await gw?.close();
  await emu?.stop();
});

sweepCrashScenarios({
  network: 'TRON',
  family: 'tron',
  walletType: 'TRUSTWALLET',
  app: () => gw.app,
  adapter: () => target.adapter,
  token: () => ({ symbol: 'USDT', name: 'Tether USD (emulator)', address: usdt, decimals: 6 }),
  pay: async (owner, amount) => (await emu.mint(usdt, owner, amount)).txId,
  tokenBalance: (owner) => emu.balanceOf(usdt, owner),
  newAddress: () => tronDriver.deriveAddress(randomBytes(64), 0),
  advance: () => emu.mine(1),
  steps: ['plan', 'fund-sign', 'fund-broadcast', 'funded', 'send-sign', 'send-broadcast', 'sent'],
  amount: 7_000_000n,
});
