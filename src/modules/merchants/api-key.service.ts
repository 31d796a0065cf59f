import { recordAudit, type AuditSource } from '../audit/audit.service.js';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import { cidrMatcher } from '../../common/ip.js';
import { resolveEnvironment } from '../../common/access.js';
import type { Caller } from '../../common/context.js';
import { randomHex, safeEqual, sha256Hex, type SecretBox } from '../../common/crypto.js';
import type { Environment } from '../../common/environment.js';
import { DomainError } from '../../common/errors.js';
import type { ChannelHandler } from '../../db/listen.client.js';
import { prepared } from '../../db/prepared.js';
import { API_KEY_REVOKED_CHANNEL, type ApiKeyRevokedNotification } from '../events/event.catalogue.js';
import { ApiKey } from './api-key.entity.js';
import { Merchant } from './merchant.entity.js';

export type ApiKeyCaller = Extract<Caller, { kind: 'apiKey' }>;

export interface IssuedApiKey {
  id: string;
  environment: Environment;
  /** The plaintext key: shown once, never stored. */
  apiKey: string;
  hint: string;
  createdAt: Date;
  /** Carried over from the key this one replaced. */
  ipAllowlist: string[] | null;
}

const CACHE_MAX = 50_000;

export interface ApiKeyCacheOptions {
  /** How long a successful lookup is reused (0: never). */
  ttlMs: number;
  /**
   * Whether this process currently hears revocations (its LISTEN connection is up). The cache is
   * used only while it does, so a rotation elsewhere can never be missed for longer than the
   * notification's delivery.
   */
  revocationsLive: () => boolean;
}

type IpCheck = ReturnType<typeof cidrMatcher>;

export class ApiKeyService {
  private readonly format: RegExp;
  private readonly cache = new Map<string, { caller: ApiKeyCaller; allow: IpCheck | null; until: number }>();
  /** Key id → its latest use not yet written (flushUsage). */
  private readonly usage = new Map<string, { at: number; ip: string | null }>();
  private cacheOpts: ApiKeyCacheOptions = { ttlMs: 0, revocationsLive: () => false };

  constructor(
    private readonly box: SecretBox,
    private readonly prefix: string,
  ) {
    this.format = new RegExp(`^${prefix}_[0-9a-f]{64}$`);
  }

  /**
   * Turns on the lookup cache of API processes (the merchants' hot path: one query fewer per
   * request). Correct because every rotation NOTIFYs all processes in its transaction and the
   * rotating process evicts synchronously; when the LISTEN connection is down the cache is bypassed.
   */
  enableCache(opts: ApiKeyCacheOptions): void {
    this.cacheOpts = opts;
  }

  /** A rotation was announced (or the feed reconnected: `merchantId` null drops everything). */
  evict(merchantId: string | null, environment?: Environment): void {
    if (merchantId === null) return this.cache.clear();
    for (const [hash, entry] of this.cache) {
      if (entry.caller.merchantId === merchantId && (!environment || entry.caller.environment === environment)) this.cache.delete(hash);
    }
  }

  /**
   * The API_KEY_REVOKED_CHANNEL handler of this process's LISTEN connection: a rotation evicts that
   * merchant's keys; a payload it cannot read, or a reconnect (rotations may have been missed),
   * drops the whole cache rather than risk serving a revoked key.
   */
  revocationChannel(): ChannelHandler {
    return {
      notify: (payload) => {
        try {
          const { merchantId, environment } = JSON.parse(payload ?? '') as ApiKeyRevokedNotification;
          if (typeof merchantId !== 'string') throw new Error('no merchantId');
          this.evict(merchantId, environment);
        } catch {
          this.evict(null);
        }
      },
      resync: () => this.evict(null),
    };
  }

