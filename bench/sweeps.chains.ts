import { randomBytes } from 'node:crypto';
import { Connection, Keypair, LAMPORTS_PER_SOL, PublicKey } from '@solana/web3.js';
import type { App } from '../src/app.js';
import { watchedNetworks } from '../src/chains/networks.js';
import { tronDriver, type TronAdapter } from '../src/chains/tron/index.js';
import { getAssociatedTokenAddressSync } from '@solana/spl-token';
import { startSolanaFacade, type SolanaFacade } from '../src/devchain/solana.facade.js';
import { startTronEmulator, type TronEmulator } from '../src/devchain/tron.emulator.js';
import type { Orm } from '../src/db/orm.js';
import type { MerchantWallet } from '../src/modules/deposits/wallet.entity.js';
import { createSweepEngine } from '../src/jobs/sweep.job.js';
import { ledgerDelta, seedPaidDeposits, sweepUntilConfirmed, tankLedger, tankSpend, tokenId, type TankSpend } from './sweeps.fixture.js';

/**
 * The TRON and SOLANA cases of `bench:sweeps`: paid deposits on the project's emulator / facade swept
 * by the real engine, the tank's spend read from its ledger and from its balance on chain.
 */
export interface CaseContext {
  app: App;
  orm: Orm;
  merchantId: string;
  wallet: MerchantWallet;
}

const AMOUNT = 10_000_000n; // 10 USDT / USDC (6 decimals)
const TRX = 1_000_000n;

/**
 * TRON with the emulator's resource model (activation, bandwidth, energy at the emulator's chain
 * parameters): first the burn path (the tank has no stake: it sends each deposit the TRX its transfer
 * burns), then the delegation path (the tank stakes once, outside the measure, and lends each deposit
 * energy, taking it back after the sweep). Every deposit is fresh: each pays its account's activation.
 */
export async function tronCase(ctx: CaseContext, deposits: number): Promise<TankSpend[]> {
  const emu = await startTronEmulator({ resources: true, solidityLag: 0 });
  try {
    const { app, orm } = ctx;
    const target = watchedNetworks(app.config, { 'sandbox:TRON': [emu.url] }).find((t) => t.environment === 'sandbox' && t.network === 'TRON')!;
    const usdt = await emu.deployToken();
    const em = orm.em.fork();
    const c = em.getConnection();
    await app.tokens.upsert(em, { environment: 'sandbox', network: 'TRON', symbol: 'USDT', name: 'Tether USD (emulator)', address: usdt, decimals: 6 });
    const tok = await tokenId(c, 'TRON', usdt);
    const tank = app.gasTanks.address('sandbox', 'TRON')!;
    await emu.setTrx(tank, 1_000_000n * TRX);
    const settlement = tronDriver.deriveAddress(randomBytes(64), 0);
    await c.execute(`insert into settlement_wallets (merchant_id, environment, network, address, active_from) values (?, 'sandbox', 'TRON', ?, now())`, [
      ctx.merchantId,
      settlement,
    ]);
    const engine = createSweepEngine(app, target, undefined);
    const sweeps = (target.adapter as TronAdapter).sweeps;
    const out: TankSpend[] = [];
    let swept = 0;
    for (const path of ['burn', 'delegation'] as const) {
      let staked = 0n;
      if (path === 'delegation') {
        const key = app.gasTanks.signingKey('sandbox', 'TRON');
        staked = 500_000n * TRX;
        const stake = await sweeps.signStake(key, staked, {});
        key.fill(0);
        await sweeps.broadcast(stake);
        await emu.mine(1);
      }
      const first = 10_000 + swept;
      const addresses = Array.from({ length: deposits }, (_, i) => app.wallets.deriveAddress(ctx.wallet, 'tron', first + i));
      await mintEach(emu, usdt, addresses);
      await seedPaidDeposits(c, {
        merchantId: ctx.merchantId,
        walletId: ctx.wallet.id,
        network: 'TRON',
        family: 'tron',
        walletType: 'TRUSTWALLET',
        tokenId: tok,
        decimals: 6,
        addresses,
        firstIndex: first,
        amount: AMOUNT,
        payer: tank,
        tag: `tron-${path}`,
      });
      await c.execute(`insert into sweep_requests (merchant_id, environment, network) values (?, 'sandbox', 'TRON')`, [ctx.merchantId]);
      const ledgerBefore = await tankLedger(c, 'TRON');
      const balanceBefore = await emu.trxBalance(tank);
      const t0 = performance.now();
      // delegation: done once every lent energy is back (the reclaims are the tank's transactions too)
      const reclaimed = async () => staked === 0n || (await sweeps.tankStake(tank)).delegatableSun === staked;
      await sweepUntilConfirmed(orm, engine, 'TRON', swept + deposits, () => emu.mine(1).then(() => undefined), reclaimed);
      const seconds = (performance.now() - t0) / 1000;
      swept += deposits;
      const ledger = ledgerDelta(ledgerBefore, await tankLedger(c, 'TRON'));
      out.push(tankSpend('TRON', deposits, seconds, ledger, balanceBefore - (await emu.trxBalance(tank)), path));
    }
    const held = BigInt(
      (await c.execute<{ s: string }[]>(`select coalesce(sum(amount), 0)::text as s from sweeps where network = 'TRON' and status = 'confirmed'`))[0]!.s,
    );
    const onChain = await emu.balanceOf(usdt, settlement);
    if (held !== AMOUNT * BigInt(swept) || onChain !== held)
      throw new Error(`TRON: swept ${held}, settlement holds ${onChain}, expected ${AMOUNT * BigInt(swept)}`);
    return out;
  } finally {
    await emu.stop();
  }
}

