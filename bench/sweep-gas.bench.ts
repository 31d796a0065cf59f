/**
 * Gas per swept deposit on the local anvil chains (`npm run bench:sweep-gas`, ~20 s): the three ways
 * the EVM adapter can sweep a fresh deposit (nonce 0, no native coin) holding one token balance:
 * - naive: one 21,000-gas top-up transaction per deposit, then its own token transfer;
 * - disperse: one Disperse transaction tops up every deposit, then each deposit's own transfer;
 * - 7702: one tank transaction per batch, the deposits delegate to the Sweeper (no top-up at all);
 *   batches of 1, 10 and 100, plus a second sweep of already-delegated deposits (no authorization).
 * Gas is `gasUsed` from the receipts (what is paid), summed over every transaction a method needs,
 * divided by the deposits it swept. The settlement address already holds tokens (the usual case).
 * Last line: JSON with every figure and the 7702-batch-of-100 / naive ratio (goal ≤ 0.75).
 */
import { getBytes, Wallet } from 'ethers';
import type { SignedTx, TransferIntent } from '../src/chains/chain-adapter.js';
import { createEvmAdapter, type EvmAdapter } from '../src/chains/evm/index.js';
import { DEV_GAS_TANK_EVM_KEY, DEV_SWEEP_CONTRACTS, devChainNetworkConfig, mintTo, startDevChains, type DevChain } from '../src/devchain/index.js';

const TANK_KEY = getBytes(DEV_GAS_TANK_EVM_KEY);
const TANK = new Wallet(DEV_GAS_TANK_EVM_KEY).address;
const AMOUNT = 1_000_000n;

interface Deposit {
  address: string;
  key: Uint8Array;
}

async function freshDeposits(chain: DevChain, n: number): Promise<Deposit[]> {
  const out: Deposit[] = [];
  for (let i = 0; i < n; i++) {
    const w = Wallet.createRandom();
    await mintTo(chain, 'USDT', w.address, AMOUNT);
    out.push({ address: w.address, key: getBytes(w.privateKey) });
  }
  return out;
}

async function gasOf(chain: DevChain, adapter: EvmAdapter, tx: SignedTx, from: string): Promise<bigint> {
  await adapter.sweeps.broadcast(tx);
  for (let i = 0; i < 400; i++) {
    const s = await adapter.sweeps.txState(tx, from);
    if (s.state === 'included') {
      if (!s.success) throw new Error(`${tx.txHash} reverted`);
      const r = await chain.rpc.call<{ gasUsed: string }>('eth_getTransactionReceipt', [tx.txHash]);
      return BigInt(r.gasUsed);
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`${tx.txHash} not included`);
}

async function measure(chain: DevChain): Promise<Record<string, number>> {
  const config = devChainNetworkConfig(chain);
  const plain = createEvmAdapter({ ...config, disperseAddress: undefined });
  const withDisperse = createEvmAdapter({ ...config, disperseAddress: DEV_SWEEP_CONTRACTS.disperse });
  const batched = createEvmAdapter({ ...config, sweeperAddress: DEV_SWEEP_CONTRACTS.sweeper });
  const settlement = Wallet.createRandom().address;
  await mintTo(chain, 'USDT', settlement, 1n);
  const token = { address: chain.tokens[0]!.address, decimals: chain.tokens[0]!.decimals, symbol: 'USDT' };
  const intent = (d: Deposit): TransferIntent => ({ token, from: d.address, to: settlement, amount: AMOUNT });

  // top-up then transfer, with the funding transaction(s) `adapter` signs
  const topUpAndSweep = async (adapter: EvmAdapter, deps: Deposit[]): Promise<number> => {
    const needs = await Promise.all(deps.map(async (d) => ({ address: d.address, amount: await adapter.sweeps.quoteTransferFee(intent(d)) })));
    let gas = 0n;
    for (const tx of await adapter.sweeps.signFunding(TANK_KEY, needs, {})) gas += await gasOf(chain, adapter, tx, TANK);
    for (const d of deps) gas += await gasOf(chain, adapter, await adapter.sweeps.signTransfer(intent(d), { deposit: d.key }, {}), d.address);
    return Number(gas) / deps.length;
  };
  const batch = async (deps: Deposit[]): Promise<number> => {
    const tx = await batched.sweeps.batch!.signBatchSweep(
      TANK_KEY,
      deps.map((d) => ({ intent: intent(d), depositKey: d.key })),
      {},
    );
    return Number(await gasOf(chain, batched, tx, TANK)) / deps.length;
  };

  const naive = await topUpAndSweep(plain, await freshDeposits(chain, 10));
  const disperse = await topUpAndSweep(withDisperse, await freshDeposits(chain, 10));
  const b1 = await batch(await freshDeposits(chain, 1));
  const b10deps = await freshDeposits(chain, 10);
  const b10 = await batch(b10deps);
  const b100 = await batch(await freshDeposits(chain, 100));
  // the same 10 deposits paid again: already delegated, so no authorization in the transaction
  for (const d of b10deps) await mintTo(chain, 'USDT', d.address, AMOUNT);
  const again10 = await batch(b10deps);
  return { naive, disperse, batch1: b1, batch10: b10, batch100: b100, resweep10: again10 };
}

async function main(): Promise<void> {
  const t0 = performance.now();
  const chains = await startDevChains();
  try {
    const out: Record<string, Record<string, number>> = {};
    for (const network of ['ETHEREUM', 'BINANCE'] as const) {
      const m = await measure(chains[network]);
      out[network] = m;
      console.log(
        `${network}: gas per deposit ${Object.entries(m)
          .map(([k, v]) => `${k} ${Math.round(v)}`)
          .join(', ')}`,
      );
    }
    const eth = out.ETHEREUM!;
    console.log(
      JSON.stringify({
        naive_gas_per_deposit: Math.round(eth.naive!),
        disperse_gas_per_deposit: Math.round(eth.disperse!),
        batch7702_gas_per_deposit: { 1: Math.round(eth.batch1!), 10: Math.round(eth.batch10!), 100: Math.round(eth.batch100!) },
        resweep7702_gas_per_deposit_10: Math.round(eth.resweep10!),
        ratio_disperse: Number((eth.disperse! / eth.naive!).toFixed(3)),
        ratio_7702_100: Number((eth.batch100! / eth.naive!).toFixed(3)),
        binance: Object.fromEntries(Object.entries(out.BINANCE!).map(([k, v]) => [k, Math.round(v)])),
        seconds: Number(((performance.now() - t0) / 1000).toFixed(1)),
      }),
    );
  } finally {
    await chains.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
