/**
 * Standard Webhooks headers beside the seed's three (docs/webhooks.md "Standard Webhooks headers"),
 * verified on the receiver's side by the `standardwebhooks` npm package, not by our code:
 * a per-environment secret sealed at rest, replays and tampering rejected, rotation with an overlap.
 */
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import {
  LoginDocument,
  RedeliverWebhookDocument,
  RotateWebhookSigningSecretDocument,
  SendTestWebhookDocument,
  WebhookSigningSecretDocument,
} from '../generated/graphql';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { bearer, gql } from '../support/graphql';
import { freshLogin } from '../support/reauth';
import { WebhookReceiver, type ReceivedWebhook } from '../support/webhook-receiver';
import { FAST_WEBHOOKS, setUrl, verifies } from '../support/webhooks';

let gw: TestGateway;
let receiver: WebhookReceiver;
let m: Awaited<ReturnType<typeof createMerchant>>;
let auth: Record<string, string>;

beforeAll(async () => {
  gw = await startTestGateway({ ...FAST_WEBHOOKS });
  receiver = await WebhookReceiver.start();
  m = await createMerchant(gw.app);
  await setUrl(gw.app, m.merchantId, 'sandbox', receiver.url);
  auth = bearer(await freshLogin(gw.url, m));
});
afterAll(async () => {
  await gw?.close();
  await receiver?.close();
});

const headersOf = (w: ReceivedWebhook) => ({
  'webhook-id': String(w.headers['webhook-id']),
  'webhook-timestamp': String(w.headers['webhook-timestamp']),
  'webhook-signature': String(w.headers['webhook-signature']),
});
const verifiesWith = (secret: string, w: ReceivedWebhook, headers = headersOf(w)) => {
  try {
    new Webhook(secret).verify(w.raw.toString('utf8'), headers);
    return true;
  } catch (e) {
    if (e instanceof WebhookVerificationError) return false;
    throw e;
  }
};
const secretNow = async () => (await gql(gw.url, WebhookSigningSecretDocument, { environment: 'SANDBOX' as never }, auth)).data!.webhookSigningSecret;
async function sendTest(): Promise<ReceivedWebhook> {
  const before = receiver.received.length;
  const sent = await gql(gw.url, SendTestWebhookDocument, { environment: 'SANDBOX' as never }, auth);
  expect(sent.errors).toBeUndefined();
  await receiver.waitFor(before + 1);
  return receiver.received[before]!;
}

