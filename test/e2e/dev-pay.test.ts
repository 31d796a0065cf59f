import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { PublicKey } from '@solana/web3.js';
import { getAssociatedTokenAddressSync } from '@solana/spl-token';
import type { Network } from '../../src/common/environment';
import { balanceOf, SANDBOX_FAUCET_SECP256K1_KEY, SANDBOX_FAUCET_SOLANA_SEED, sandboxToken, startSandboxChains, type SandboxChains } from '../../src/devchain';
import { familyOf } from '../../src/chains/registry';
import { openTransferWallet } from '../../src/chains/transfer-wallet';
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

it.each(['ETHEREUM', 'BINANCE', 'TRON', 'SOLANA'] as const)(
  'sends exactly the displayed amount on the local %s chain',
  async (network) => {
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
  },
  90_000,
);

/**
 * The walk-through a new user follows (docs/sandbox.md "Paying from your own wallet, on each network"): `dev wallet`
 * makes a wallet, the faucet's senders fund it (what `POST /testnet/faucet` does: gas and 1000 tokens),
 * and `dev pay --from-key` pays from it, minting nothing.
 */
it.each(['ETHEREUM', 'TRON', 'SOLANA'] as const)(
  'dev wallet → funded like the faucet does → dev pay --from-key pays from that wallet on %s',
  async (network) => {
    const dataDir = mkdtempSync(join(tmpdir(), 'cpg-devpay-own-'));
    writeFileSync(join(dataDir, 'devchains.json'), JSON.stringify(chains.rpcUrls));
    const env = { PATH: process.env.PATH, HOME: process.env.HOME, DATA_DIR: dataDir, LOG_LEVEL: 'warn' };
    const made = JSON.parse(
      (await promisify(execFile)(process.execPath, [CLI_JS, 'dev', 'wallet', '--network', network, '--json'], { env })).stdout.trim(),
    ) as { address: string; private_key: string };
    expect(made.private_key).toMatch(/^[0-9a-f]{64}$/);
    const family = familyOf(network);
    const faucet = await openTransferWallet(network, {
      rpcUrl: chains.rpcUrls[network],
      timeoutMs: 30_000,
      key: family === 'solana' ? SANDBOX_FAUCET_SOLANA_SEED : SANDBOX_FAUCET_SECP256K1_KEY,
    });
    const token = sandboxToken(network, 'USDT')!;
    await faucet.sendNative(made.address, NATIVE[family]);
    await faucet.sendToken({ address: token.address, decimals: token.decimals }, made.address, 1000n * 10n ** BigInt(token.decimals));
    const funded = await usdtBalance(network, made.address);
    expect(funded).toBe(1000n * 10n ** BigInt(token.decimals));

    const to = RECIPIENT[network];
    const before = await usdtBalance(network, to);
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [CLI_JS, 'dev', 'pay', '--network', network, '--to', to, '--amount', '12.5', '--from-key', made.private_key, '--json'],
      { env },
    );
    expect(JSON.parse(stdout.trim())).toMatchObject({ amount: '12500000' });
    expect((await usdtBalance(network, to)) - before).toBe(12_500_000n);
    // It came out of the user's wallet (nothing minted to it): 1000 − 12.5.
    expect(await usdtBalance(network, made.address)).toBe(funded - 12_500_000n);
    // A malformed key is refused before anything is sent.
    await expect(
      promisify(execFile)(process.execPath, [CLI_JS, 'dev', 'pay', '--network', network, '--to', to, '--amount', '1', '--from-key', 'nope'], { env }),
    ).rejects.toMatchObject({
      stderr: expect.stringMatching(/--from-key must be 64 hex characters/),
    });
  },
  120_000,
);

/** Gas for the new wallet, the faucet's defaults: 0.01 ETH (wei), 10 TRX (sun), 0.01 SOL (lamports). */
const NATIVE = { evm: 10n ** 16n, tron: 10_000_000n, solana: 10_000_000n } as const;
