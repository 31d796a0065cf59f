/**
 * EVM sweeps on real anvil (ETHEREUM stand-in with a base fee, BINANCE stand-in with base fee 0 and
 * legacy gas prices): quote, disperse funding, transfer signing, idempotent broadcast, tx states
 * (included, pending, dead after a fee-bumped replacement, unknown after a drop), and EIP-7702 batch
 * sweeps with the Sweeper contract, including what an attacker can and cannot do. Nothing mocked.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { getAddress, getBytes, Interface, Transaction, Wallet } from 'ethers';
import { SweepGasShortError, type SignedTx, type TransferIntent, type TxState } from '../../src/chains/chain-adapter';
import { createEvmAdapter, SWEEPER_ABI, type EvmAdapter } from '../../src/chains/evm';
import {
  balanceOf,
  CUSTOMER_PRIVATE_KEYS,
  DEV_GAS_TANK_EVM_KEY,
  DEV_SWEEP_CONTRACTS,
  devChainNetworkConfig,
  mintTo,
  startDevChains,
  waitForReceipt,
  type DevChain,
  type DevChains,
} from '../../src/devchain';
import { toQuantity } from '../../src/chains/evm/evm.rpc';

const TANK_KEY = getBytes(DEV_GAS_TANK_EVM_KEY);
const TANK = new Wallet(DEV_GAS_TANK_EVM_KEY).address;
/** Documented bound (docs/sweeps-evm.md): what a deposit keeps after its sweep, as a share of the quote. */
const MAX_DUST_PERCENT = 25n;

let chains: DevChains;
let cacheDir: string;

beforeAll(async () => {
  cacheDir = mkdtempSync(path.join(tmpdir(), 'cpg-sweeps-'));
  chains = await startDevChains({ cacheDir });
}, 120_000);

afterAll(async () => {
  await chains?.stop();
  rmSync(cacheDir, { recursive: true, force: true });
});

function adapterOf(chain: DevChain, withSweeper = true): EvmAdapter {
  return createEvmAdapter(
    devChainNetworkConfig(chain, { disperseAddress: DEV_SWEEP_CONTRACTS.disperse, ...(withSweeper && { sweeperAddress: DEV_SWEEP_CONTRACTS.sweeper }) }),
    { rpc: { maxAttempts: 1 } },
  );
}

/** A fresh deposit (nonce 0, no native coin) holding `amount` of the chain's USDT. */
async function depositWith(chain: DevChain, amount: bigint): Promise<{ wallet: Wallet; key: Uint8Array }> {
  const wallet = Wallet.createRandom();
  await mintTo(chain, 'USDT', wallet.address, amount);
  return { wallet: new Wallet(wallet.privateKey), key: getBytes(wallet.privateKey) };
}

const intentOf = (chain: DevChain, from: string, to: string, amount: bigint): TransferIntent => ({
  token: { address: chain.tokens[0]!.address, decimals: chain.tokens[0]!.decimals, symbol: 'USDT' },
  from,
  to,
  amount,
});

async function untilIncluded(adapter: EvmAdapter, tx: SignedTx, from: string): Promise<Extract<TxState, { state: 'included' }>> {
  for (let i = 0; i < 200; i++) {
    const s = await adapter.sweeps.txState(tx, from);
    if (s.state === 'included') return s;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`${tx.txHash} not included`);
}

