import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { computeAddress, getAddress, Interface } from 'ethers';
import { loadConfig, type Config } from '../src/config/index.js';
import { toQuantity } from '../src/chains/evm/evm.rpc.js';
import { ANVIL_DEV_KEYS, DEPLOYER_ADDRESS, type DevChain } from '../src/devchain/index.js';

/** Gateway config for an in-process benchmark on loopback: given database, local chains, no live rate sources. */
export function benchConfig(databaseUrl: string, extra: Record<string, string> = {}): Config {
  return loadConfig({
    NODE_ENV: 'development',
    HOST: '127.0.0.1',
    PORT: '0',
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn',
    DATA_DIR: mkdtempSync(join(tmpdir(), 'cpg-bench-data-')),
    DATABASE_URL: databaseUrl,
    MASTER_KEY: '33'.repeat(32),
    JWT_SECRET: 'bench-jwt-secret-bench-jwt-secret-0123456789',
    DEV_CHAINS: 'true',
    RATE_SOURCES: 'none',
    RATE_LIMIT_STORE: 'memory',
    RATE_LIMIT_MERCHANT_PER_MIN: '10000000',
    RATE_LIMIT_PUBLIC_PER_MIN: '1000000',
    RATE_LIMIT_GRAPHQL_PER_MIN: '1000000',
    ...extra,
  });
}

const token = new Interface(['function mint(address to, uint256 value)', 'function transfer(address to, uint256 value) returns (bool)']);

/** anvil dev accounts 1–5 (unlocked: eth_sendTransaction lets anvil pick nonces). */
export const SENDERS: readonly string[] = ANVIL_DEV_KEYS.slice(1).map((k) => computeAddress(k));

/** Mints `amount` of `tokenAddress` to each sender (automine must be on). */
export async function fundSenders(chain: DevChain, tokenAddress: string, amount: bigint): Promise<void> {
  for (const to of SENDERS) {
    const hash = await chain.rpc.call<string>('eth_sendTransaction', [
      { from: DEPLOYER_ADDRESS, to: tokenAddress, data: token.encodeFunctionData('mint', [to, amount]) },
    ]);
    for (let i = 0; !(await chain.rpc.call<unknown>('eth_getTransactionReceipt', [hash])); i++) {
      if (i > 200) throw new Error(`mint ${hash} not mined`);
      await new Promise((r) => setTimeout(r, 10));
    }
  }
}

/** Queues a token transfer from an unlocked sender (automine off: it waits in the pool for the next block). */
export function sendTransfer(chain: DevChain, tokenAddress: string, from: string, to: string, amount: bigint): Promise<string> {
  return chain.rpc.call<string>('eth_sendTransaction', [
    { from, to: tokenAddress, data: token.encodeFunctionData('transfer', [getAddress(to), amount]), gas: toQuantity(100_000n) },
  ]);
}

export async function setAutomine(chain: DevChain, on: boolean): Promise<void> {
  await chain.rpc.call('evm_setAutomine', [on]);
}

/** Mines one block; returns its number and the time (performance.now()) the node answered. */
export async function mineBlock(chain: DevChain): Promise<{ number: bigint; txCount: number; sentAt: number; minedAt: number }> {
  const sentAt = performance.now();
  await chain.rpc.call('evm_mine', []);
  const minedAt = performance.now();
  const block = await chain.rpc.call<{ number: string; transactions: string[] }>('eth_getBlockByNumber', ['latest', false]);
  return { number: BigInt(block.number), txCount: block.transactions.length, sentAt, minedAt };
}

export const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

export const round1 = (x: number): number => Math.round(x * 10) / 10;
