import { getBytes, Mnemonic } from 'ethers';

import {
  NATIVE_TOKEN,
  TxRejectedError,
  type ChainNetworkConfig,
  type SignedTx,
  type TransferIntent,
  type TxState,
  type WatchedToken,
} from '../../src/chains/chain-adapter';
import { createTronAdapter, tronDriver, type TronAdapter } from '../../src/chains/tron';
import { startTronEmulator, type TronEmulator } from '../../src/devchain/tron.emulator';

// Same seed as tron-adapter.test.ts (see there why ethers derives it).
const seed = getBytes(Mnemonic.fromPhrase('abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about').computeSeed());
const TRX = 1_000_000n;

/**
 * TRON sweeps on the emulator with its resource model on: accounts must be activated, bandwidth and
 * energy are paid (staked, delegated or burnt), so both funding paths are exercised for real.
 */
describe('TRON sweeps (emulator with the resource model)', () => {
  let emu: TronEmulator;
  let adapter: TronAdapter;
  let usdt: WatchedToken;
  const tankKey = tronDriver.derivePrivateKey(seed, 900);
  const tank = tronDriver.deriveAddress(seed, 900);
  const poorTankKey = tronDriver.derivePrivateKey(seed, 901);
  const poorTank = tronDriver.deriveAddress(seed, 901);
  const settlement = tronDriver.deriveAddress(seed, 950);
  const deposit = (i: number) => ({ address: tronDriver.deriveAddress(seed, i), key: tronDriver.derivePrivateKey(seed, i) });

  const intent = (from: string, amount: bigint): TransferIntent => ({ token: usdt, from, to: settlement, amount });

  async function included(tx: SignedTx): Promise<Extract<TxState, { state: 'included' }>> {
    const state = await adapter.sweeps.txState(tx, '');
    if (state.state !== 'included') throw new Error(`expected ${tx.txHash} included, got ${state.state}`);
    return state;
  }

  async function send(tx: SignedTx) {
    await adapter.sweeps.broadcast(tx);
    return included(tx);
  }

  beforeAll(async () => {
    emu = await startTronEmulator({ resources: true, solidityLag: 0 });
    usdt = { address: await emu.deployToken(), decimals: 6, symbol: 'USDT' };
    const config: ChainNetworkConfig = { network: 'TRON', rpcUrls: [emu.url], confirmations: 0, maxBlockRange: 100, timeoutMs: 5000 };
    adapter = createTronAdapter(config, { sweep: { txExpirationMs: 60_000 } });
    await emu.setTrx(tank, 100_000n * TRX);
    await emu.setTrx(poorTank, 1_000n * TRX);
  }, 60_000);

  afterAll(async () => {
    await emu?.stop();
  });

  it('quotes a TRC-20 transfer: energy × energy price + bandwidth without energy, nothing but bandwidth once energy is there', async () => {
    const d = deposit(10);
    await emu.mint(usdt.address, d.address, 5_000_000n);
    const q = await adapter.sweeps.quoteTransfer(intent(d.address, 5_000_000n));
    expect(q.exists).toBe(false);
    expect(q.energy).toBeGreaterThan(10_000n);
    expect(q.bandwidth).toBeGreaterThan(250n);
    expect(q.bandwidth).toBeLessThan(400n);
    expect(q.energyPrice).toBe(100n);
    expect(q.bandwidthPrice).toBe(1000n);
    expect(q.burnWithoutEnergy).toBe(q.energy * 100n + q.bandwidth * 1000n);
    // a deposit that does not exist has no free bandwidth either
    expect(q.burnNow).toBe(q.burnWithoutEnergy);
    expect(await adapter.sweeps.quoteTransferFee(intent(d.address, 5_000_000n))).toBe(q.burnNow);
  });

  it('delegation path: activates the deposit, delegates staked energy, sweeps burning no TRX for energy, reclaims the energy', async () => {
    // the operator stakes once (CLI `gas-tank stake`)
    const stakeTx = await adapter.sweeps.signStake(tankKey, 50_000n * TRX);
    expect((await send(stakeTx)).success).toBe(true);
    const stake = await adapter.sweeps.tankStake(tank);
    expect(stake.delegatableSun).toBe(50_000n * TRX);

    const d = deposit(10);
    const amount = await emu.balanceOf(usdt.address, d.address);
    const fee = await adapter.sweeps.quoteTransferFee(intent(d.address, amount));
    const funding = await adapter.sweeps.signFunding(tankKey, [{ address: d.address, amount: fee }], {});
    expect(funding).toHaveLength(2); // activation, then delegation
    const tankBefore = await emu.trxBalance(tank);
    const activation = await send(funding[0]!); // in order: a delegation needs an existing account
    const delegation = await send(funding[1]!);
    expect(activation.success && delegation.success).toBe(true);
    // activation = a 1-sun transfer to a new account: 1 TRX creation fee + 0.1 TRX for bandwidth
    expect(activation.feePaid).toBe(1_100_000n);
    expect(delegation.feePaid).toBe(0n); // the tank's free bandwidth
    // what the tank spent: the activation's fee and the sun it sent; a delegation lends, spends nothing
    expect(activation.signerSpent).toBe(1_100_000n + 1n);
    expect(delegation.signerSpent).toBe(0n);
    expect(await emu.trxBalance(tank)).toBe(tankBefore - 1_100_000n - 1n);
    expect(await emu.accountExists(d.address)).toBe(true);
    expect((await adapter.sweeps.tankStake(tank)).delegatableSun).toBeLessThan(50_000n * TRX);

    // with the energy delegated and free bandwidth, the transfer burns nothing
    const q = await adapter.sweeps.quoteTransfer(intent(d.address, amount));
    expect(q.energyAvailable).toBeGreaterThanOrEqual(q.energy);
    expect(q.burnNow).toBe(0n);

    const settlementBefore = await emu.balanceOf(usdt.address, settlement);
    const sweep = await adapter.sweeps.signTransfer(intent(d.address, amount), { deposit: d.key }, {});
    expect(sweep.nonce).toBeNull();
    expect(Number(sweep.expiresAt)).toBeGreaterThan(Date.now() - 120_000);
    expect(JSON.parse(sweep.raw).txID).toBe(sweep.txHash);
    await adapter.sweeps.broadcast(sweep);
    await adapter.sweeps.broadcast(sweep); // idempotent: the node already has it
    const state = await included(sweep);
    expect(state.success).toBe(true);
    expect(state.feePaid).toBe(0n);
    expect(state.resourceUsage!.energy).toBeGreaterThan(0n);
    expect(state.resourceUsage!.energyFee).toBe(0n);
    expect(state.resourceUsage!.bandwidth).toBe(q.bandwidth);
    expect(await emu.balanceOf(usdt.address, settlement)).toBe(settlementBefore + amount);
    expect(await emu.balanceOf(usdt.address, d.address)).toBe(0n);
    expect(await emu.trxBalance(d.address)).toBe(1n); // nothing burnt: only the activation sun is left

    // reclaim after confirmation; a second call (after a crash) finds nothing outstanding
    const reclaim = await adapter.sweeps.signReclaim(tankKey, [d.address], {});
    expect(reclaim).toHaveLength(1);
    expect((await send(reclaim[0]!)).success).toBe(true);
    expect(await adapter.sweeps.signReclaim(tankKey, [d.address], {})).toEqual([]);
    expect((await adapter.sweeps.tankStake(tank)).delegatableSun).toBe(50_000n * TRX);
    console.log(
      `TRON sweep, delegated energy: energy ${state.resourceUsage!.energy}, bandwidth ${state.resourceUsage!.bandwidth}, fee ${state.feePaid} sun; ` +
        `activation ${activation.feePaid} sun; same transfer without energy would burn ${q.energy * q.energyPrice} sun (+${q.bandwidth * q.bandwidthPrice} sun bandwidth without free allowance)`,
    );
  });

  it('burn path: a tank with no stake sends the TRX the transfer burns; the fee actually paid is recorded', async () => {
    const d = deposit(11);
    await emu.mint(usdt.address, d.address, 7_000_000n);
    const fee = await adapter.sweeps.quoteTransferFee(intent(d.address, 7_000_000n));
    const funding = await adapter.sweeps.signFunding(poorTankKey, [{ address: d.address, amount: fee }], {});
    expect(funding).toHaveLength(1); // one TRX transfer, which also activates the account
    const topup = await send(funding[0]!);
    expect(topup.feePaid).toBe(1_100_000n);
    const sent = (fee * 120n) / 100n; // the quote + the 20 % margin
    expect(await emu.trxBalance(d.address)).toBe(sent);
    expect(topup.signerSpent).toBe(1_100_000n + sent); // the tank spent the fee and the TRX it sent

    const q = await adapter.sweeps.quoteTransfer(intent(d.address, 7_000_000n));
    expect(q.exists).toBe(true);
    expect(q.burnNow).toBe(q.energy * q.energyPrice); // free bandwidth now; energy still burnt
    const sweep = await adapter.sweeps.signTransfer(intent(d.address, 7_000_000n), { deposit: d.key }, {});
    const state = await send(sweep);
    expect(state.success).toBe(true);
    expect(state.feePaid).toBe(state.resourceUsage!.energy * 100n);
    expect(state.feePaid).toBeGreaterThan(0n);
    expect(state.feePaid).toBeLessThanOrEqual(fee);
    expect(await emu.trxBalance(d.address)).toBe(sent - state.feePaid);
    expect(await emu.balanceOf(usdt.address, d.address)).toBe(0n);
    console.log(
      `TRON sweep, TRX burnt for energy: fee ${state.feePaid} sun for ${state.resourceUsage!.energy} energy (top-up ${fee} sun, activation ${topup.feePaid} sun)`,
    );
  });

  it('native TRX at a deposit: the quote is the bandwidth it would burn and the creation of the recipient; the transfer of the rest lands exactly', async () => {
    const native = { address: NATIVE_TOKEN, decimals: 6, symbol: 'TRX' };
    const fresh = tronDriver.deriveAddress(seed, 951);
    const d = deposit(16);
    await emu.setTrx(d.address, 50n * TRX); // exists, with its free bandwidth
    const held = await emu.trxBalance(d.address);
    const trxIntent = (to: string, amount: bigint): TransferIntent => ({ token: native, from: d.address, to, amount });
    // the recipient does not exist yet: its creation is the cost (free bandwidth covers the bytes)
    const fee = await adapter.sweeps.quoteTransferFee(trxIntent(fresh, held));
    expect(fee).toBe(1_100_000n);
    const amount = held - fee;
    const state = await send(await adapter.sweeps.signTransfer(trxIntent(fresh, amount), { deposit: d.key }, {}));
    expect(state.success).toBe(true);
    expect(state.feePaid).toBeLessThanOrEqual(fee);
    expect(await emu.trxBalance(fresh)).toBe(amount);
    expect(await emu.trxBalance(d.address)).toBe(held - amount - state.feePaid);
    // once the recipient exists and the deposit has free bandwidth, a TRX transfer costs nothing
    const e = deposit(17);
    await emu.setTrx(e.address, 3n * TRX);
    expect(await adapter.sweeps.quoteTransferFee({ token: native, from: e.address, to: fresh, amount: 3n * TRX })).toBe(0n);
  });

  it('fails a transfer with OUT_OF_ENERGY when neither energy nor TRX suffice (fee still charged, tokens stay)', async () => {
    const d = deposit(12);
    await emu.mint(usdt.address, d.address, 1_000_000n);
    await emu.setTrx(d.address, 1000n); // exists, free bandwidth, but 1000 sun buys 10 energy
    const sweep = await adapter.sweeps.signTransfer(intent(d.address, 1_000_000n), { deposit: d.key }, {});
    const state = await send(sweep);
    expect(state.success).toBe(false);
    expect(state.feePaid).toBe(1000n);
    const info = (await (
      await fetch(`${emu.url}/wallet/gettransactioninfobyid`, { method: 'POST', body: JSON.stringify({ value: sweep.txHash }) })
    ).json()) as {
      result?: string;
      receipt?: { result?: string; energy_fee?: number };
    };
    expect(info).toMatchObject({ result: 'FAILED', receipt: { result: 'OUT_OF_ENERGY', energy_fee: 1000 } });
    expect(await emu.balanceOf(usdt.address, d.address)).toBe(1_000_000n);
    expect(await emu.trxBalance(d.address)).toBe(0n);
  });

  it('a deposit that never received TRX does not exist and cannot send: the broadcast is refused, the tx stays unknown', async () => {
    const d = deposit(13);
    await emu.mint(usdt.address, d.address, 1_000_000n);
    const sweep = await adapter.sweeps.signTransfer(intent(d.address, 1_000_000n), { deposit: d.key }, {});
    await expect(adapter.sweeps.broadcast(sweep)).rejects.toMatchObject({ name: 'TxRejectedError', reason: 'CONTRACT_VALIDATE_ERROR' });
    expect((await adapter.sweeps.txState(sweep, d.address)).state).toBe('unknown');
  });

  it('txState is dead after expiry, the stale tx is refused, and a fresh signature sweeps', async () => {
    const d = deposit(14);
    await emu.mint(usdt.address, d.address, 2_000_000n);
    await emu.setTrx(d.address, 100n * TRX);
    const stale = await adapter.sweeps.signTransfer(intent(d.address, 2_000_000n), { deposit: d.key }, {});
    expect((await adapter.sweeps.txState(stale, d.address)).state).toBe('unknown');
    await emu.advanceTime(61);
    expect((await adapter.sweeps.txState(stale, d.address)).state).toBe('dead');
    const err = await adapter.sweeps.broadcast(stale).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TxRejectedError);
    expect(err).toMatchObject({ reason: 'TRANSACTION_EXPIRATION_ERROR', expired: true });

    const fresh = await adapter.sweeps.signTransfer(intent(d.address, 2_000_000n), { deposit: d.key }, {});
    expect(fresh.txHash).not.toBe(stale.txHash);
    expect((await send(fresh)).success).toBe(true);
    expect(await emu.balanceOf(usdt.address, d.address)).toBe(0n);
  });

  it('the watcher does not count the sweep outflow as a payment; a payment after the sweep is counted', async () => {
    const d = deposit(15);
    await emu.mint(usdt.address, d.address, 3_000_000n);
    await emu.setTrx(d.address, 100n * TRX);
    const from = (await emu.latestBlock()) + 1n;
    const sweep = await adapter.sweeps.signTransfer(intent(d.address, 3_000_000n), { deposit: d.key }, {});
    await send(sweep);
    const isDeposit = (a: string) => a === d.address;
    expect(await adapter.scanTransfers(from, await emu.latestBlock(), [usdt], isDeposit)).toEqual([]);
    const late = await emu.mint(usdt.address, d.address, 4_000_000n);
    const seen = await adapter.scanTransfers(from, await emu.latestBlock(), [usdt], isDeposit);
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ txHash: late.txId, to: d.address, amount: 4_000_000n });
  });
});