describe.each(['ETHEREUM', 'BINANCE'] as const)('EVM sweeps on %s', (network) => {
  const chain = (): DevChain => chains[network];
  const settlement = Wallet.createRandom().address;

  it('detects the fee model from the chain: EIP-1559 with a base fee, legacy with base fee 0', async () => {
    const fees = await adapterOf(chain()).sweeps.fees();
    expect(fees.kind).toBe(network === 'ETHEREUM' ? 'eip1559' : 'legacy');
  });

  it('quote → top-up through disperse → transfer: the quote covers the real cost and leaves little dust', async () => {
    const adapter = adapterOf(chain(), false);
    const amount = 123_456_789n;
    const dep = await depositWith(chain(), amount);
    const intent = intentOf(chain(), dep.wallet.address, settlement, amount);
    const quote = await adapter.sweeps.quoteTransferFee(intent);
    expect(quote).toBeGreaterThan(0n);

    const [funding, ...more] = await adapter.sweeps.signFunding(TANK_KEY, [{ address: dep.wallet.address, amount: quote }], {});
    expect(more).toHaveLength(0);
    await adapter.sweeps.broadcast(funding!);
    expect((await untilIncluded(adapter, funding!, TANK)).success).toBe(true);
    expect(await adapter.sweeps.nativeBalance(dep.wallet.address)).toBe(quote);

    const before = await balanceOf(chain(), 'USDT', settlement);
    const tx = await adapter.sweeps.signTransfer(intent, { deposit: dep.key }, {});
    expect(tx.nonce).toBe(0n);
    expect(tx.expiresAt).toBeNull();
    await adapter.sweeps.broadcast(tx);
    const state = await untilIncluded(adapter, tx, dep.wallet.address);
    expect(state.success).toBe(true);
    const r = await waitForReceipt(chain(), tx.txHash);
    expect(state.feePaid).toBe(BigInt(r.gasUsed) * BigInt(r.effectiveGasPrice));
    expect(state.blockHash).toBe(r.blockHash);
    expect(await balanceOf(chain(), 'USDT', settlement)).toBe(before + amount);
    expect(await balanceOf(chain(), 'USDT', dep.wallet.address)).toBe(0n);

    const dust = await adapter.sweeps.nativeBalance(dep.wallet.address);
    expect(dust).toBe(quote - state.feePaid);
    expect(dust * 100n).toBeLessThanOrEqual(quote * MAX_DUST_PERCENT);
  });

  it('disperse funds many deposits in one transaction; broadcasting it twice is harmless', async () => {
    const adapter = adapterOf(chain(), false);
    const needs = Array.from({ length: 7 }, (_, i) => ({ address: Wallet.createRandom().address, amount: 10n ** 12n + BigInt(i) }));
    const txs = await adapter.sweeps.signFunding(TANK_KEY, needs, {});
    expect(txs).toHaveLength(1);
    await adapter.sweeps.broadcast(txs[0]!);
    await adapter.sweeps.broadcast(txs[0]!); // already known (pending) or nonce used by this very tx
    const st = await untilIncluded(adapter, txs[0]!, TANK);
    // what the tank spent: the fee and every wei it dispersed
    expect(st.signerSpent).toBe(st.feePaid + needs.reduce((s, n) => s + n.amount, 0n));
    await adapter.sweeps.broadcast(txs[0]!); // mined: nonce too low, but it is this transaction
    for (const n of needs) expect(await adapter.sweeps.nativeBalance(n.address)).toBe(n.amount);
    const tx = await chain().rpc.call<{ to: string }>('eth_getTransactionByHash', [txs[0]!.txHash]);
    expect(getAddress(tx.to)).toBe(DEV_SWEEP_CONTRACTS.disperse);
  });

  it('a transfer short of gas throws SweepGasShortError with the missing amount and signs nothing', async () => {
    const adapter = adapterOf(chain(), false);
    const dep = await depositWith(chain(), 5n);
    const intent = intentOf(chain(), dep.wallet.address, settlement, 5n);
    const err = await adapter.sweeps.signTransfer(intent, { deposit: dep.key }, {}).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SweepGasShortError);
    expect((err as SweepGasShortError).balance).toBe(0n);
    expect((err as SweepGasShortError).needed).toBeGreaterThan(0n);
    // the wrong key is refused before anything is signed
    await expect(adapter.sweeps.signTransfer(intent, { deposit: TANK_KEY }, {})).rejects.toThrow(/does not match/);
  });

  describe('without automine', () => {
    const manualMining = () => chain().rpc.call('evm_setAutomine', [false]);
    afterEach(() => chain().rpc.call('evm_setAutomine', [true]));

    it('a stuck transfer replaced with a fee bump: the replacement is included, the original dead', async () => {
      const adapter = adapterOf(chain(), false);
      const dep = await depositWith(chain(), 1000n);
      await chain().rpc.call('anvil_setBalance', [dep.wallet.address, toQuantity(10n ** 18n)]);
      await manualMining();
      const intent = intentOf(chain(), dep.wallet.address, settlement, 1000n);
      const first = await adapter.sweeps.signTransfer(intent, { deposit: dep.key }, {});
      await adapter.sweeps.broadcast(first);
      expect(await adapter.sweeps.txState(first, dep.wallet.address)).toEqual({ state: 'pending' });
      const bumped = await adapter.sweeps.signTransfer(intent, { deposit: dep.key }, { nonce: first.nonce!, feeBumpPercent: 125 });
      expect(bumped.nonce).toBe(first.nonce);
      expect(bumped.txHash).not.toBe(first.txHash);
      // anvil takes any higher fee; geth and BSC want every fee field ≥ 110 % of the stuck one's
      const [a, b] = [Transaction.from(first.raw), Transaction.from(bumped.raw)];
      for (const field of ['gasPrice', 'maxFeePerGas', 'maxPriorityFeePerGas'] as const) {
        if (a[field] !== null && a[field] > 0n) expect(b[field]! * 100n).toBeGreaterThanOrEqual(a[field] * 110n);
      }
      await adapter.sweeps.broadcast(bumped);
      await chain().rpc.call('evm_mine', []);
      expect((await adapter.sweeps.txState(bumped, dep.wallet.address)).state).toBe('included');
      expect(await adapter.sweeps.txState(first, dep.wallet.address)).toEqual({ state: 'dead' });
      // re-broadcasting the dead original is refused (its nonce went to another transaction)
      await expect(adapter.sweeps.broadcast(first)).rejects.toThrow(/nonce/i);
    });

    it('a transaction the node dropped is unknown, and re-broadcasting the stored raw transaction lands it', async () => {
      const adapter = adapterOf(chain(), false);
      await manualMining();
      const [tx] = await adapter.sweeps.signFunding(TANK_KEY, [{ address: Wallet.createRandom().address, amount: 1n }], {});
      await adapter.sweeps.broadcast(tx!);
      expect((await adapter.sweeps.txState(tx!, TANK)).state).toBe('pending');
      await chain().rpc.call('anvil_dropTransaction', [tx!.txHash]);
      expect(await adapter.sweeps.txState(tx!, TANK)).toEqual({ state: 'unknown' });
      await adapter.sweeps.broadcast(tx!);
      expect((await adapter.sweeps.txState(tx!, TANK)).state).toBe('pending');
      await chain().rpc.call('evm_mine', []);
      expect((await adapter.sweeps.txState(tx!, TANK)).state).toBe('included');
    });
  });

  describe('EIP-7702 batch sweeps', () => {
    it('sweeps N deposits in one tank transaction, with no top-up; a later payment is swept again', async () => {
      const adapter = adapterOf(chain());
      const batch = adapter.sweeps.batch!;
      expect(batch.maxBatch).toBe(100);
      const deps = [];
      for (const k of [1n, 2n, 3n, 4n, 5n]) deps.push(await depositWith(chain(), k * 1000n));
      const before = await balanceOf(chain(), 'USDT', settlement);
      const items = deps.map((d, i) => ({ intent: intentOf(chain(), d.wallet.address, settlement, BigInt(i + 1) * 1000n), depositKey: d.key }));
      const tx = await batch.signBatchSweep(TANK_KEY, items, {});
      await adapter.sweeps.broadcast(tx);
      const state = await untilIncluded(adapter, tx, TANK);
      expect(state.success).toBe(true);
      expect(await balanceOf(chain(), 'USDT', settlement)).toBe(before + 15_000n);
      for (const d of deps) {
        expect(await balanceOf(chain(), 'USDT', d.wallet.address)).toBe(0n);
        expect(await adapter.sweeps.nativeBalance(d.wallet.address)).toBe(0n);
        expect(await chain().rpc.call<string>('eth_getCode', [d.wallet.address, 'latest'])).toBe(
          `0xef0100${DEV_SWEEP_CONTRACTS.sweeper.slice(2).toLowerCase()}`,
        );
      }

      // a payment after the sweep arrives normally and is swept again, without a new authorization
      await mintTo(chain(), 'USDT', deps[0]!.wallet.address, 777n);
      const again = await batch.signBatchSweep(
        TANK_KEY,
        [{ intent: intentOf(chain(), deps[0]!.wallet.address, settlement, 777n), depositKey: deps[0]!.key }],
        {},
      );
      const raw = await chain().rpc.call<{ type: string }>('eth_getTransactionByHash', [tx.txHash]);
      expect(raw.type).toBe('0x4');
      await adapter.sweeps.broadcast(again);
      expect((await untilIncluded(adapter, again, TANK)).success).toBe(true);
      expect((await chain().rpc.call<{ type: string }>('eth_getTransactionByHash', [again.txHash])).type).not.toBe('0x4');
      expect(await balanceOf(chain(), 'USDT', settlement)).toBe(before + 15_777n);
      // native coin still reaches a delegated deposit (its receive())
      const [topUp] = await adapter.sweeps.signFunding(TANK_KEY, [{ address: deps[1]!.wallet.address, amount: 5n }], {});
      await adapter.sweeps.broadcast(topUp!);
      expect((await untilIncluded(adapter, topUp!, TANK)).success).toBe(true);
      expect(await adapter.sweeps.nativeBalance(deps[1]!.wallet.address)).toBe(5n);
    });

    it('nobody but the tank can move a delegated deposit’s tokens', async () => {
      const adapter = adapterOf(chain());
      const dep = await depositWith(chain(), 5000n);
      const tx = await adapter.sweeps.batch!.signBatchSweep(
        TANK_KEY,
        [{ intent: intentOf(chain(), dep.wallet.address, settlement, 1n), depositKey: dep.key }],
        {},
      );
      await adapter.sweeps.broadcast(tx);
      await untilIncluded(adapter, tx, TANK);
      expect(await balanceOf(chain(), 'USDT', dep.wallet.address)).toBe(4999n);

      const attacker = new Wallet(CUSTOMER_PRIVATE_KEYS[4]!, chain().provider);
      const token = chain().tokens[0]!.address;
      const calls = [
        // the delegated deposit itself, called directly
        { to: dep.wallet.address, data: SWEEPER_ABI.encodeFunctionData('sweep', [token, attacker.address, 4999n]) },
        // the Sweeper's batch entry
        { to: DEV_SWEEP_CONTRACTS.sweeper, data: SWEEPER_ABI.encodeFunctionData('sweepBatch', [[dep.wallet.address], [token], [attacker.address], [4999n]]) },
        // the Sweeper's own sweep (runs in the Sweeper's context: must refuse too)
        { to: DEV_SWEEP_CONTRACTS.sweeper, data: SWEEPER_ABI.encodeFunctionData('sweep', [token, attacker.address, 0n]) },
      ];
      const unauthorized = new Interface(['error Unauthorized()']).getError('Unauthorized')!.selector;
      for (const call of calls) {
        const res = await fetch(chain().rpcUrl, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_call', params: [{ from: attacker.address, ...call }, 'latest'] }),
        });
        const body = (await res.json()) as { error?: { data?: string } };
        expect(body.error?.data?.slice(0, 10)).toBe(unauthorized);
        // and mined, it reverts and moves nothing
        const sent = await attacker.sendTransaction({ ...call, gasLimit: 200_000, ...(network === 'BINANCE' && { type: 0, gasPrice: 10n ** 9n }) });
        const r = await waitForReceipt(chain(), sent.hash, { allowRevert: true }); // not sent.wait(): it throws on the revert this expects
        expect(r.status).toBe('0x0');
      }
      expect(await balanceOf(chain(), 'USDT', dep.wallet.address)).toBe(4999n);
      // a batch signed by another key is refused before signing (the Sweeper obeys only its tank)
      await expect(
        adapter.sweeps.batch!.signBatchSweep(
          getBytes(CUSTOMER_PRIVATE_KEYS[4]!),
          [{ intent: intentOf(chain(), dep.wallet.address, attacker.address, 1n), depositKey: dep.key }],
          {},
        ),
      ).rejects.toThrow(/obeys/);
    });

    it('one failing item reverts the whole batch: nothing moves, the fee is paid by the tank', async () => {
      const adapter = adapterOf(chain());
      const a = await depositWith(chain(), 100n);
      const b = await depositWith(chain(), 100n);
      const first = await adapter.sweeps.batch!.signBatchSweep(
        TANK_KEY,
        [{ intent: intentOf(chain(), a.wallet.address, settlement, 100n), depositKey: a.key }],
        {},
      );
      await adapter.sweeps.broadcast(first);
      await untilIncluded(adapter, first, TANK);
      // a is empty now: the batch would revert, so estimation already fails and nothing is signed
      await expect(
        adapter.sweeps.batch!.signBatchSweep(
          TANK_KEY,
          [
            { intent: intentOf(chain(), b.wallet.address, settlement, 100n), depositKey: b.key },
            { intent: intentOf(chain(), a.wallet.address, settlement, 1n), depositKey: a.key },
          ],
          {},
        ),
      ).rejects.toThrow();
      expect(await balanceOf(chain(), 'USDT', b.wallet.address)).toBe(100n);
    });
  });
});
