import { SecretBox } from '../../src/common/crypto';
import { loadConfig } from '../../src/config';
import { ApiKeyService } from '../../src/modules/merchants/api-key.service';
import { assertPublicHost, isPublicAddress } from '../../src/modules/webhooks/ssrf';
import { createWebhookServices } from '../../src/modules/webhooks/webhook.wiring';
import { SetNotificationUrlDocument } from '../generated/graphql';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, TEST_JWT_SECRET, TEST_MASTER_KEY, type TestGateway } from '../support/gateway';
import { bearer, gql } from '../support/graphql';
import { WebhookReceiver } from '../support/webhook-receiver';
import { attemptsOf, deliveriesOf, eventually, FAST_WEBHOOKS, newOrder, setUrl, transition } from '../support/webhooks';
import { freshLogin } from '../support/reauth';

describe('address classification', () => {
  it.each([
    '127.0.0.1',
    '127.255.255.254',
    '10.1.2.3',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '100.127.255.255',
    '0.0.0.0',
    '0.1.2.3',
    '224.0.0.1',
    '239.255.255.250',
    '240.0.0.1',
    '255.255.255.255',
    '192.0.2.1',
    '198.18.0.1',
    '198.51.100.7',
    '203.0.113.9',
    '::',
    '::1',
    'fe80::1',
    'fe80::1%eth0',
    'fc00::1',
    'fd12:3456::1',
    'ff02::1',
    'fec0::1',
    '2001:db8::1',
    '100::1',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:10.0.0.1',
    '::ffff:169.254.169.254',
    '64:ff9b::a00:1',
    '2002:7f00:1::1',
    '2002:c0a8:101::1',
    // IPv4-translated (SIIT, ::ffff:0:0:0/96), local-use NAT64 (64:ff9b:1::/48), the rest of ::/8 and the new documentation block.
    '::ffff:0:7f00:1',
    '::ffff:0:a00:1',
    '::ffff:0:a9fe:a9fe',
    '0:0:0:0:ffff:0:127.0.0.1',
    '64:ff9b:1::a00:1',
    '64:ff9b:1::808:808',
    '::ffff:1:2:3',
    '1::ffff:7f00:1',
    '3fff::1',
    'not-an-address',
    '',
  ])('%s is refused', (a) => expect(isPublicAddress(a)).toBe(false));

  it.each([
    '8.8.8.8',
    '1.1.1.1',
    '93.184.216.34',
    '172.32.0.1',
    '100.128.0.1',
    '11.0.0.1',
    '2606:4700:4700::1111',
    '2001:4860:4860::8888',
    '::ffff:8.8.8.8',
    '64:ff9b::808:808',
    '2002:808:808::1',
    '::ffff:0:808:808',
  ])('%s is public', (a) => expect(isPublicAddress(a)).toBe(true));

  it('names are judged by every address they resolve to', async () => {
    await expect(assertPublicHost('localhost')).rejects.toThrow(/non-public address/);
    await expect(assertPublicHost('does-not-exist.invalid')).rejects.toThrow(/does not resolve/);
    await expect(assertPublicHost('8.8.8.8')).resolves.toEqual(['8.8.8.8']);
  });
});

describe('WEBHOOK_ALLOW_PRIVATE_URLS defaults', () => {
  const base = { MASTER_KEY: TEST_MASTER_KEY, JWT_SECRET: TEST_JWT_SECRET };
  const service = (env: Record<string, string>) => {
    const config = loadConfig({ ...base, ...env });
    const box = new SecretBox(config.MASTER_KEY!);
    return createWebhookServices(config, new ApiKeyService(box, config.API_KEY_PREFIX), box).settings;
  };
  const production = { NODE_ENV: 'production', DATABASE_URL: 'postgres://db.example/gateway', DEV_CHAINS: 'false' };

  it('every deployment refuses private addresses unless explicitly allowed (development too)', async () => {
    await expect(service(production).checkUrl('sandbox', 'http://127.0.0.1:8080/hook')).rejects.toMatchObject({ code: 'NOTIFICATION_URL_REJECTED' });
    await expect(service({ ...production, WEBHOOK_ALLOW_PRIVATE_URLS: 'true' }).checkUrl('sandbox', 'http://127.0.0.1:8080/hook')).resolves.toBe(
      'http://127.0.0.1:8080/hook',
    );
    for (const NODE_ENV of ['development', 'test']) {
      // The refusal names the switch a local receiver needs.
      await expect(service({ NODE_ENV }).checkUrl('sandbox', 'http://localhost:8080/hook')).rejects.toMatchObject({
        code: 'NOTIFICATION_URL_REJECTED',
        message: expect.stringMatching(/non-public address.*needs WEBHOOK_ALLOW_PRIVATE_URLS=true/),
      });
      await expect(service({ NODE_ENV, WEBHOOK_ALLOW_PRIVATE_URLS: 'true' }).checkUrl('sandbox', 'http://localhost:8080/hook')).resolves.toBe(
        'http://localhost:8080/hook',
      );
    }
  });

  it('https is required for the production environment whatever the deployment', async () => {
    const local = { NODE_ENV: 'development', WEBHOOK_ALLOW_PRIVATE_URLS: 'true' };
    await expect(service(local).checkUrl('production', 'http://localhost:8080/hook')).rejects.toMatchObject({
      code: 'NOTIFICATION_URL_REJECTED',
      message: expect.stringMatching(/https/),
    });
    await expect(service(local).checkUrl('production', 'https://localhost:8443/hook')).resolves.toBe('https://localhost:8443/hook');
  });
});

