/**
 * API keys: an optional IP allowlist per key (REST and GraphQL, kept across rotations, enforced at once
 * by every API process's cache) and the key's last use (time and client address) shown to the owner.
 * Client addresses come from X-Forwarded-For (TRUST_PROXY), as behind a load balancer.
 */
import { ApiKeysDocument, LoginDocument, RotateApiKeyDocument, SetApiKeyIpAllowlistDocument, TokensDocument } from '../generated/graphql';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { bearer, gql } from '../support/graphql';
import { freshLogin } from '../support/reauth';
import { http } from '../support/http';
import { eventually } from '../support/webhooks';

const T = '/api/v2/testnet';
let gw: TestGateway;
let m: Awaited<ReturnType<typeof createMerchant>>;
let auth: Record<string, string>;

beforeAll(async () => {
  // A long cache: the allowlist must still apply at once (a change evicts like a rotation does).
  gw = await startTestGateway({ TRUST_PROXY: 'true', API_KEY_CACHE_TTL_MS: '60000', API_KEY_USAGE_FLUSH_MS: '200' });
  m = await createMerchant(gw.app);
  auth = bearer(await freshLogin(gw.url, m));
});
afterAll(() => gw?.close());

const listTokens = (key: string, ip: string) => http(gw.url, `${T}/listToken`, { headers: { 'api-key': key, 'x-forwarded-for': ip } });
const setList = (cidrs: string[] | null) => gql(gw.url, SetApiKeyIpAllowlistDocument, { environment: 'SANDBOX' as never, cidrs }, auth);
const sandboxKeyInfo = async () => (await gql(gw.url, ApiKeysDocument, {}, auth)).data!.apiKeys.find((k) => k.environment === 'SANDBOX')!;

describe('API key IP allowlist', () => {
  it('with no list the key works from anywhere; with one, only from those networks (REST and GraphQL), refused in the envelope', async () => {
    expect((await listTokens(m.sandboxKey, '198.51.100.7')).status).toBe(200); // cached from here on

    const set = await setList(['10.0.0.0/8', '2001:db8::/32', '192.0.2.10']);
    expect(set.errors).toBeUndefined();
    expect(set.data!.setApiKeyIpAllowlist.ipAllowlist).toEqual(['10.0.0.0/8', '2001:db8::/32', '192.0.2.10']);

    const refused = await listTokens(m.sandboxKey, '198.51.100.7');
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ status_code: 403, data: { code: 'IP_NOT_ALLOWED' } });
    expect(refused.body.message).toMatch(/not allowed from 198\.51\.100\.7/);
    expect((await listTokens(m.sandboxKey, '10.20.30.40')).status).toBe(200);
    expect((await listTokens(m.sandboxKey, '192.0.2.10')).status).toBe(200);
    expect((await listTokens(m.sandboxKey, '192.0.2.11')).status).toBe(403);
    expect((await listTokens(m.sandboxKey, '2001:db8:1::5')).status).toBe(200);
    expect((await listTokens(m.sandboxKey, '::ffff:10.1.1.1')).status).toBe(200);

    const gqlRefused = await gql(gw.url, TokensDocument, {}, { 'api-key': m.sandboxKey, 'x-forwarded-for': '203.0.113.9' });
    expect(gqlRefused.errors?.[0]?.extensions?.code).toBe('IP_NOT_ALLOWED');
    expect((await gql(gw.url, TokensDocument, {}, { 'api-key': m.sandboxKey, 'x-forwarded-for': '10.0.0.1' })).errors).toBeUndefined();

    // The other environment's key has its own (empty) list.
    expect((await http(gw.url, '/api/v2/mainnet/listToken', { headers: { 'api-key': m.productionKey, 'x-forwarded-for': '198.51.100.7' } })).status).toBe(200);
  });

  it('is kept across a rotation, and cleared with null', async () => {
    await setList(['10.0.0.0/8']);
    const rotated = await gql(gw.url, RotateApiKeyDocument, { environment: 'SANDBOX' as never }, auth);
    const key = rotated.data!.rotateApiKey.apiKey;
    expect((await listTokens(key, '198.51.100.7')).status).toBe(403);
    expect((await listTokens(key, '10.9.9.9')).status).toBe(200);
    expect((await setList(null)).data!.setApiKeyIpAllowlist.ipAllowlist).toBeNull();
    expect((await listTokens(key, '198.51.100.7')).status).toBe(200);
    m.sandboxKey = key;
  });

  it('bad entries are refused by name and change nothing', async () => {
    await setList(['10.0.0.0/8']);
    for (const bad of ['10.0.0.0/33', 'example.com', '10.0.0.0/8/1', '', '1.2.3', 'fe80::1/129']) {
      const res = await setList([bad]);
      expect(res.errors?.[0]?.extensions?.code).toBe('VALIDATION_FAILED');
      expect(res.errors?.[0]?.message).toMatch(/IP address or a CIDR block/);
    }
    expect((await setList(Array.from({ length: 51 }, (_, i) => `10.0.${i}.0/24`))).errors?.[0]?.message).toMatch(/at most 50/);
    expect((await sandboxKeyInfo()).ipAllowlist).toEqual(['10.0.0.0/8']);
    // A dashboard session that has not given the password again lately cannot change it (a stolen token).
    const stale = bearer((await gql(gw.url, LoginDocument, { email: m.email, password: m.password })).data!.login.token);
    const refused = await gql(gw.url, SetApiKeyIpAllowlistDocument, { environment: 'SANDBOX' as never, cidrs: null }, stale);
    expect(refused.errors?.[0]?.extensions?.code).toBe('REAUTHENTICATION_REQUIRED');
    expect((await sandboxKeyInfo()).ipAllowlist).toEqual(['10.0.0.0/8']);
    await setList(null);
  });
});

describe('API key last use', () => {
  it('shows when and from where the key was last used, a few seconds behind at most', async () => {
    expect((await listTokens(m.sandboxKey, '198.51.100.23')).status).toBe(200);
    const info = await eventually(
      async () => {
        const k = await sandboxKeyInfo();
        return k.lastUsedIp === '198.51.100.23' ? k : null;
      },
      20_000,
      'last use written',
    );
    expect(new Date(info.lastUsedAt as string).getTime()).toBeGreaterThan(Date.now() - 60_000);
  });
});
