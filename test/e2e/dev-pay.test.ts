import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { balanceOf, startDevChains, type DevChains } from '../../src/devchain';
import { CLI_JS, requireDist } from '../support/process';

/** `npm run cli -- dev pay`: how a developer pays a sandbox order on the local chains `npm start` runs. */
let chains: DevChains;
beforeAll(async () => {
  requireDist(CLI_JS);
  chains = await startDevChains();
});
afterAll(() => chains?.stop());

it.each(['ETHEREUM', 'BINANCE'] as const)('sends exactly the displayed amount on the local %s chain', async (network) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'cpg-devpay-'));
  writeFileSync(join(dataDir, 'devchains.json'), JSON.stringify({ ETHEREUM: chains.ETHEREUM.rpcUrl, BINANCE: chains.BINANCE.rpcUrl }));
  const to = '0x000000000000000000000000000000000000dEaD';
  const before = await balanceOf(chains[network], 'USDT', to);
  const { stdout } = await promisify(execFile)(process.execPath, [CLI_JS, 'dev', 'pay', '--network', network, '--to', to, '--amount', '9.231704', '--json'], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, DATA_DIR: dataDir, LOG_LEVEL: 'warn' },
  });
  const out = JSON.parse(stdout.trim()) as { amount: string; tx_hash: string };
  const units = network === 'ETHEREUM' ? 9_231_704n : 9_231_704n * 10n ** 12n;
  expect(out.amount).toBe(units.toString());
  expect(out.tx_hash).toMatch(/^0x[0-9a-f]{64}$/);
  expect((await balanceOf(chains[network], 'USDT', to)) - before).toBe(units);
});