async function mintEach(emu: TronEmulator, token: string, to: string[]): Promise<void> {
  for (const a of to) await emu.mint(token, a, AMOUNT);
}

/** The facade sometimes refuses a blockhash read a moment before: a new slot, a new blockhash, once more. */
async function mintRetrying(facade: SolanaFacade, owner: PublicKey, mint: PublicKey): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await facade.mintTo(owner, mint, AMOUNT);
      return;
    } catch (err) {
      if (attempt >= 5 || !String(err).includes('Blockhash not found')) throw err;
      facade.advanceSlots(1);
    }
  }
}

/** SOLANA on the litesvm facade: the tank is every sweep's fee payer and opens the settlement's token account once. */
export async function solanaCase(ctx: CaseContext, deposits: number): Promise<TankSpend[]> {
  const facade = await startSolanaFacade({ finalityLag: 1 });
  try {
    const { app, orm } = ctx;
    const target = watchedNetworks(app.config, { 'sandbox:SOLANA': [facade.url] }).find((t) => t.environment === 'sandbox' && t.network === 'SOLANA')!;
    const mint = await facade.createUsdcMint({ decimals: 6 });
    const em = orm.em.fork();
    const c = em.getConnection();
    await app.tokens.upsert(em, {
      environment: 'sandbox',
      network: 'SOLANA',
      symbol: 'USDC',
      name: 'USD Coin (litesvm)',
      address: mint.toBase58(),
      decimals: 6,
    });
    const tok = await tokenId(c, 'SOLANA', mint.toBase58());
    const conn = new Connection(facade.url, 'confirmed');
    const tank = new PublicKey(app.gasTanks.address('sandbox', 'SOLANA')!);
    const sig = await conn.requestAirdrop(tank, 100 * LAMPORTS_PER_SOL);
    await conn.confirmTransaction({ signature: sig, ...(await conn.getLatestBlockhash('confirmed')) }, 'confirmed');
    const settlement = Keypair.generate().publicKey.toBase58();
    await c.execute(`insert into settlement_wallets (merchant_id, environment, network, address, active_from) values (?, 'sandbox', 'SOLANA', ?, now())`, [
      ctx.merchantId,
      settlement,
    ]);
    const addresses = Array.from({ length: deposits }, (_, i) => app.wallets.deriveAddress(ctx.wallet, 'solana', 20_000 + i));
    for (const a of addresses) await mintRetrying(facade, new PublicKey(a), mint);
    await seedPaidDeposits(c, {
      merchantId: ctx.merchantId,
      walletId: ctx.wallet.id,
      network: 'SOLANA',
      family: 'solana',
      walletType: 'PHANTOM',
      tokenId: tok,
      decimals: 6,
      addresses,
      firstIndex: 20_000,
      amount: AMOUNT,
      payer: tank.toBase58(),
      tag: 'solana',
    });
    await c.execute(`insert into sweep_requests (merchant_id, environment, network) values (?, 'sandbox', 'SOLANA')`, [ctx.merchantId]);
    const engine = createSweepEngine(app, target, undefined);
    const balance = async () => BigInt(await conn.getBalance(tank, 'confirmed'));
    const before = await balance();
    const t0 = performance.now();
    await sweepUntilConfirmed(orm, engine, 'SOLANA', deposits, async () => facade.advanceSlots(2));
    const seconds = (performance.now() - t0) / 1000;
    const ledger = await tankLedger(c, 'SOLANA');
    const spend = tankSpend('SOLANA', deposits, seconds, ledger, before - (await balance()));
    const onChain = BigInt((await conn.getTokenAccountBalance(getAssociatedTokenAddressSync(mint, new PublicKey(settlement)))).value.amount);
    if (onChain !== AMOUNT * BigInt(deposits)) throw new Error(`SOLANA: settlement holds ${onChain}, expected ${AMOUNT * BigInt(deposits)}`);
    return [spend];
  } finally {
    await facade.stop();
  }
}