describe('with WEBHOOK_ALLOW_PRIVATE_URLS=false', () => {
  let strict: TestGateway;
  let loose: TestGateway;
  let r: WebhookReceiver;
  beforeAll(async () => {
    strict = await startTestGateway({ ...FAST_WEBHOOKS, WEBHOOK_ALLOW_PRIVATE_URLS: 'false' });
    // Same database, private URLs allowed, no delivery loop: stands in for "the URL was fine when it was saved".
    loose = await startTestGateway({ ...FAST_WEBHOOKS, ROLE: 'api', WEBHOOK_ALLOW_PRIVATE_URLS: 'true' }, { db: strict.db });
    r = await WebhookReceiver.start();
  });
  afterAll(async () => {
    await loose?.close();
    await strict?.close();
    await r?.close();
  });

  it.each([
    ['sandbox', 'http://127.0.0.1:8080/hook', /non-public address \(127\.0\.0\.1\)/],
    ['sandbox', 'http://localhost:8080/hook', /non-public address/],
    ['sandbox', 'http://[::1]:8080/hook', /non-public address/],
    ['sandbox', 'http://[::ffff:127.0.0.1]/hook', /non-public address/],
    ['sandbox', 'http://[::ffff:0:7f00:1]/hook', /non-public address/],
    ['sandbox', 'http://[64:ff9b:1::a9fe:a9fe]/latest/meta-data', /non-public address/],
    ['sandbox', 'http://169.254.169.254/latest/meta-data', /non-public address/],
    ['sandbox', 'http://10.0.0.5/hook', /non-public address/],
    ['sandbox', 'http://2130706433/hook', /non-public address \(127\.0\.0\.1\)/], // decimal form, normalised by the URL parser
    ['sandbox', 'http://0x7f.1/hook', /non-public address \(127\.0\.0\.1\)/],
    ['sandbox', 'http://100.64.1.1/hook', /non-public address/],
    ['sandbox', 'https://does-not-exist.invalid/hook', /does not resolve/],
    ['production', 'http://8.8.8.8/hook', /https/],
    ['sandbox', 'https://user:secret@8.8.8.8/hook', /credentials/],
    ['sandbox', 'ftp://8.8.8.8/hook', /http\(s\)/],
    ['sandbox', 'not a url', /absolute/],
  ] as const)('%s %s is refused', async (environment, url, why) => {
    const m = await createMerchant(strict.app);
    await expect(setUrl(strict.app, m.merchantId, environment, url)).rejects.toMatchObject({
      code: 'NOTIFICATION_URL_REJECTED',
      message: expect.stringMatching(why),
    });
  });

  it('public https URLs are accepted (no request is made when saving)', async () => {
    const m = await createMerchant(strict.app);
    const saved = await setUrl(strict.app, m.merchantId, 'production', 'https://8.8.8.8/webhooks/cpg');
    expect(saved.notificationUrlProduction).toBe('https://8.8.8.8/webhooks/cpg');
  });

  it('GraphQL: the refusal is NOTIFICATION_URL_REJECTED and nothing is saved', async () => {
    const m = await createMerchant(strict.app);
    const auth = bearer(await freshLogin(strict.url, m));
    const res = await gql(strict.url, SetNotificationUrlDocument, { environment: 'SANDBOX', url: r.url }, auth);
    expect(res.errors![0]).toMatchObject({ extensions: { code: 'NOTIFICATION_URL_REJECTED' } });
    const [row] = await strict.app.orm.em.fork().getConnection().execute(`select notification_url_sandbox as u from merchants where id = ?`, [m.merchantId]);
    expect(row.u).toBeNull();
  });

  it('checked again on every send: a name that now resolves to loopback is refused at connect time; nothing reaches it', async () => {
    const m = await createMerchant(strict.app);
    await setUrl(loose.app, m.merchantId, 'sandbox', `http://localhost:${r.port}/hook`);
    const order = await newOrder(strict.app, m.merchantId);
    await transition(strict.app, order.id, 'Success');
    const [d] = await eventually(async () => {
      const rows = await deliveriesOf(strict.app, m.merchantId);
      return rows[0]?.state === 'failed' ? rows : null;
    });
    const attempts = await attemptsOf(strict.app, d!.id);
    expect(attempts).toHaveLength(4);
    for (const a of attempts) expect(a).toMatchObject({ http_status: null, error: expect.stringMatching(/ESSRF.*localhost resolves to a non-public address/) });
    expect(r.received).toHaveLength(0);
  });
});
