/**
 * Keys at rest (docs/security.md "Keys at rest"): secrets sealed under a data key wrapped by MASTER_KEY
 * (the key-encryption key). A rotation starts processes with the new key and the old one in
 * MASTER_KEY_PREVIOUS, re-wraps the data key, and the old key can go; secrets sealed under the master
 * key itself (before envelope encryption) still open and are moved by `secrets reencrypt`. Real
 * PostgreSQL, real webhook deliveries.
 */
import { randomBytes } from 'node:crypto';
import { SecretBox } from '../../src/common/crypto';
import { internalContext } from '../../src/common/context';
import { rewrapDataKeys } from '../../src/common/data-keys';
import { LocalKeyEncryptionKey } from '../../src/common/key-encryption';
import { reencryptSecrets, SEALED_COLUMNS } from '../../src/common/secret-reencrypt';
import { CompleteLoginDocument, LoginDocument } from '../generated/graphql';
import { createMerchant } from '../support/fixtures';
import { gql } from '../support/graphql';
import { enrolTotp, forgetSpentStep, totpNow } from '../support/second-factor';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { WebhookReceiver } from '../support/webhook-receiver';
import { FAST_WEBHOOKS, setUrl, verifies } from '../support/webhooks';

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
afterAll(async () => {
  for (const gw of gateways.reverse()) await gw.close();
  await receiver?.close();
});

type Owner = { merchantId: string; sandboxKey: string; email: string; password: string; userId: string; totpSecret: string };

/** Uses every kind of sealed secret: the API key (webhook HMAC), the Standard Webhooks secret, the HD wallet's mnemonic, the owner's TOTP secret (a two-step sign-in). */
async function useSecrets(gw: TestGateway, m: Owner) {
  const em = gw.app.orm.em.fork();
  const before = receiver.received.length;
  const [session] = await em.execute<{ id: string }[]>(`select id from sessions where user_id = ? order by created_at desc limit 1`, [m.userId]);
  await gw.app.webhooks.settings.sendTest({ ...internalContext(em), caller: { kind: 'dashboard', merchantId: m.merchantId, userId: m.userId, role: 'owner', sessionId: session!.id } }, { environment: 'sandbox' });
  await receiver.waitFor(before + 1);
  expect(verifies(m.sandboxKey, receiver.received[before]!)).toBe(true);
  const [secret] = await gw.app.webhooks.secrets.signing(em, m.merchantId, 'sandbox');
  expect(secret).toMatch(/^whsec_/);
  const wallet = await gw.app.wallets.walletFor(em, m.merchantId, 'sandbox');
  expect(gw.app.wallets.seed(wallet)).toHaveLength(64);
  const first = await gql(gw.url, LoginDocument, { email: m.email, password: m.password });
  expect(first.errors?.[0]?.extensions?.code).toBe('SECOND_FACTOR_REQUIRED');
  await forgetSpentStep(gw.app, m.email);
  const challengeToken = (first.errors![0]!.extensions as { challengeToken: string }).challengeToken;
  const done = await gql(gw.url, CompleteLoginDocument, { challengeToken, secondFactor: { totpCode: await totpNow(m.totpSecret) } });
  expect(done.errors).toBeUndefined();
}

/** The owner's merchant on a gateway under `key`, every kind of secret written (TOTP enrolled, webhook URL set). */
async function merchantWithSecrets(gw: TestGateway): Promise<Owner> {
  const created = await createMerchant(gw.app);
  const totpSecret = (await enrolTotp(gw.url, created)).secret;
  const [user] = await gw.app.orm.em.fork().execute<{ id: string }[]>(`select id from dashboard_users where email = ?`, [created.email]);
  const m: Owner = { ...created, userId: user!.id, totpSecret };
  await setUrl(gw.app, m.merchantId, 'sandbox', receiver.url);
  await useSecrets(gw, m);
  return m;
}

/** Rows of every sealed column, by column, as `kid` of their ciphertext. */
async function sealedKids(gw: TestGateway): Promise<Record<string, string[]>> {
  const em = gw.app.orm.em.fork();
  const out: Record<string, string[]> = {};
  for (const { table, column } of SEALED_COLUMNS) {
    const rows = await em.execute<{ c: string }[]>(`select ${column} as c from ${table}`);
    expect(rows.length).toBeGreaterThan(0); // every kind was exercised
    out[table] = [...new Set(rows.map((r) => r.c.split('.')[1]!))];
  }
  return out;
}

const dataKeys = (gw: TestGateway) => gw.app.orm.em.fork().execute<{ id: string; kek_id: string; wrapped: string }[]>(`select id, kek_id, wrapped from data_keys order by position`);

it('a KEK rotation re-wraps the data key alone: secrets stay as stored, old and new processes keep working, then the old key can go', async () => {
  const a = await start({ MASTER_KEY: hex(k1) });
  const m = await merchantWithSecrets(a);
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
  await expect(start({ MASTER_KEY: hex(k1) }, a.db)).rejects.toThrow(new RegExp(`data key ${dek!.id} is wrapped by key-encryption key ${keks.current.id}, which is neither`));
}, 240_000);

it('secrets sealed directly under MASTER_KEY (before envelope encryption) open, and reencrypt moves every one under the data key', async () => {
  const a = await start({ MASTER_KEY: hex(k1) });
  const m = await merchantWithSecrets(a);
  // What the previous release wrote: every secret sealed with the master key itself.
  const legacy = new SecretBox(k1);
  const em = a.app.orm.em.fork();
  for (const { table, key, column, aad } of SEALED_COLUMNS) {
    for (const r of await em.execute<{ id: string; c: string }[]>(`select ${key} as id, ${column} as c from ${table}`)) {
      await em.execute(`update ${table} set ${column} = ? where ${key} = ?`, [legacy.seal(a.app.box.open(r.c, aad(r.id)), aad(r.id)), r.id]);
    }
  }
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
  const [row] = await em.execute<{ id: string; c: string }[]>(`select id, key_ciphertext as c from api_keys where merchant_id = ? limit 1`, [m.merchantId]);
  expect(() => new SecretBox(k1).open(row!.c, `api-key:${row!.id}`)).toThrow(/neither MASTER_KEY nor in MASTER_KEY_PREVIOUS/);
}, 240_000);

it('every sealed column of the schema is re-encrypted (a new one must be added to SEALED_COLUMNS)', async () => {
  const gw = gateways[0] ?? (await start({}));
  const cols = await gw.app.orm.em.fork().execute<{ table_name: string; column_name: string }[]>(
    `select table_name, column_name from information_schema.columns where table_schema = 'public' and column_name like '%ciphertext'`,
  );
  expect(cols.map((c) => `${c.table_name}.${c.column_name}`).sort()).toEqual(SEALED_COLUMNS.map((c) => `${c.table}.${c.column}`).sort());
});