  /**
   * Issues a new key for (merchant, environment), revoking the live one in the same transaction:
   * the old key stops working the moment this commits. The partial unique index makes two
   * concurrent rotations fail rather than leave two live keys.
   */
  async rotate(em: EntityManager, merchantId: string, environment: Environment, audit?: AuditSource): Promise<IssuedApiKey> {
    return em
      .transactional(async (tx) => {
        const merchant = await tx.findOne(Merchant, merchantId);
        if (!merchant) throw new DomainError('MERCHANT_NOT_FOUND', 'Merchant not found');
        const previous = await tx.findOne(ApiKey, { merchant: merchantId, environment, revokedAt: null });
        await tx.nativeUpdate(ApiKey, { merchant: merchantId, environment, revokedAt: null }, { revokedAt: new Date() });
        const plaintext = `${this.prefix}_${randomHex(32)}`;
        const key = tx.create(ApiKey, {
          merchant,
          environment,
          keyHash: sha256Hex(plaintext),
          hint: plaintext.slice(-4),
          keyCiphertext: '',
          // The networks the merchant's servers call from do not change with the key.
          ipAllowlist: previous?.ipAllowlist ?? null,
        });
        key.keyCiphertext = this.box.seal(plaintext, `api-key:${key.id}`);
        await tx.flush();
        await tx.execute('select pg_notify(?, ?)', [API_KEY_REVOKED_CHANNEL, JSON.stringify({ merchantId, environment } satisfies ApiKeyRevokedNotification)]);
        if (audit)
          await recordAudit(tx, audit, 'api_key.rotated', {
            merchantId,
            subject: environment,
            before: previous && { id: previous.id },
            after: { id: key.id, environment },
          });
        return { id: key.id, environment, apiKey: plaintext, hint: key.hint, createdAt: key.createdAt, ipAllowlist: key.ipAllowlist };
      })
      .finally(() => this.evict(merchantId, environment));
  }

  /**
   * Resolves the `api-key` header. Lookup is by SHA-256 (an index hit, no per-key scan), then the
   * stored hash is compared in constant time. A key of the other environment is refused by name so
   * merchants can tell a wrong base URL from a wrong key. `db.em` is read only on a cache miss (a
   * REST request's EntityManager is forked on first use: lazyRequestContext).
   */
  async authenticate(db: { readonly em: EntityManager }, raw: string | undefined, environment: Environment, ip?: string): Promise<ApiKeyCaller> {
    const caller = await this.authenticateAny(db, raw, ip);
    resolveEnvironment(caller, environment, 'refuse');
    return caller;
  }

  /** Resolves a key to its merchant and the environment it belongs to (GraphQL, where no path names one). */
  async authenticateAny(db: { readonly em: EntityManager }, raw: string | undefined, ip?: string): Promise<ApiKeyCaller> {
    const { caller, allow } = await this.lookup(db, raw);
    // A key with an allowlist works only from those networks; a caller whose address is unknown is refused.
    if (allow && !allow.allows(ip))
      throw new DomainError('IP_NOT_ALLOWED', `This API key is not allowed from ${ip ?? 'an unknown address'}: add the address to the key's IP allowlist`);
    this.usage.set(caller.apiKeyId, { at: Date.now(), ip: ip ?? null });
    return caller;
  }

  private async lookup(db: { readonly em: EntityManager }, raw: string | undefined): Promise<{ caller: ApiKeyCaller; allow: IpCheck | null }> {
    if (!raw) throw new DomainError('INVALID_API_KEY', 'Missing api-key header');
    if (!this.format.test(raw)) throw new DomainError('INVALID_API_KEY', 'Invalid API key');
    const hash = sha256Hex(raw);
    const useCache = this.cacheOpts.ttlMs > 0 && this.cacheOpts.revocationsLive();
    if (useCache) {
      const hit = this.cache.get(hash);
      if (hit && hit.until > Date.now()) return hit;
    }
    const row = await prepared<{ id: string; merchant_id: string; environment: Environment; key_hash: string; ip_allowlist: string[] | null }>(
      db.em,
      'api-key-lookup-v2',
      'select id, merchant_id, environment, key_hash, ip_allowlist from api_keys where key_hash = ? and revoked_at is null',
      [hash],
    );
    const key = row[0];
    if (!key || !safeEqual(key.key_hash, hash)) throw new DomainError('INVALID_API_KEY', 'Invalid API key');
    const caller: ApiKeyCaller = { kind: 'apiKey', merchantId: key.merchant_id, environment: key.environment, apiKeyId: key.id };
    const found = { caller, allow: key.ip_allowlist?.length ? cidrMatcher(key.ip_allowlist) : null };
    if (useCache) {
      if (this.cache.size >= CACHE_MAX) this.cache.clear();
      this.cache.set(hash, { ...found, until: Date.now() + this.cacheOpts.ttlMs });
    }
    return found;
  }

