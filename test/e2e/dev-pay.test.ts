import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { PublicKey } from '@solana/web3.js';
import { getAssociatedTokenAddressSync } from '@solana/spl-token';
import type { Network } from '../../src/common/environment';
import { balanceOf, sandboxToken, startSandboxChains, type SandboxChains } from '../../src/devchain';
import { CLI_JS, requireDist } from '../support/process';

/** `npm run cli -- dev pay`: how a developer pays a sandbox order on each local chain `npm start` runs. */
let chains: SandboxChains;
beforeAll(async () => {
  requireDist(CLI_JS);
  chains = await startSandboxChains();
}, 120_000);
afterAll(() => chains?.stop());

const RECIPIENT: Record<Network, string> = {
  ETHEREUM: '0x000000000000000000000000000000000000dEaD',
  BINANCE: '0x000000000000000000000000000000000000dEaD',
  TRON: 'TLsV52sRDL79HXGGm9yzwKibb6BeruhUzy',
  SOLANA: '9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM',
};

async function usdtBalance(network: Network, owner: string): Promise<bigint> {
  const token = sandboxToken(network, 'USDT')!;
  if (network === 'TRON') return chains.tron.balanceOf(token.address, owner);
  if (network === 'SOLANA') {
    const ata = getAssociatedTokenAddressSync(new PublicKey(token.address), new PublicKey(owner));
    if (!(await chains.solana.connection.getAccountInfo(ata))) return 0n;
    return BigInt((await chains.solana.connection.getTokenAccountBalance(ata)).value.amount);
  }
  return balanceOf(chains.evm[network], 'USDT', owner);
}

it.each(['ETHEREUM', 'BINANCE', 'TRON', 'SOLANA'] as const)('sends exactly the displayed amount on the local %s chain', async (network) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'cpg-devpay-'));
  writeFileSync(join(dataDir, 'devchains.json'), JSON.stringify(chains.rpcUrls));
  const to = RECIPIENT[network];
  const before = await usdtBalance(network, to);
  const { stdout } = await promisify(execFile)(process.execPath, [CLI_JS, 'dev', 'pay', '--network', network, '--to', to, '--amount', '9.231704', '--json'], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, DATA_DIR: dataDir, LOG_LEVEL: 'warn' },
  });
  const out = JSON.parse(stdout.trim()) as { amount: string; tx_hash: string };
  const units = network === 'BINANCE' ? 9_231_704n * 10n ** 12n : 9_231_704n;
  expect(out.amount).toBe(units.toString());
  expect(out.tx_hash).toMatch(network === 'SOLANA' ? /^[1-9A-HJ-NP-Za-km-z]{64,88}$/ : /^(0x)?[0-9a-f]{64}$/);
  expect((await usdtBalance(network, to)) - before).toBe(units);
}, 90_000);
