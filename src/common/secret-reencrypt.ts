import type { EntityManager } from '@mikro-orm/postgresql';
import type { SecretBox } from './crypto.js';

/** The associated data a dashboard user's TOTP secret is sealed with. */
export const TOTP_AAD = (userId: string) => `user_totp:${userId}`;

/**
 * Every column holding a secret sealed at rest (under the data key), with the associated data each row's
 * ciphertext is bound to. A new sealed column is added here, or `secrets reencrypt` would leave it
 * under the old key (test/integration/master-key-rotation.test.ts checks every `*_ciphertext` column is listed).
 */
export const SEALED_COLUMNS = [
  { table: 'merchant_wallets', key: 'id', column: 'mnemonic_ciphertext', aad: (id: string) => `wallet:${id}` },
  { table: 'api_keys', key: 'id', column: 'key_ciphertext', aad: (id: string) => `api-key:${id}` },
  { table: 'webhook_secrets', key: 'id', column: 'secret_ciphertext', aad: (id: string) => `webhook-secret:${id}` },
  { table: 'user_totp', key: 'user_id', column: 'secret_ciphertext', aad: TOTP_AAD },
] as const;

export interface ReencryptResult {
  table: string;
  /** Rows re-sealed under the current data key by this run. */
  resealed: number;
  /** Rows already under the current data key. */
  current: number;
}

/**
 * Re-seals under the box's current (data) key every stored secret some other key sealed — a secret
 * sealed directly under a master key before envelope encryption, or under an older data key — online:
 * in batches, each row updated only if its ciphertext is still the one read (a concurrent writer wins
 * and seals with the current key anyway). Idempotent: a second run re-seals nothing. The processes keep
 * serving meanwhile: their key ring opens both.
 */
export async function reencryptSecrets(em: EntityManager, box: SecretBox, batch = 500): Promise<ReencryptResult[]> {
  const out: ReencryptResult[] = [];
  for (const { table, key, column, aad } of SEALED_COLUMNS) {
    let resealed = 0;
    let after = '00000000-0000-0000-0000-000000000000';
    for (;;) {
      const rows = await em.execute<{ id: string; c: string }[]>(
        `select ${key} as id, ${column} as c from ${table} where ${key} > ? and ${column} not like ? order by ${key} limit ${batch}`,
        [after, `v2.${box.currentKid}.%`],
      );
      if (!rows.length) break;
      const updates = rows.map((r) => ({ id: r.id, old: r.c, c: box.seal(box.open(r.c, aad(r.id)), aad(r.id)) }));
      const done = await em.execute<{ id: string }[]>(
        `update ${table} t set ${column} = u.c from jsonb_to_recordset(?::jsonb) as u(id uuid, old text, c text)
          where t.${key} = u.id and t.${column} = u.old returning t.${key}`,
        [JSON.stringify(updates)],
      );
      resealed += done.length;
      after = rows[rows.length - 1]!.id;
    }
    const [{ n }] = (await em.execute<{ n: number }[]>(`select count(*)::int as n from ${table} where ${column} like ?`, [`v2.${box.currentKid}.%`])) as [
      { n: number },
    ];
    out.push({ table, resealed, current: n - resealed });
  }
  return out;
}
