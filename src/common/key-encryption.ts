import { readFileSync, statSync } from 'node:fs';
import { ConfigError, type Config } from '../config/config.js';
import { keyId, SecretBox } from './crypto.js';

/**
 * The key-encryption key (KEK): it wraps the data keys that seal every secret at rest, and nothing
 * else. The seam for a KMS or Vault (docs/security.md "Keys at rest"): an implementation whose
 * `wrap`/`unwrap` call the service (AWS KMS Encrypt/Decrypt, Vault transit encrypt/decrypt…) keeps the
 * KEK out of this process entirely; the gateway calls it once per data key at boot and on
 * `secrets reencrypt`, never per secret.
 */
export interface KeyEncryptionKey {
  /** Stable and public: stored beside each data key it wraps, so the right KEK unwraps it after a rotation. */
  readonly id: string;
  /** Encrypts a data key. `context` is bound to the result (associated data): unwrap needs the same. */
  wrap(dataKey: Buffer, context: string): Promise<string>;
  unwrap(wrapped: string, context: string): Promise<Buffer>;
  /**
   * The raw key, only for a KEK that is a local 32-byte key: secrets sealed directly under
   * `MASTER_KEY` before envelope encryption open with it until `secrets reencrypt` has moved them.
   */
  readonly legacyKey?: Buffer;
}

/** The KEK in use and the ones of a rotation still in progress (they only unwrap). */
export interface KeyEncryptionKeys {
  current: KeyEncryptionKey;
  previous: KeyEncryptionKey[];
}

/** A 32-byte key held in memory (from `MASTER_KEY`, `MASTER_KEY_FILE` or `MASTER_KEY_PREVIOUS`): AES-256-GCM. */
export class LocalKeyEncryptionKey implements KeyEncryptionKey {
  readonly id: string;
  private readonly box: SecretBox;

  constructor(readonly legacyKey: Buffer) {
    this.box = new SecretBox(legacyKey);
    this.id = keyId(legacyKey);
  }

  async wrap(dataKey: Buffer, context: string): Promise<string> {
    return this.box.seal(dataKey, context);
  }

  async unwrap(wrapped: string, context: string): Promise<Buffer> {
    return this.box.open(wrapped, context);
  }
}

/**
 * Reads a KEK from a file (a mounted secret): 64 hex characters or base64 of 32 bytes, surrounding
 * whitespace ignored. Refused unless it is a regular file that neither its group nor others may read
 * or write (mode 0600 or 0400): a key the whole host can read protects nothing.
 */
export function readKeyFile(path: string, variable = 'MASTER_KEY_FILE'): LocalKeyEncryptionKey {
  const fail = (message: string) => new ConfigError([{ variable, message }]);
  let mode: number;
  try {
    const st = statSync(path);
    if (!st.isFile()) throw fail(`${path} is not a regular file`);
    mode = st.mode & 0o777;
  } catch (e) {
    if (e instanceof ConfigError) throw e;
    throw fail(`cannot read ${path}: ${(e as NodeJS.ErrnoException).code ?? String(e)}`);
  }
  if (mode & 0o077) throw fail(`${path} has mode ${mode.toString(8).padStart(4, '0')}: group and others must have no access (chmod 600)`);
  const text = readFileSync(path, 'utf8').trim();
  const key = /^[0-9a-fA-F]{64}$/.test(text) ? Buffer.from(text, 'hex') : Buffer.from(text, 'base64');
  if (key.length !== 32) throw fail(`${path} must hold 32 bytes as 64 hex characters or base64`);
  return new LocalKeyEncryptionKey(key);
}

/**
 * The configured KEKs: `MASTER_KEY_FILE` or `MASTER_KEY` (the development file's key when neither is
 * set) as the current one, `MASTER_KEY_PREVIOUS` during a rotation. A KMS or Vault implementation is
 * chosen here.
 */
export function keyEncryptionKeys(config: Pick<Config, 'MASTER_KEY' | 'MASTER_KEY_FILE' | 'MASTER_KEY_PREVIOUS'>): KeyEncryptionKeys {
  const current = config.MASTER_KEY_FILE ? readKeyFile(config.MASTER_KEY_FILE) : config.MASTER_KEY ? new LocalKeyEncryptionKey(config.MASTER_KEY) : undefined;
  if (!current) throw new ConfigError([{ variable: 'MASTER_KEY', message: 'required (or MASTER_KEY_FILE)' }]);
  return { current, previous: (config.MASTER_KEY_PREVIOUS ?? []).map((k) => new LocalKeyEncryptionKey(k)) };
}