describe('TRON sweeps on the emulator as `npm start` runs it (no resource model)', () => {
  let emu: TronEmulator;

  afterAll(async () => {
    await emu?.stop();
  });

  it('the same calls work and cost nothing: top-up, sweep, reclaim of nothing', async () => {
    emu = await startTronEmulator({ solidityLag: 0 });
    const usdt: WatchedToken = { address: await emu.deployToken(), decimals: 6, symbol: 'USDT' };
    const adapter = createTronAdapter({ network: 'TRON', rpcUrls: [emu.url], confirmations: 0, maxBlockRange: 100, timeoutMs: 5000 });
    const tankKey = tronDriver.derivePrivateKey(seed, 902);
    await emu.setTrx(tronDriver.deriveAddress(seed, 902), 1_000n * TRX); // the sandbox must fund its tank too
    const d = { address: tronDriver.deriveAddress(seed, 30), key: tronDriver.derivePrivateKey(seed, 30) };
    const settlement = tronDriver.deriveAddress(seed, 951);
    await emu.mint(usdt.address, d.address, 9_000_000n);
    const intent: TransferIntent = { token: usdt, from: d.address, to: settlement, amount: 9_000_000n };
    const fee = await adapter.sweeps.quoteTransferFee(intent);
    expect(fee).toBeGreaterThan(0n); // quoted at chain prices even though the emulator charges none
    const [topup] = await adapter.sweeps.signFunding(tankKey, [{ address: d.address, amount: fee }], {});
    await adapter.sweeps.broadcast(topup!);
    const funded = await adapter.sweeps.txState(topup!, '');
    expect(funded).toMatchObject({ state: 'included', success: true, feePaid: 0n });
    const sweep = await adapter.sweeps.signTransfer(intent, { deposit: d.key }, {});
    await adapter.sweeps.broadcast(sweep);
    expect(await adapter.sweeps.txState(sweep, d.address)).toMatchObject({ state: 'included', success: true, feePaid: 0n });
    expect(await emu.balanceOf(usdt.address, settlement)).toBe(9_000_000n);
    expect(await emu.balanceOf(usdt.address, d.address)).toBe(0n);
    expect(await adapter.sweeps.signReclaim(tankKey, [d.address], {})).toEqual([]);
  }, 60_000);
});
