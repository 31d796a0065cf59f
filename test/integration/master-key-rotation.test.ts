/**
 * MASTER_KEY rotation, online (docs/security.md "Rotating MASTER_KEY"): processes start with the new key
 * and the old one in MASTER_KEY_PREVIOUS and keep working; `secrets reencrypt` re-seals every stored
 * secret under the new key; then the old key can go. Real PostgreSQL, real webhook deliveries.
 */
import { randomBytes } from 'node:crypto';
import { SecretBox } from '../../src/common/crypto';
import { internalContext } from '../../src/common/context';
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

it('the old key keeps working beside the new one, reencrypt moves every secret, then the old key can go', async () => {
  const a = await start({ MASTER_KEY: hex(k1) });
  const created = await createMerchant(a.app);
  const totpSecret = (await enrolTotp(a.url, created)).secret;
  const [user] = await a.app.orm.em.fork().execute<{ id: string }[]>(`select id from dashboard_users where email = ?`, [created.email]);
  const m: Owner = { ...created, userId: user!.id, totpSecret };
  await setUrl(a.app, m.merchantId, 'sandbox', receiver.url);
  await useSecrets(a, m);
  const oldKid = new SecretBox(k1).currentKid;

  // Rotation starts: new key current, old key previous. Everything still opens.
  const b = await start({ MASTER_KEY: hex(k2), MASTER_KEY_PREVIOUS: hex(k1) }, a.db);
  await useSecrets(b, m);

  const em = b.app.orm.em.fork();
  const first = await reencryptSecrets(em, b.app.box, 2);
  expect(first.map((r) => r.table).sort()).toEqual(SEALED_COLUMNS.map((c) => c.table).sort());
  expect(first.reduce((n, r) => n + r.resealed, 0)).toBeGreaterThanOrEqual(5); // 2 API keys, a wallet, a webhook secret, a TOTP secret at least
  for (const { table, column } of SEALED_COLUMNS) {
    const [{ all }] = (await em.execute<{ all: number }[]>(`select count(*)::int as all from ${table}`)) as [{ all: number }];
    expect(all).toBeGreaterThan(0); // every kind was exercised
    const [{ n }] = (await em.execute<{ n: number }[]>(`select count(*)::int as n from ${table} where ${column} not like ?`, [`v2.${b.app.box.currentKid}.%`])) as [{ n: number }];
    expect(n).toBe(0);
    const [{ o }] = (await em.execute<{ o: number }[]>(`select count(*)::int as o from ${table} where ${column} like ?`, [`v2.${oldKid}.%`])) as [{ o: number }];
    expect(o).toBe(0);
  }
  // Idempotent.
  expect((await reencryptSecrets(em, b.app.box)).reduce((n, r) => n + r.resealed, 0)).toBe(0);

  // The old key is gone: a process with the new key alone works.
  const c = await start({ MASTER_KEY: hex(k2) }, a.db);
  await useSecrets(c, m);
  // And a process still on the old key alone is refused by name.
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
