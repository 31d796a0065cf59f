/**
 * A stolen 15-minute dashboard access token could rotate the production API
 * key (also the webhook signing key, outliving the session) and change the notification URL without
 * the password. Sensitive operations now need `reauthenticate` (the password again) on the same
 * session within REAUTH_WINDOW_S, checked in one place (access.ts requireFreshAuth) for every transport.
 */
import { LoginDocument, ReauthenticateDocument, RotateApiKeyDocument, SetNotificationUrlDocument, SetSweepSettingsDocument } from '../generated/graphql';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { bearer, gql } from '../support/graphql';
import { http } from '../support/http';

let gw: TestGateway;
beforeAll(async () => (gw = await startTestGateway({ ROLE: 'api', WEBHOOK_ALLOW_PRIVATE_URLS: 'true' })));
afterAll(() => gw?.close());

const login = async (m: { email: string; password: string }) => (await gql(gw.url, LoginDocument, { email: m.email, password: m.password })).data!.login.token;
const keyWorks = async (key: string) => (await http(gw.url, '/api/v2/mainnet/merchant/me', { headers: { 'api-key': key } })).status === 200;
const urlOf = async (merchantId: string) =>
  (
    await gw.app.orm.em
      .fork()
      .getConnection()
      .execute<{ u: string | null }[]>('select notification_url_production as u from merchants where id = ?', [merchantId])
  )[0]!.u;

it('a stolen access token alone cannot rotate the production key, change the notification URL or the sweep schedule', async () => {
  const m = await createMerchant(gw.app);
  const stolen = bearer(await login(m));
  const rotate = await gql(gw.url, RotateApiKeyDocument, { environment: 'PRODUCTION' }, stolen);
  expect(rotate.errors?.[0]?.extensions?.code).toBe('REAUTHENTICATION_REQUIRED');
  const hook = await gql(gw.url, SetNotificationUrlDocument, { environment: 'PRODUCTION', url: 'https://attacker.example/hook' }, stolen);
  expect(hook.errors?.[0]?.extensions?.code).toBe('REAUTHENTICATION_REQUIRED');
  const sweeps = await gql(gw.url, SetSweepSettingsDocument, { environment: 'PRODUCTION', input: { enabled: false } }, stolen);
  expect(sweeps.errors?.[0]?.extensions?.code).toBe('REAUTHENTICATION_REQUIRED');
  const rest = await http(gw.url, '/api/v2/mainnet/merchant/sweeps/settings', { method: 'PUT', body: { enabled: false }, headers: stolen });
  expect(rest.status).toBe(403);
  expect(rest.body).toMatchObject({ status_code: 403, data: { code: 'REAUTHENTICATION_REQUIRED' } });
  // Nothing changed.
  expect(await keyWorks(m.productionKey)).toBe(true);
  expect(await urlOf(m.merchantId)).toBeNull();

  // Guessing the password through reauthenticate: INVALID_PASSWORD, then the account's login budget.
  const wrong = await gql(gw.url, ReauthenticateDocument, { password: 'not the password' }, stolen);
  expect(wrong.errors?.[0]?.extensions?.code).toBe('INVALID_PASSWORD');
  expect((await gql(gw.url, RotateApiKeyDocument, { environment: 'PRODUCTION' }, stolen)).errors?.[0]?.extensions?.code).toBe('REAUTHENTICATION_REQUIRED');
  const restWrong = await http(gw.url, '/api/v2/auth/reauthenticate', { body: { password: 'still not it' }, headers: stolen });
  expect(restWrong.body).toMatchObject({ status_code: 403, data: { code: 'INVALID_PASSWORD' } });
  const restEmpty = await http(gw.url, '/api/v2/auth/reauthenticate', { body: {}, headers: stolen });
  expect(restEmpty.body).toMatchObject({ status_code: 400, data: { code: 'VALIDATION_FAILED' } });

  // The owner re-authenticating on ANOTHER session does not make the stolen token fresh.
  const owner = bearer(await login(m));
  expect((await gql(gw.url, ReauthenticateDocument, { password: m.password }, owner)).errors).toBeUndefined();
  expect((await gql(gw.url, RotateApiKeyDocument, { environment: 'PRODUCTION' }, stolen)).errors?.[0]?.extensions?.code).toBe('REAUTHENTICATION_REQUIRED');
  expect(await keyWorks(m.productionKey)).toBe(true);
});

it('with the password again the session may, for REAUTH_WINDOW_S; then it must give it again', async () => {
  const m = await createMerchant(gw.app);
  const token = await login(m);
  const auth = bearer(token);
  const re = await http(gw.url, '/api/v2/auth/reauthenticate', { body: { password: m.password }, headers: auth });
  expect(re.status).toBe(200);
  const until = re.body.data.reauthenticated_until as number;
  expect(until * 1000).toBeGreaterThan(Date.now() + 200_000); // REAUTH_WINDOW_S 300 by default
  expect(until * 1000).toBeLessThanOrEqual(Date.now() + 301_000);

  const hook = await gql(gw.url, SetNotificationUrlDocument, { environment: 'PRODUCTION', url: 'https://merchant.example/hook' }, auth);
  expect(hook.errors).toBeUndefined();
  expect(await urlOf(m.merchantId)).toBe('https://merchant.example/hook');
  const rotated = await gql(gw.url, RotateApiKeyDocument, { environment: 'PRODUCTION' }, auth);
  expect(rotated.errors).toBeUndefined();
  expect(await keyWorks(m.productionKey)).toBe(false);

  // The window passes (moved back in the database rather than waited for).
  await gw.app.orm.em
    .fork()
    .getConnection()
    .execute(`update sessions set reauthenticated_at = now() - interval '301 seconds' where reauthenticated_at is not null and merchant_id = ?`, [
      m.merchantId,
    ]);
  expect((await gql(gw.url, RotateApiKeyDocument, { environment: 'PRODUCTION' }, auth)).errors?.[0]?.extensions?.code).toBe('REAUTHENTICATION_REQUIRED');
});
