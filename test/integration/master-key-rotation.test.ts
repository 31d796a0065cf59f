/**
 * MASTER_KEY rotation, online (docs/security.md "Rotating MASTER_KEY"): processes start with the new key
 * and the old one in MASTER_KEY_PREVIOUS and keep working; `secrets reencrypt` re-seals every stored
 * secret under the new key; then the old key can go. Real PostgreSQL, real webhook deliveries.
 */
import { randomBytes } from 'node:crypto';
import { SecretBox } from '../../src/common/crypto';
import { internalContext } from '../../src/common/context';
import { reencryptSecrets, SEALED_COLUMNS } from '../../src/common/secret-reencrypt';
import { createMerchant } from '../support/fixtures';
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

/** Uses every kind of sealed secret: the API key (webhook HMAC), the Standard Webhooks secret, the HD wallet's mnemonic. */
async function useSecrets(gw: TestGateway, m: { merchantId: string; sandboxKey: string; email: string; password: string }) {
  const em = gw.app.orm.em.fork();
  const before = receiver.received.length;
  await gw.app.webhooks.settings.sendTest({ ...internalContext(em), caller: { kind: 'dashboard', merchantId: m.merchantId, userId: 'test', role: 'owner', sessionId: 'test' } }, { environment: 'sandbox' });
  await receiver.waitFor(before + 1);
  expect(verifies(m.sandboxKey, receiver.received[before]!)).toBe(true);
  const [secret] = await gw.app.webhooks.secrets.signing(em, m.merchantId, 'sandbox');
  expect(secret).toMatch(/^whsec_/);
  const wallet = await gw.app.wallets.walletFor(em, m.merchantId, 'sandbox');
  expect(gw.app.wallets.seed(wallet)).toHaveLength(64);
}

it('the old key keeps working beside the new one, reencrypt moves every secret, then the old key can go', async () => {
  const a = await start({ MASTER_KEY: hex(k1) });
  const m = await createMerchant(a.app);
  await setUrl(a.app, m.merchantId, 'sandbox', receiver.url);
  await useSecrets(a, m);
  const oldKid = new SecretBox(k1).currentKid;

  // Rotation starts: new key current, old key previous. Everything still opens.
  const b = await start({ MASTER_KEY: hex(k2), MASTER_KEY_PREVIOUS: hex(k1) }, a.db);
  await useSecrets(b, m);

  const em = b.app.orm.em.fork();
  const first = await reencryptSecrets(em, b.app.box, 2);
  expect(first.map((r) => r.table).sort()).toEqual(SEALED_COLUMNS.map((c) => c.table).sort());
  expect(first.reduce((n, r) => n + r.resealed, 0)).toBeGreaterThanOrEqual(4); // 2 API keys, a wallet, a webhook secret at least
  for (const { table, column } of SEALED_COLUMNS) {
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
