/**
 * The operator's `gas-tank stake` (built CLI) on the TRON emulator with its resource model: the tank's
 * TRX becomes an ENERGY stake it can lend to deposits; a bad key file and a chain that does not stake
 * are refused before anything is sent.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getBytes, Mnemonic } from 'ethers';

import { createTronAdapter, tronDriver } from '../../src/chains/tron';
import { startTronEmulator, type TronEmulator } from '../../src/devchain/tron.emulator';
import { TEST_JWT_SECRET, TEST_MASTER_KEY } from '../support/gateway';
import { bareEnv, CLI_JS, requireDist, runProcess } from '../support/process';

const seed = getBytes(Mnemonic.fromPhrase('abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about').computeSeed());
const tank = tronDriver.deriveAddress(seed, 905);
let dir: string;
let emu: TronEmulator;
let env: Record<string, string | undefined>;

beforeAll(async () => {
  requireDist(CLI_JS);
  emu = await startTronEmulator({ resources: true, solidityLag: 0 });
  await emu.setTrx(tank, 10_000n * 1_000_000n);
  dir = mkdtempSync(join(tmpdir(), 'cpg-tron-stake-'));
  writeFileSync(join(dir, 'tank.key'), `${Buffer.from(tronDriver.derivePrivateKey(seed, 905)).toString('hex')}\n`, { mode: 0o600 });
  writeFileSync(join(dir, 'bad.key'), 'not a key\n');
  env = bareEnv({
    DATA_DIR: dir,
    NODE_ENV: 'test',
    DEV_CHAINS: 'false',
    MASTER_KEY: TEST_MASTER_KEY,
    JWT_SECRET: TEST_JWT_SECRET,
    SANDBOX_TRON_RPC_URLS: emu.url,
  });
}, 60_000);

afterAll(async () => {
  await emu?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const cli = (...args: string[]) => runProcess(process.execPath, [CLI_JS, ...args], env, 120_000);

it('stakes the tank’s TRX for energy, which the tank can then delegate', async () => {
  const r = await cli('gas-tank', 'stake', '--network', 'TRON', '--environment', 'sandbox', '--trx', '4000', '--key-file', join(dir, 'tank.key'), '--json');
  expect({ code: r.code, stderr: r.code === 0 ? '' : r.stderr }).toEqual({ code: 0, stderr: '' });
  expect(JSON.parse(r.stdout)).toMatchObject({ network: 'TRON', environment: 'sandbox', state: 'included', success: true });
  const adapter = createTronAdapter({ network: 'TRON', rpcUrls: [emu.url], confirmations: 0, maxBlockRange: 100, timeoutMs: 5000 });
  expect((await adapter.sweeps.tankStake(tank)).delegatableSun).toBe(4000n * 1_000_000n);
  expect(await emu.trxBalance(tank)).toBe(6000n * 1_000_000n); // the stake left the balance; its bandwidth was free
});

it('refuses a bad key file without echoing it, and a network whose tanks do not stake', async () => {
  const bad = await cli('gas-tank', 'stake', '--network', 'TRON', '--environment', 'sandbox', '--trx', '1', '--key-file', join(dir, 'bad.key'));
  expect(bad.code).toBe(1);
  expect(bad.stderr).toMatch(/--key-file must hold a 32-byte key/);
  expect(bad.stderr).not.toContain('not a key');
  const none = await cli('gas-tank', 'stake', '--network', 'SOLANA', '--environment', 'sandbox', '--trx', '1', '--key-file', join(dir, 'tank.key'));
  expect(none.code).toBe(1);
  expect(none.stderr).toMatch(/SOLANA has no RPC URLs|do not stake/);
  expect(await emu.trxBalance(tank)).toBe(6000n * 1_000_000n);
});
