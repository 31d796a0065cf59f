/**
 * Sweeps on TRON end to end, on the java-tron HTTP emulator: a customer pays a TRC-20 deposit, the
 * worker's sweep job tops the deposit up from the gas tank (activation, then TRX or delegated energy)
 * and sends its whole balance to the merchant's settlement address; the scenarios are the ones every
 * chain runs (`test/support/sweep-scenarios.ts`). Nothing mocked: real gateway, PostgreSQL, emulator.
 */
import { randomBytes } from 'node:crypto';
import type { TronWeb } from 'tronweb';
import { watchedNetworks } from '../../src/chains/networks';
import { tronDriver } from '../../src/chains/tron/tron.driver';
import { startTronEmulator, type TronEmulator } from '../../src/devchain/tron.emulator';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { checkout } from '../support/order-watch';
import { settlementReads } from '../support/settlement-scenarios';
import { sweepScenarios } from '../support/sweep-scenarios';
import { tronCustomer, tronTransfer } from '../support/tron-wallet';

const LAG = 2;
const TANK_SUN = 10_000n * 1_000_000n;

let emu: TronEmulator;
let gw: TestGateway;
let usdt: string;
let customer: string;
let wallet: TronWeb;

beforeAll(async () => {
  emu = await startTronEmulator({ solidityLag: LAG });
  usdt = await emu.deployToken({ name: 'Tether USD (emulator)', symbol: 'USDT', decimals: 6 });
  gw = await startTestGateway(
    // Test orders are ~9.23 USDT; a TRON sweep without delegated energy is quoted 3.39 TRX (0.85 USD): dust at the default 5 % (docs/sweeps.md "Dust rule").
    {
      SANDBOX_TRON_CONFIRMATIONS: '1',
      WATCH_POLL_MS: '100',
      SWEEP_POLL_MS: '200',
      SWEEP_DUST_PERCENT: '100',
      EXPIRY_INTERVAL_S: '1',
      WEBHOOK_SWEEP_INTERVAL_MS: '1000',
    },
    { rpcOverrides: { 'sandbox:TRON': [emu.url] } },
  );
  await gw.app.tokens.upsert(gw.app.orm.em.fork(), {
    environment: 'sandbox',
    network: 'TRON',
    symbol: 'USDT',
    name: 'Tether USD (emulator)',
    address: usdt,
    decimals: 6,
  });
  await emu.setTrx(tank(), TANK_SUN);
  ({ address: customer, wallet } = tronCustomer(emu));
  await emu.mint(usdt, customer, 10n ** 12n);
}, 180_000); // emulator, token and gateway start on a loaded machine

afterAll(async () => {
  await gw?.close();
  await emu?.stop();
});

const tank = () => gw.app.gasTanks.address('sandbox', 'TRON')!;
const { sql } = settlementReads(() => gw.app);

async function tokenBalance(owner: string): Promise<bigint> {
  const r = await wallet.transactionBuilder.triggerConstantContract(usdt, 'balanceOf(address)', {}, [{ type: 'address', value: owner }], customer);
  return BigInt(`0x${r.constant_result![0]}`);
}

sweepScenarios({
  network: 'TRON',
  app: () => gw.app,
  async newOrder(m) {
    const d = await checkout(gw.url, m.sandboxKey, { amountIdr: '150000', tokenAddress: usdt, network: 'TRON', walletType: 'TRUSTWALLET' });
    const [dep] = await sql<{ id: string }>('select id from deposits where order_id = ?', [d.orderId]);
    return { orderId: d.orderId, depositId: dep!.id, address: d.address, total: d.total };
  },
  pay: (to, amount) => tronTransfer(emu, wallet, customer, usdt, to, amount),
  makeFinal: () => emu.mine(emu.solidityLag + 1),
  newAddress: () => tronDriver.deriveAddress(randomBytes(64), 0),
  tokenBalance,
  async emptyTank() {
    const held = await emu.trxBalance(tank());
    await emu.setTrx(tank(), 0n);
    return () => emu.setTrx(tank(), held > 0n ? held : TANK_SUN);
  },
  unit: 10n ** 6n,
  txHash: /^[0-9a-f]{64}$/,
  tankBalanceExact: false, // the emulator runs without its resource model here (see the scenario)
  depositNativeExact: false,
  target: () => watchedNetworks(gw.app.config, { 'sandbox:TRON': [emu.url] }).find((t) => t.environment === 'sandbox' && t.network === 'TRON')!,
});
