import { internalContext } from '../../src/common/context';
import { SEALED_COLUMNS } from '../../src/common/secret-reencrypt';
import { CompleteLoginDocument, LoginDocument } from '../generated/graphql';
import { createMerchant } from './fixtures';
import type { TestGateway } from './gateway';
import { gql } from './graphql';
import { enrolTotp, forgetSpentStep, totpNow } from './second-factor';
import type { WebhookReceiver } from './webhook-receiver';
import { setUrl, verifies } from './webhooks';

/** A merchant's owner and what every kind of sealed secret of theirs must still do. */
export type Owner = { merchantId: string; sandboxKey: string; email: string; password: string; userId: string; totpSecret: string };

/** A merchant with every kind of sealed secret written: API keys, HD wallet, Standard Webhooks secret, the owner's TOTP secret. */
export async function merchantWithSecrets(gw: TestGateway, receiver: WebhookReceiver): Promise<Owner> {
  const created = await createMerchant(gw.app);
  const totpSecret = (await enrolTotp(gw.url, created)).secret;
  const [user] = await gw.app.orm.em.fork().execute<{ id: string }[]>(`select id from dashboard_users where email = ?`, [created.email]);
  const m: Owner = { ...created, userId: user!.id, totpSecret };
  await setUrl(gw.app, m.merchantId, 'sandbox', receiver.url);
  await useSecrets(gw, m, receiver);
  return m;
}

/** Uses every kind of sealed secret: the API key (webhook HMAC), the Standard Webhooks secret, the HD wallet's mnemonic, the owner's TOTP secret (a two-step sign-in). */
export async function useSecrets(gw: TestGateway, m: Owner, receiver: WebhookReceiver): Promise<void> {
  const em = gw.app.orm.em.fork();
  const before = receiver.received.length;
  const [session] = await em.execute<{ id: string }[]>(`select id from sessions where user_id = ? order by created_at desc limit 1`, [m.userId]);
  await gw.app.webhooks.settings.sendTest(
    { ...internalContext(em), caller: { kind: 'dashboard', merchantId: m.merchantId, userId: m.userId, role: 'owner', sessionId: session!.id } },
    { environment: 'sandbox' },
  );
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

/** The key ids the rows of each sealed column are sealed under (every column must have rows). */
export async function sealedKids(gw: TestGateway): Promise<Record<string, string[]>> {
  const em = gw.app.orm.em.fork();
  const out: Record<string, string[]> = {};
  for (const { table, column } of SEALED_COLUMNS) {
    const rows = await em.execute<{ c: string }[]>(`select ${column} as c from ${table}`);
    expect(rows.length).toBeGreaterThan(0); // every kind was exercised
    out[table] = [...new Set(rows.map((r) => r.c.split('.')[1]!))];
  }
  return out;
}

/** Rewrites every sealed secret as the release before envelope encryption stored it: sealed directly under the master key `box`. */
export async function sealAsLegacy(gw: TestGateway, legacy: { seal(p: Buffer, aad: string): string }): Promise<void> {
  const em = gw.app.orm.em.fork();
  for (const { table, key, column, aad } of SEALED_COLUMNS) {
    for (const r of await em.execute<{ id: string; c: string }[]>(`select ${key} as id, ${column} as c from ${table}`)) {
      await em.execute(`update ${table} set ${column} = ? where ${key} = ?`, [legacy.seal(gw.app.box.open(r.c, aad(r.id)), aad(r.id)), r.id]);
    }
  }
}

export const dataKeys = (gw: TestGateway) =>
  gw.app.orm.em.fork().execute<{ id: string; kek_id: string; wrapped: string }[]>(`select id, kek_id, wrapped from data_keys order by position`);
