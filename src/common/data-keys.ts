import { randomBytes } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { keyId, SecretBox } from './crypto.js';
import type { KeyEncryptionKey, KeyEncryptionKeys } from './key-encryption.js';

/**
 * Envelope encryption (docs/security.md "Keys at rest"): secrets are sealed under a random 32-byte
 * data key (DEK); the DEK is stored in `data_keys` wrapped by the key-encryption key (KEK). A KEK
 * rotation re-wraps the DEK (one row) and leaves every sealed secret as it is.
 */

interface DataKeyRow {
  position: number;
  id: string;
  kek_id: string;
  wrapped: string;
}

/** What the wrapped DEK is bound to: its own id, so a wrapped key cannot stand in for another. */
const context = (id: string) => `data-key:${id}`;

/**
 * The gateway's key ring at boot: the newest data key seals; every data key of the database and the raw
 * master keys (secrets sealed before envelope encryption) open. The first process to start on a fresh
 * database makes the data key (`on conflict do nothing`: concurrent starts agree on one).
 */
export async function openSecretBox(em: EntityManager, keks: KeyEncryptionKeys): Promise<SecretBox> {
  let rows = await dataKeys(em);
  if (!rows.length) {
    const dek = randomBytes(32);
    const id = keyId(dek);
    await em.execute(`insert into data_keys (position, id, kek_id, wrapped) values (1, ?, ?, ?) on conflict do nothing`, [
      id,
      keks.current.id,
      await keks.current.wrap(dek, context(id)),
    ]);
    rows = await dataKeys(em);
  }
  const deks = await Promise.all(rows.map((r) => unwrap(r, keks)));
  const legacy = [keks.current, ...keks.previous].flatMap((k) => (k.legacyKey ? [k.legacyKey] : []));
  return new SecretBox(deks[0]!, [...deks.slice(1), ...legacy]);
}

/**
 * Re-wraps every data key not under the current KEK (the step of a KEK rotation that needs the old
 * KEK); each row only if unchanged since read. Returns how many it re-wrapped.
 */
export async function rewrapDataKeys(em: EntityManager, keks: KeyEncryptionKeys): Promise<number> {
  let n = 0;
  for (const row of await dataKeys(em)) {
    if (row.kek_id === keks.current.id) continue;
    const wrapped = await keks.current.wrap(await unwrap(row, keks), context(row.id));
    const done = await em.execute<{ position: number }[]>(
      `update data_keys set kek_id = ?, wrapped = ? where position = ? and wrapped = ? returning position`,
      [keks.current.id, wrapped, row.position, row.wrapped],
    );
    n += done.length;
  }
  return n;
}

/** Newest first. */
function dataKeys(em: EntityManager): Promise<DataKeyRow[]> {
  return em.execute<DataKeyRow[]>(`select position, id, kek_id, wrapped from data_keys order by position desc`);
}

async function unwrap(row: DataKeyRow, keks: KeyEncryptionKeys): Promise<Buffer> {
  const kek: KeyEncryptionKey | undefined = [keks.current, ...keks.previous].find((k) => k.id === row.kek_id);
  if (!kek)
    throw new Error(
      `data key ${row.id} is wrapped by key-encryption key ${row.kek_id}, which is neither MASTER_KEY (or MASTER_KEY_FILE) nor in MASTER_KEY_PREVIOUS`,
    );
  const dek = await kek.unwrap(row.wrapped, context(row.id));
  if (keyId(dek) !== row.id) throw new Error(`data key ${row.id} unwrapped to a different key`);
  return dek;
}
