/**
 * The operator's `gas-tank deploy-disperse` / `deploy-sweeper` (built CLI) against a bare anvil in
 * each fee style: the contracts land, the Sweeper obeys the key that deployed it, and a bad key file
 * is refused before anything is sent.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Wallet } from 'ethers';
import { EvmRpcClient, SWEEPER_ABI } from '../../src/chains/evm';
import { ANVIL_DEV_KEYS, startAnvil, type AnvilInstance } from '../../src/devchain';
import { TEST_JWT_SECRET, TEST_MASTER_KEY } from '../support/gateway';
import { bareEnv, CLI_JS, requireDist, runProcess } from '../support/process';

const KEY = ANVIL_DEV_KEYS[2];
let dir: string;
let env: Record<string, string | undefined>;
const anvils: AnvilInstance[] = [];

beforeAll(() => {
  requireDist(CLI_JS);
  dir = mkdtempSync(join(tmpdir(), 'cpg-gas-tank-cli-'));
  writeFileSync(join(dir, 'tank.key'), `${KEY}\n`, { mode: 0o600 });
  writeFileSync(join(dir, 'bad.key'), 'not a key\n');
  env = bareEnv({ DATA_DIR: dir, NODE_ENV: 'test', MASTER_KEY: TEST_MASTER_KEY, JWT_SECRET: TEST_JWT_SECRET });
});
afterAll(async () => {
  await Promise.all(anvils.map((a) => a.stop()));
  rmSync(dir, { recursive: true, force: true });
});

const cli = (...args: string[]) => runProcess(process.execPath, [CLI_JS, ...args], env, 120_000);

describe.each([
  ['ETHEREUM', undefined],
  ['BINANCE', 0],
] as const)('gas-tank deploy-* on a %s-style chain', (network, baseFee) => {
  it('deploys Disperse and a Sweeper obeying the deploying key, and prints the config variable', async () => {
    const anvil = await startAnvil({ chainId: network === 'ETHEREUM' ? 1 : 56, baseFee });
    anvils.push(anvil);
    const rpc = new EvmRpcClient({ urls: [anvil.rpcUrl], timeoutMs: 5000 });
    const common = ['--network', network, '--environment', 'production', '--key-file', join(dir, 'tank.key'), '--rpc-url', anvil.rpcUrl, '--json'];

    const d = await cli('gas-tank', 'deploy-disperse', ...common);
    expect({ code: d.code, stderr: d.code === 0 ? '' : d.stderr }).toEqual({ code: 0, stderr: '' });
    const disperse = JSON.parse(d.stdout) as { address: string; config: string };
    expect(disperse.config).toBe(`PRODUCTION_${network}_DISPERSE_ADDRESS`);
    expect((await rpc.call<string>('eth_getCode', [disperse.address, 'latest'])).length).toBeGreaterThan(2);

    const s = await cli('gas-tank', 'deploy-sweeper', ...common);
    expect({ code: s.code, stderr: s.code === 0 ? '' : s.stderr }).toEqual({ code: 0, stderr: '' });
    const sweeper = JSON.parse(s.stdout) as { address: string; tank: string; config: string };
    expect(sweeper.config).toBe(`PRODUCTION_${network}_SWEEPER_ADDRESS`);
    expect(sweeper.tank).toBe(new Wallet(KEY).address);
    const tank = await rpc.call<string>('eth_call', [{ to: sweeper.address, data: SWEEPER_ABI.encodeFunctionData('TANK') }, 'latest']);
    expect(SWEEPER_ABI.decodeFunctionResult('TANK', tank)[0]).toBe(new Wallet(KEY).address);

    const bad = await cli('gas-tank', 'deploy-disperse', ...common.map((a) => (a.endsWith('tank.key') ? join(dir, 'bad.key') : a)));
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/--key-file must hold a 32-byte key/);
    expect(bad.stderr).not.toContain(KEY.slice(2));
  });
});