  /**
   * Sets (or clears, with null or []) the allowlist of the live key of an environment. Announced like a
   * rotation, so every API process drops its cached lookup of that merchant's keys at commit.
   */
  async setIpAllowlist(em: EntityManager, merchantId: string, environment: Environment, cidrs: string[] | null, audit?: AuditSource): Promise<ApiKey> {
    return em
      .transactional(async (tx) => {
        const key = await tx.findOne(ApiKey, { merchant: merchantId, environment, revokedAt: null });
        if (!key) throw new DomainError('NOT_FOUND', `No live ${environment} API key: create one first`);
        const before = key.ipAllowlist;
        key.ipAllowlist = cidrs?.length ? [...new Set(cidrs)] : null;
        await tx.flush();
        if (audit)
          await recordAudit(tx, audit, 'api_key.allowlist_changed', {
            merchantId,
            subject: environment,
            before: { cidrs: before },
            after: { cidrs: key.ipAllowlist },
          });
        await tx.execute('select pg_notify(?, ?)', [API_KEY_REVOKED_CHANNEL, JSON.stringify({ merchantId, environment } satisfies ApiKeyRevokedNotification)]);
        return key;
      })
      .finally(() => this.evict(merchantId, environment));
  }

  /** Writes the uses noted since the last flush in one statement (last_used_at never moves back). */
  async flushUsage(em: EntityManager): Promise<number> {
    if (!this.usage.size) return 0;
    const rows = [...this.usage].map(([id, u]) => ({ id, at: new Date(u.at).toISOString(), ip: u.ip }));
    this.usage.clear();
    await em.execute(
      `update api_keys k set last_used_at = u.at, last_used_ip = u.ip
         from jsonb_to_recordset(?::jsonb) as u(id uuid, at timestamptz, ip text)
        where k.id = u.id and (k.last_used_at is null or k.last_used_at <= u.at)`,
      [JSON.stringify(rows)],
    );
    return rows.length;
  }

  /** API processes: writes last-used every `intervalMs`, and once more on stop. A failed write is logged and retried with the next uses. */
  startUsageFlush(fork: () => EntityManager, intervalMs: number, log: Logger): { stop(): Promise<void> } {
    const flush = () => this.flushUsage(fork()).catch((e: Error) => log.warn({ err: e.message }, 'API key last-used not written; retried later'));
    const timer = setInterval(flush, intervalMs);
    timer.unref();
    return {
      stop: async () => {
        clearInterval(timer);
        await flush();
      },
    };
  }

  /** The live key in plaintext (webhook HMAC key), or null when the merchant has none. */
  async signingKey(em: EntityManager, merchantId: string, environment: Environment): Promise<string | null> {
    const key = await em.findOne(ApiKey, { merchant: merchantId, environment, revokedAt: null });
    return key ? this.openKey(key.id, key.keyCiphertext) : null;
  }

  /** Decrypts the stored copy of key `id` (for callers that read `key_ciphertext` in bulk, like webhook claims). */
  openKey(id: string, keyCiphertext: string): string {
    return this.box.open(keyCiphertext, `api-key:${id}`).toString('utf8');
  }

  async list(em: EntityManager, merchantId: string): Promise<ApiKey[]> {
    return em.find(ApiKey, { merchant: merchantId, revokedAt: null }, { orderBy: { environment: 'asc' } });
  }
}
