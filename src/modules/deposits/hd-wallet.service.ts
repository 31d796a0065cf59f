import type { EntityManager } from '@mikro-orm/postgresql';
import { generateMnemonic, mnemonicToSeedSync } from '@scure/bip39';
import { wordlist } from '@scure/bip39/wordlists/english.js';
import { randomUUID } from 'node:crypto';
import type { ChainFamily } from '../../chains/chain-adapter.js';
import { driverOfFamily } from '../../chains/registry.js';
import type { SecretBox } from '../../common/crypto.js';
import type { Environment } from '../../common/environment.js';
import { MerchantWallet } from './wallet.entity.js';

/**
 * Seeds and key derivers of the wallets one batch signs for, bounded to that batch: `wipe()` when
 * it is signed (the seeds are zeroed, the derivers dropped).
 */
export class SigningKeyCache {
  readonly seeds = new Map<string, Uint8Array>();
  readonly derivers = new Map<string, (index: number) => Uint8Array>();

  wipe(): void {
    for (const seed of this.seeds.values()) seed.fill(0);
    this.seeds.clear();
    this.derivers.clear();
  }
}

/**
 * Each merchant has one BIP-39 wallet per environment, generated here and sealed at rest under the data key (docs/security.md "Keys at rest").
 * Deposit indexes come from a per-(wallet, family) counter bumped atomically in the database.
 */
export class HdWalletService {
  constructor(private readonly box: SecretBox) {}

  /** The merchant's wallet for `environment`, created on first use (race-safe: unique merchant+environment). */
  async walletFor(em: EntityManager, merchantId: string, environment: Environment): Promise<MerchantWallet> {
    const found = await em.findOne(MerchantWallet, { merchant: merchantId, environment });
    if (found) return found;
    const id = randomUUID();
    const sealed = this.box.seal(generateMnemonic(wordlist, 256), `wallet:${id}`);
    await em.execute(
      `insert into merchant_wallets (id, merchant_id, environment, mnemonic_ciphertext) values (?, ?, ?, ?) on conflict (merchant_id, environment) do nothing`,
      [id, merchantId, environment, sealed],
    );
    return em.findOneOrFail(MerchantWallet, { merchant: merchantId, environment });
  }

  /** Takes the next index for (wallet, family). Never hands out the same index twice, even under concurrency. */
  async nextIndex(em: EntityManager, walletId: string, family: ChainFamily): Promise<number> {
    const rows = await em.execute<{ idx: number }[]>(
      `insert into wallet_counters (wallet_id, family, next_index) values (?, ?, 1)
       on conflict (wallet_id, family) do update set next_index = wallet_counters.next_index + 1
       returning next_index - 1 as idx`,
      [walletId, family],
    );
    return Number(rows[0]!.idx);
  }

  seed(wallet: MerchantWallet): Uint8Array {
    const mnemonic = this.box.open(wallet.mnemonicCiphertext, `wallet:${wallet.id}`).toString('utf8');
    return mnemonicToSeedSync(mnemonic);
  }

  /**
   * The private key of deposit `index` of `walletId`, for one signing only (sweeps): the caller must
   * not keep, log or return it. `cache` lets one batch reuse a wallet's seed and key deriver across
   * its deposits (the caller wipes it when the batch is signed).
   */
  async signingKey(em: EntityManager, walletId: string, family: ChainFamily, index: number, cache?: SigningKeyCache): Promise<Uint8Array> {
    const driver = driverOfFamily(family);
    if (!cache) {
      const seed = this.seed(await em.findOneOrFail(MerchantWallet, { id: walletId }));
      try {
        return driver.derivePrivateKey(seed, index);
      } finally {
        seed.fill(0);
      }
    }
    let seed = cache.seeds.get(walletId);
    if (!seed) {
      const opened = this.seed(await em.findOneOrFail(MerchantWallet, { id: walletId }));
      // concurrent signers of one batch: the first seed stored wins, the other copy is zeroed
      seed = cache.seeds.get(walletId);
      if (seed) opened.fill(0);
      else cache.seeds.set(walletId, (seed = opened));
    }
    const key = `${walletId}/${family}`;
    let derive = cache.derivers.get(key);
    if (!derive) {
      const s = seed;
      derive = driver.privateKeyDeriver?.(s) ?? ((i: number) => driver.derivePrivateKey(s, i));
      cache.derivers.set(key, derive);
    }
    return derive(index);
  }

  deriveAddress(wallet: MerchantWallet, family: ChainFamily, index: number): string {
    return driverOfFamily(family).deriveAddress(this.seed(wallet), index);
  }
}