describe('Standard Webhooks headers', () => {
  it('sign every delivery with the environment’s secret, beside the seed’s HMAC; the secret is sealed at rest', async () => {
    const { secret } = await secretNow();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const w = await sendTest();
    expect(verifiesWith(secret, w)).toBe(true);
    expect(verifies(m.sandboxKey, w)).toBe(true);
    expect(w.headers['webhook-id']).toBe(w.headers['x-service-delivery-id']);
    expect(Number(w.headers['webhook-timestamp'])).toBeGreaterThan(Date.now() / 1000 - 120);

    // The same secret on a second ask; another environment has its own.
    expect((await secretNow()).secret).toBe(secret);
    const prod = (await gql(gw.url, WebhookSigningSecretDocument, { environment: 'PRODUCTION' as never }, auth)).data!.webhookSigningSecret.secret;
    expect(prod).not.toBe(secret);
    expect(verifiesWith(prod, w)).toBe(false);

    const rows = await gw.app.orm.em
      .fork()
      .getConnection()
      .execute<{ secret_ciphertext: string }[]>(`select secret_ciphertext from webhook_secrets where merchant_id = ?`, [m.merchantId]);
    expect(rows).toHaveLength(2);
    for (const r of rows) {
      expect(r.secret_ciphertext).not.toContain(secret.slice('whsec_'.length, 20));
      expect(r.secret_ciphertext).not.toContain(prod.slice('whsec_'.length, 20));
    }
  });

  it('a replayed call (old timestamp) or a tampered body, id or timestamp is rejected by the receiver', async () => {
    const { secret } = await secretNow();
    const w = await sendTest();
    const h = headersOf(w);
    expect(verifiesWith(secret, { ...w, raw: Buffer.from(w.raw.toString('utf8').replace('webhook.test', 'transaction.success')) })).toBe(false);
    expect(verifiesWith(secret, w, { ...h, 'webhook-id': 'someone-else' })).toBe(false);
    // A replayer who moves the timestamp into the tolerance breaks the signature.
    expect(verifiesWith(secret, w, { ...h, 'webhook-timestamp': String(Number(h['webhook-timestamp']) - 1) })).toBe(false);
    // The same call captured and replayed 6 minutes later: outside the library's 5-minute tolerance.
    const now = jest.spyOn(Date, 'now').mockReturnValue(Number(h['webhook-timestamp']) * 1000 + 6 * 60_000);
    try {
      expect(verifiesWith(secret, w)).toBe(false);
    } finally {
      now.mockRestore();
    }
  });

  it('a redelivery keeps webhook-id (receivers de-duplicate) with a fresh timestamp and signature', async () => {
    const { secret } = await secretNow();
    const first = await sendTest();
    const before = receiver.received.length;
    const again = await gql(gw.url, RedeliverWebhookDocument, { id: String(first.headers['webhook-id']) }, auth);
    expect(again.errors).toBeUndefined();
    await receiver.waitFor(before + 1);
    const second = receiver.received[before]!;
    expect(second.headers['webhook-id']).toBe(first.headers['webhook-id']);
    expect(verifiesWith(secret, second)).toBe(true);
  });

  it('rotation: both secrets sign during the overlap, the old one stops when it ends; at most two sign at once', async () => {
    const old = (await secretNow()).secret;
    const rotated = await gql(gw.url, RotateWebhookSigningSecretDocument, { environment: 'SANDBOX' as never, overlapHours: 24 }, auth);
    expect(rotated.errors).toBeUndefined();
    const fresh = rotated.data!.rotateWebhookSigningSecret;
    expect(fresh.secret).not.toBe(old);
    const retires = new Date(fresh.previousRetiresAt as string).getTime();
    expect(retires).toBeGreaterThan(Date.now() + 23 * 3600_000);
    expect(retires).toBeLessThan(Date.now() + 25 * 3600_000);

    const during = await sendTest();
    expect(String(during.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect(verifiesWith(old, during)).toBe(true);
    expect(verifiesWith(fresh.secret, during)).toBe(true);

    // A second rotation retires the first secret at once (the second keeps its overlap).
    const third = (await gql(gw.url, RotateWebhookSigningSecretDocument, { environment: 'SANDBOX' as never, overlapHours: 1 }, auth)).data!
      .rotateWebhookSigningSecret;
    const after = await sendTest();
    expect(String(after.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect(verifiesWith(old, after)).toBe(false);
    expect(verifiesWith(fresh.secret, after)).toBe(true);
    expect(verifiesWith(third.secret, after)).toBe(true);

    // Overlap 0: only the new secret signs.
    const fourth = (await gql(gw.url, RotateWebhookSigningSecretDocument, { environment: 'SANDBOX' as never, overlapHours: 0 }, auth)).data!
      .rotateWebhookSigningSecret;
    expect(fourth.previousRetiresAt).toBeNull();
    const last = await sendTest();
    expect(String(last.headers['webhook-signature']).split(' ')).toHaveLength(1);
    expect(verifiesWith(fourth.secret, last)).toBe(true);
    expect(verifiesWith(third.secret, last)).toBe(false);
  });

  it('bad input is refused and changes nothing; secrets are the dashboard’s, not an API key’s', async () => {
    const before = (await secretNow()).secret;
    const bad = await gql(gw.url, RotateWebhookSigningSecretDocument, { environment: 'SANDBOX' as never, overlapHours: 500 }, auth);
    expect(bad.errors?.[0]?.extensions?.code).toBe('VALIDATION_FAILED');
    expect(bad.errors?.[0]?.message).toMatch(/overlapHours|168/);
    expect((await secretNow()).secret).toBe(before);
    // A dashboard session that has not given the password again lately can neither read nor rotate it.
    const stale = bearer((await gql(gw.url, LoginDocument, { email: m.email, password: m.password })).data!.login.token);
    expect((await gql(gw.url, WebhookSigningSecretDocument, { environment: 'SANDBOX' as never }, stale)).errors?.[0]?.extensions?.code).toBe(
      'REAUTHENTICATION_REQUIRED',
    );
    expect(
      (await gql(gw.url, RotateWebhookSigningSecretDocument, { environment: 'SANDBOX' as never, overlapHours: 0 }, stale)).errors?.[0]?.extensions?.code,
    ).toBe('REAUTHENTICATION_REQUIRED');
    expect((await secretNow()).secret).toBe(before);
    const byKey = await gql(gw.url, WebhookSigningSecretDocument, { environment: 'SANDBOX' as never }, { 'api-key': m.sandboxKey });
    expect(byKey.data).toBeFalsy();
    expect(byKey.errors?.[0]?.extensions?.code).toMatch(/UNAUTHENTICATED|FORBIDDEN/);
  });
});
