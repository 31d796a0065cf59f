/**
 * Keys at rest (docs/security.md "Keys at rest"): secrets sealed under a data key wrapped by MASTER_KEY
 * (the key-encryption key). A rotation starts processes with the new key and the old one in
 * MASTER_KEY_PREVIOUS, re-wraps the data key, and the old key can go; secrets sealed under the master
 * key itself (before envelope encryption) still open and are moved by `secrets reencrypt`. Real
 * PostgreSQL, real webhook deliveries.
 */
import { randomBytes } from 'node:crypto';
import { SecretBox } from '../../src/common/crypto';
import { rewrapDataKeys } from '../../src/common/data-keys';
import { LocalKeyEncryptionKey } from '../../src/common/key-encryption';
import { reencryptSecrets, SEALED_COLUMNS } from '../../src/common/secret-reencrypt';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { dataKeys, merchantWithSecrets, sealAsLegacy, sealedKids, useSecrets as useSecretsWith, type Owner } from '../support/sealed-secrets';
import { WebhookReceiver } from '../support/webhook-receiver';
import { FAST_WEBHOOKS } from '../support/webhooks';

const k1 = randomBytes(32);
const k2 = randomBytes(32);
const hex = (k: Buffer) => k.toString('hex');
const gateways: TestGateway[] = [];
let receiver: WebhookReceiver;

const start = async (env: Record<string, string>, db?: TestGateway['db']) => {
  const gw = await startTestGateway({ ...FAST_WEBHOOKS, WEBHOOK_ALLOW_PRIVATE_URLS: 'true', ...env }, db ? { db } : {});
  gateways.push(gw);
  return gw;
};
beforeAll(async () => {
  receiver = await WebhookReceiver.start();
});
// Each test's gateways share its first one's database: closed newest first, that one (dropping it) last.
afterEach(async () => {
  for (const gw of gateways.splice(0).reverse()) await gw.close();
}, 180_000);
afterAll(async () => {
  await receiver?.close();
});

const useSecrets = (gw: TestGateway, m: Owner) => useSecretsWith(gw, m, receiver);

it('a KEK rotation re-wraps the data key alone: secrets stay as stored, old and new processes keep working, then the old key can go', async () => {
  const a = await start({ MASTER_KEY: hex(k1) });
  const m = await merchantWithSecrets(a, receiver);
  const [dek] = await dataKeys(a);
  expect(dek).toMatchObject({ id: a.app.box.currentKid, kek_id: new LocalKeyEncryptionKey(k1).id });
  const before = await sealedKids(a);
  for (const kids of Object.values(before)) expect(kids).toEqual([dek!.id]); // sealed under the data key, not under MASTER_KEY
  const snapshot = await a.app.orm.em.fork().execute<{ c: string }[]>(`select key_ciphertext as c from api_keys order by id`);

  // Rotation starts: new KEK current, old one previous. Everything still opens.
  const b = await start({ MASTER_KEY: hex(k2), MASTER_KEY_PREVIOUS: hex(k1) }, a.db);
  expect(b.app.box.currentKid).toBe(dek!.id);
  await useSecrets(b, m);

  const em = b.app.orm.em.fork();
  const keks = { current: new LocalKeyEncryptionKey(k2), previous: [new LocalKeyEncryptionKey(k1)] };
  expect(await rewrapDataKeys(em, keks)).toBe(1);
  expect(await rewrapDataKeys(em, keks)).toBe(0); // idempotent
  const [rewrapped] = await dataKeys(b);
  expect(rewrapped).toMatchObject({ id: dek!.id, kek_id: keks.current.id });
  expect(rewrapped!.wrapped).not.toBe(dek!.wrapped);
  expect((await reencryptSecrets(em, b.app.box, 2)).reduce((n, r) => n + r.resealed, 0)).toBe(0); // nothing to re-seal
  expect(await a.app.orm.em.fork().execute<{ c: string }[]>(`select key_ciphertext as c from api_keys order by id`)).toEqual(snapshot);

  // A process started before the rotation holds the data key: it keeps serving.
  await useSecrets(a, m);
  // The old KEK is gone: a process with the new key alone works.
  const c = await start({ MASTER_KEY: hex(k2) }, a.db);
  await useSecrets(c, m);
  // A process with the old key alone cannot unwrap the data key, and says so at start.
  await expect(start({ MASTER_KEY: hex(k1) }, a.db)).rejects.toThrow(
    new RegExp(`data key ${dek!.id} is wrapped by key-encryption key ${keks.current.id}, which is neither`),
  );
}, 240_000);

it('secrets sealed directly under MASTER_KEY (before envelope encryption) open, and reencrypt moves every one under the data key', async () => {
  const a = await start({ MASTER_KEY: hex(k1) });
  const m = await merchantWithSecrets(a, receiver);
  // What the previous release wrote: every secret sealed with the master key itself.
  const legacy = new SecretBox(k1);
  await sealAsLegacy(a, legacy);
  for (const kids of Object.values(await sealedKids(a))) expect(kids).toEqual([legacy.currentKid]);

  // The upgrade, with a KEK rotation on top: new KEK current, old one previous; legacy rows still open.
  const b = await start({ MASTER_KEY: hex(k2), MASTER_KEY_PREVIOUS: hex(k1) }, a.db);
  await useSecrets(b, m);
  const first = await reencryptSecrets(b.app.orm.em.fork(), b.app.box, 2);
  expect(first.map((r) => r.table).sort()).toEqual(SEALED_COLUMNS.map((c) => c.table).sort());
  expect(first.reduce((n, r) => n + r.resealed, 0)).toBeGreaterThanOrEqual(5); // 2 API keys, a wallet, a webhook secret, a TOTP secret at least
  for (const kids of Object.values(await sealedKids(b))) expect(kids).toEqual([b.app.box.currentKid]);
  expect((await reencryptSecrets(b.app.orm.em.fork(), b.app.box)).reduce((n, r) => n + r.resealed, 0)).toBe(0); // idempotent
  await rewrapDataKeys(b.app.orm.em.fork(), { current: new LocalKeyEncryptionKey(k2), previous: [new LocalKeyEncryptionKey(k1)] });

  const c = await start({ MASTER_KEY: hex(k2) }, a.db);
  await useSecrets(c, m);
  // The master key alone no longer opens any stored secret.
  const [row] = await a.app.orm.em
    .fork()
    .execute<{ id: string; c: string }[]>(`select id, key_ciphertext as c from api_keys where merchant_id = ? limit 1`, [m.merchantId]);
  expect(() => new SecretBox(k1).open(row!.c, `api-key:${row!.id}`)).toThrow(/neither MASTER_KEY nor in MASTER_KEY_PREVIOUS/);
}, 240_000);

it('every sealed column of the schema is re-encrypted (a new one must be added to SEALED_COLUMNS)', async () => {
  const gw = gateways[0] ?? (await start({}));
  const cols = await gw.app.orm.em
    .fork()
    .execute<{ table_name: string; column_name: string }[]>(
      `select table_name, column_name from information_schema.columns where table_schema = 'public' and column_name like '%ciphertext'`,
    );
  expect(cols.map((c) => `${c.table_name}.${c.column_name}`).sort()).toEqual(SEALED_COLUMNS.map((c) => `${c.table}.${c.column}`).sort());
});
