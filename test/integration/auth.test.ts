import { ApiKeysDocument, LoginDocument, LogoutDocument, MeDocument, RefreshTokenDocument, RotateApiKeyDocument } from '../generated/graphql';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { bearer, gql } from '../support/graphql';
import { http } from '../support/http';
import { internalContext } from '../../src/common/context';
import { freshLogin } from '../support/reauth';

let gw: TestGateway;
let m: Awaited<ReturnType<typeof createMerchant>>;

beforeAll(async () => {
  // No job scheduler needed here (ROLE=api): its timers would only hold the test process open.
  gw = await startTestGateway({ ROLE: 'api' });
  m = await createMerchant(gw.app);
});
afterAll(() => gw?.close());

const login = async () => {
  const res = await http(gw.url, '/api/v2/auth/login', { body: { email: m.email, password: m.password, user_type: 'merchant' } });
  expect(res.status).toBe(200);
  return res.body.data as { token: string; refresh_token: string; expires_in: number };
};

describe('dashboard auth over REST', () => {
  it('login → me → logout → the same access token is rejected', async () => {
    const { token, refresh_token, expires_in } = await login();
    expect(expires_in).toBe(900);
    const me = await http(gw.url, '/api/v2/auth/me', { headers: bearer(token) });
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({
      status_code: 200,
      data: { user: { email: m.email }, merchant: { merchant_id: m.merchantId, platform_fee_percent: '1.0000' } },
    });

    const out = await http(gw.url, '/api/v2/auth/logout', { method: 'POST', body: {}, headers: bearer(token) });
    expect(out.body).toMatchObject({ status_code: 200 });

    const after = await http(gw.url, '/api/v2/auth/me', { headers: bearer(token) });
    expect(after.status).toBe(401);
    expect(after.body).toMatchObject({ status_code: 401, data: { code: 'SESSION_REVOKED' } });
    // The session's refresh token is dead too.
    const refreshed = await http(gw.url, '/api/v2/auth/refresh', { body: { refresh_token } });
    expect(refreshed.body.data.code).toBe('SESSION_REVOKED');
  });

  it('wrong password and unknown user get the same answer', async () => {
    const a = await http(gw.url, '/api/v2/auth/login', { body: { email: m.email, password: 'wrong password', user_type: 'merchant' } });
    const b = await http(gw.url, '/api/v2/auth/login', { body: { email: 'nobody@x.test', password: 'wrong password', user_type: 'merchant' } });
    expect(a.status).toBe(401);
    expect(a.body).toEqual(b.body);
    expect(a.body.data.code).toBe('INVALID_CREDENTIALS');
  });

  it('refresh rotates the token; reusing an old one revokes the whole session', async () => {
    const first = await login();
    const r1 = await http(gw.url, '/api/v2/auth/refresh', { body: { refresh_token: first.refresh_token } });
    expect(r1.status).toBe(200);
    const second = r1.body.data as { token: string; refresh_token: string };
    expect(second.refresh_token).not.toBe(first.refresh_token);
    expect((await http(gw.url, '/api/v2/auth/me', { headers: bearer(second.token) })).status).toBe(200);

    // Replay of the used token: refused, and the session (with the new tokens) is revoked.
    const replay = await http(gw.url, '/api/v2/auth/refresh', { body: { refresh_token: first.refresh_token } });
    expect(replay.status).toBe(401);
    expect(replay.body.data.code).toBe('REFRESH_TOKEN_REUSED');
    expect((await http(gw.url, '/api/v2/auth/me', { headers: bearer(second.token) })).body.data.code).toBe('SESSION_REVOKED');
    expect((await http(gw.url, '/api/v2/auth/refresh', { body: { refresh_token: second.refresh_token } })).body.data.code).toBe('SESSION_REVOKED');
  });

  it('concurrent refreshes with one token: exactly one wins', async () => {
    const { refresh_token } = await login();
    const results = await Promise.all(Array.from({ length: 5 }, () => http(gw.url, '/api/v2/auth/refresh', { body: { refresh_token } })));
    expect(results.filter((r) => r.status === 200)).toHaveLength(1);
  });

  it('a forged or tampered token is refused', async () => {
    const { token } = await login();
    const tampered = token.slice(0, -3) + (token.endsWith('AAA') ? 'BBB' : 'AAA');
    expect((await http(gw.url, '/api/v2/auth/me', { headers: bearer(tampered) })).body.data.code).toBe('INVALID_TOKEN');
    expect((await http(gw.url, '/api/v2/auth/me', { headers: { authorization: 'Basic abc' } })).body.data.code).toBe('UNAUTHENTICATED');
  });
});

