import { loadConfig } from '../../src/config';
import { DEFAULT_RETRY_SCHEDULE_S, MAX_RETRY_AFTER_S, RetrySchedule } from '../../src/modules/webhooks/webhook.schedule';
import { signWebhook, verifyWebhook } from '../../src/modules/webhooks/webhook.signer';
import { classifyAttempt } from '../../src/modules/webhooks/webhook.transitions';
import { webhookKindOf } from '../../src/modules/webhooks/webhook.payload';
import { createHmac } from 'node:crypto';
import { TEST_JWT_SECRET, TEST_MASTER_KEY } from '../support/gateway';

describe('retry schedule (docs/webhooks.md "Delivery, retries and guarantees")', () => {
  it('default: 11 attempts over about three days, and it is what the config uses', () => {
    const s = new RetrySchedule();
    expect(s.maxAttempts).toBe(11);
    expect(s.totalSpanS).toBe(254_550); // 2 d 22 h 42 min 30 s
    expect(s.totalSpanS / 86_400).toBeGreaterThan(2.9);
    expect(s.totalSpanS / 86_400).toBeLessThan(3);
    const config = loadConfig({ NODE_ENV: 'test', MASTER_KEY: TEST_MASTER_KEY, JWT_SECRET: TEST_JWT_SECRET });
    expect(config.WEBHOOK_RETRY_SCHEDULE_S).toEqual([...DEFAULT_RETRY_SCHEDULE_S]);
    expect(config.WEBHOOK_RETRY_JITTER).toBe(0.2);
  });

  it('waits grow with each failed attempt, ±20 % jitter, none after the last', () => {
    const low = new RetrySchedule(DEFAULT_RETRY_SCHEDULE_S, 0.2, () => 0);
    const high = new RetrySchedule(DEFAULT_RETRY_SCHEDULE_S, 0.2, () => 0.999999);
    for (let attempt = 1; attempt <= 10; attempt++) {
      const base = DEFAULT_RETRY_SCHEDULE_S[attempt - 1]! * 1000;
      expect(low.nextDelayMs(attempt)).toBe(Math.round(base * 0.8));
      expect(high.nextDelayMs(attempt)).toBeCloseTo(base * 1.2, -2);
    }
    expect(low.nextDelayMs(11)).toBeNull();
    expect(low.nextDelayMs(1, 1)).toBeNull(); // a test event: one attempt only
  });

  it('Retry-After lengthens a wait (never shortens it), capped at a day', () => {
    const s = new RetrySchedule([30], 0);
    expect(s.nextDelayMs(1, 2, 5)).toBe(30_000);
    expect(s.nextDelayMs(1, 2, 120)).toBe(120_000);
    expect(s.nextDelayMs(1, 2, 10 * 86_400)).toBe(MAX_RETRY_AFTER_S * 1000);
  });

  it('WEBHOOK_RETRY_SCHEDULE_S is validated', () => {
    expect(() => loadConfig({ NODE_ENV: 'test', MASTER_KEY: TEST_MASTER_KEY, JWT_SECRET: TEST_JWT_SECRET, WEBHOOK_RETRY_SCHEDULE_S: '30,abc' })).toThrow(
      /WEBHOOK_RETRY_SCHEDULE_S/,
    );
    expect(() => loadConfig({ NODE_ENV: 'test', MASTER_KEY: TEST_MASTER_KEY, JWT_SECRET: TEST_JWT_SECRET, WEBHOOK_RETRY_SCHEDULE_S: '30,-1' })).toThrow(
      /WEBHOOK_RETRY_SCHEDULE_S/,
    );
    expect(
      loadConfig({ NODE_ENV: 'test', MASTER_KEY: TEST_MASTER_KEY, JWT_SECRET: TEST_JWT_SECRET, WEBHOOK_RETRY_SCHEDULE_S: '0.5, 2' }).WEBHOOK_RETRY_SCHEDULE_S,
    ).toEqual([0.5, 2]);
  });
});

describe('attempt outcomes', () => {
  it.each([
    [200, 'delivered'],
    [201, 'delivered'],
    [204, 'delivered'],
    [299, 'delivered'],
    [408, 'retry'],
    [429, 'retry'],
    [500, 'retry'],
    [502, 'retry'],
    [503, 'retry'],
    [504, 'retry'],
    [301, 'failed'],
    [302, 'failed'],
    [307, 'failed'],
    [400, 'failed'],
    [401, 'failed'],
    [403, 'failed'],
    [404, 'failed'],
    [410, 'failed'],
    [422, 'failed'],
  ] as const)('HTTP %i → %s', (status, outcome) => {
    expect(classifyAttempt({ status, error: null })).toBe(outcome);
  });

  it('no status (network error, timeout, refused address) → retry', () => {
    expect(classifyAttempt({ status: null, error: 'ECONNREFUSED' })).toBe('retry');
  });
});

describe('events and signatures', () => {
  it.each([
    ['order.status_changed', 'Success', 'transaction.success'],
    ['order.status_changed', 'Underpaid', 'transaction.underpaid'],
    ['order.status_changed', 'Expired', 'transaction.expired'],
    ['order.status_changed', 'Processing', null],
    ['order.status_changed', 'Created', null],
    ['payment.late', 'Success', 'transaction.late_payment'],
    ['payment.overpaid', 'Success', 'transaction.overpaid'],
    ['something.else', 'Success', null],
  ])('%s → %s: %s', (type, to, kind) => {
    expect(webhookKindOf(type, to)).toBe(kind);
  });

  it('sha256=<hex HMAC-SHA256(api key, raw body)>, verified in constant time over the exact bytes', () => {
    const key = `cpg_${'ab'.repeat(32)}`;
    const body = '{"a":"é","b":1}';
    const sig = signWebhook(key, body);
    expect(sig).toBe(`sha256=${createHmac('sha256', key).update(Buffer.from(body, 'utf8')).digest('hex')}`);
    expect(verifyWebhook(key, Buffer.from(body), sig)).toBe(true);
    expect(verifyWebhook(key, '{"a":"é", "b":1}', sig)).toBe(false);
    expect(verifyWebhook(`cpg_${'cd'.repeat(32)}`, body, sig)).toBe(false);
    expect(verifyWebhook(key, body, undefined)).toBe(false);
  });
});