describe('dashboard auth over GraphQL (codegen documents)', () => {
  it('login → me → logout → rejected; refresh rotation and reuse', async () => {
    const l = await gql(gw.url, LoginDocument, { email: m.email, password: m.password });
    expect(l.errors).toBeUndefined();
    const { token, refreshToken } = l.data!.login;
    // GraphQL times are ISO-8601 DateTimes (REST keeps the spec's Unix seconds).
    const { expiresAt, refreshExpiresAt, expiresIn } = l.data!.login;
    expect(expiresAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
    expect(Math.abs(Date.parse(expiresAt) - (Date.now() + expiresIn * 1000))).toBeLessThan(30_000);
    expect(Date.parse(refreshExpiresAt)).toBeGreaterThan(Date.parse(expiresAt));
    const me = await gql(gw.url, MeDocument, {}, bearer(token));
    expect(me.data?.me).toMatchObject({ email: m.email, merchant: { id: m.merchantId, feeIncluded: true } });

    const r = await gql(gw.url, RefreshTokenDocument, { refreshToken });
    expect(r.data?.refreshToken.refreshToken).toBeTruthy();
    const reuse = await gql(gw.url, RefreshTokenDocument, { refreshToken });
    expect(reuse.errors?.[0]?.extensions?.code).toBe('REFRESH_TOKEN_REUSED');
    expect((await gql(gw.url, MeDocument, {}, bearer(r.data!.refreshToken.token))).errors?.[0]?.extensions?.code).toBe('SESSION_REVOKED');

    const l2 = await gql(gw.url, LoginDocument, { email: m.email, password: m.password });
    const t2 = l2.data!.login.token;
    expect((await gql(gw.url, LogoutDocument, {}, bearer(t2))).data?.logout).toBe(true);
    expect((await gql(gw.url, MeDocument, {}, bearer(t2))).errors?.[0]?.extensions?.code).toBe('SESSION_REVOKED');
  });

  it('me without credentials → UNAUTHENTICATED; an API key cannot use dashboard fields', async () => {
    expect((await gql(gw.url, MeDocument)).errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
    expect((await gql(gw.url, MeDocument, {}, { 'api-key': m.sandboxKey })).errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
  });
});

describe('API keys', () => {
  it('rotation from the dashboard: new key shown once, old key fails at once', async () => {
    const merchant = await createMerchant(gw.app);
    const token = await freshLogin(gw.url, merchant); // rotating needs the password again (reauth.test.ts)
    expect((await http(gw.url, '/api/v2/testnet/merchant/me', { headers: { 'api-key': merchant.sandboxKey } })).status).toBe(200);

    const rotated = await gql(gw.url, RotateApiKeyDocument, { environment: 'SANDBOX' }, bearer(token));
    const newKey = rotated.data!.rotateApiKey.apiKey;
    expect(newKey).toMatch(/^cpg_[0-9a-f]{64}$/);
    expect(newKey).not.toBe(merchant.sandboxKey);

    const old = await http(gw.url, '/api/v2/testnet/merchant/me', { headers: { 'api-key': merchant.sandboxKey } });
    expect(old.status).toBe(401);
    expect(old.body).toMatchObject({ status_code: 401, data: { code: 'INVALID_API_KEY' } });
    const fresh = await http(gw.url, '/api/v2/testnet/merchant/me', { headers: { 'api-key': newKey } });
    expect(fresh.body).toMatchObject({ status_code: 200, data: { merchant_id: merchant.merchantId, environment: 'sandbox' } });
    // The production key is untouched.
    expect((await http(gw.url, '/api/v2/mainnet/merchant/me', { headers: { 'api-key': merchant.productionKey } })).status).toBe(200);

    const listed = await gql(gw.url, ApiKeysDocument, {}, bearer(token));
    expect(listed.data!.apiKeys.map((k) => k.hint).sort()).toEqual([newKey.slice(-4), merchant.productionKey.slice(-4)].sort());
    // Stored hashed + encrypted, never in plaintext.
    const rows = await gw.app.orm.em
      .fork()
      .getConnection()
      .execute(`select key_hash, key_ciphertext from api_keys where merchant_id = ?`, [merchant.merchantId]);
    for (const r of rows) {
      expect(JSON.stringify(r)).not.toContain(newKey.slice(4));
    }
    expect(await gw.app.apiKeys.signingKey(gw.app.orm.em.fork(), merchant.merchantId, 'sandbox')).toBe(newKey);
  });

  it('environment separation: a sandbox key is refused on /mainnet/ and the reverse', async () => {
    const a = await http(gw.url, '/api/v2/mainnet/merchant/me', { headers: { 'api-key': m.sandboxKey } });
    expect(a.status).toBe(403);
    expect(a.body).toMatchObject({ status_code: 403, data: { code: 'WRONG_ENVIRONMENT' } });
    const b = await http(gw.url, '/api/v2/testnet/merchant/me', { headers: { 'api-key': m.productionKey } });
    expect(b.body).toMatchObject({ status_code: 403, data: { code: 'WRONG_ENVIRONMENT' } });
    expect((await http(gw.url, '/api/v2/mainnet/merchant/me', { headers: { 'api-key': m.productionKey } })).body.data.environment).toBe('production');
  });

  it('a viewer cannot rotate keys', async () => {
    const em = gw.app.orm.em.fork();
    await expect(
      gw.app.merchants.rotateApiKey(
        { ...internalContext(em), caller: { kind: 'dashboard', merchantId: m.merchantId, userId: 'x', sessionId: 'y', role: 'viewer' } },
        'sandbox',
      ),
    ).rejects.toMatchObject({ code: 'FORBIDDEN' });
  });
});
