import {
  requireApiKey,
  requireDashboard,
  requireEnvironment,
  requireMerchant,
  requireMerchantWide,
  requireOrderScope,
  requireFreshAuth,
  requirePermission,
  requireSameMerchant,
  resolveEnvironment,
} from '../../src/common/access.js';
import type { Caller } from '../../src/common/context.js';
import { DomainError } from '../../src/common/errors.js';

/*
 * The access rules every service applies (src/common/access.ts), one row per caller kind: which
 * credential passes, and the exact code the others get. REST and GraphQL answer with these codes.
 */

const M = '00000000-0000-4000-8000-000000000001';
const OTHER = '00000000-0000-4000-8000-000000000002';
const ORDER = '00000000-0000-4000-8000-0000000000aa';

const callers: Record<string, Caller> = {
  anonymous: { kind: 'anonymous' },
  owner: { kind: 'dashboard', userId: 'u', merchantId: M, sessionId: 's', role: 'owner' },
  viewer: { kind: 'dashboard', userId: 'u', merchantId: M, sessionId: 's', role: 'viewer' },
  finance: { kind: 'dashboard', userId: 'u', merchantId: M, sessionId: 's', role: 'finance' },
  apiKey: { kind: 'apiKey', merchantId: M, environment: 'sandbox', apiKeyId: 'k' },
  checkout: { kind: 'checkout', merchantId: M, environment: 'production', orderId: ORDER },
};

/** The code thrown, or 'ok'. */
function outcome(fn: () => unknown): string {
  try {
    fn();
    return 'ok';
  } catch (e) {
    if (e instanceof DomainError) return e.code;
    throw e;
  }
}

const rules: [string, (c: Caller) => unknown, Record<keyof typeof callers, string>][] = [
  [
    'requireMerchant',
    (c) => requireMerchant({ caller: c }),
    { anonymous: 'UNAUTHENTICATED', owner: 'ok', viewer: 'ok', finance: 'ok', apiKey: 'ok', checkout: 'ok' },
  ],
  [
    'requireMerchantWide',
    (c) => requireMerchantWide({ caller: c }, 'Listing orders'),
    { anonymous: 'FORBIDDEN', owner: 'ok', viewer: 'ok', finance: 'ok', apiKey: 'ok', checkout: 'FORBIDDEN' },
  ],
  [
    'requireMerchantWide (exports.csv)',
    (c) => requireMerchantWide({ caller: c }, 'Exporting orders', 'exports.csv'),
    { anonymous: 'FORBIDDEN', owner: 'ok', viewer: 'FORBIDDEN', finance: 'ok', apiKey: 'ok', checkout: 'FORBIDDEN' },
  ],
  [
    'requireApiKey',
    (c) => requireApiKey({ caller: c }),
    { anonymous: 'UNAUTHENTICATED', owner: 'UNAUTHENTICATED', viewer: 'UNAUTHENTICATED', finance: 'UNAUTHENTICATED', apiKey: 'ok', checkout: 'SCOPE_DENIED' },
  ],
  [
    'requireDashboard',
    (c) => requireDashboard({ caller: c }),
    { anonymous: 'UNAUTHENTICATED', owner: 'ok', viewer: 'ok', finance: 'ok', apiKey: 'UNAUTHENTICATED', checkout: 'UNAUTHENTICATED' },
  ],
  [
    'requireDashboard (dashboard-only feature)',
    (c) => requireDashboard({ caller: c }, 'dashboard only'),
    { anonymous: 'UNAUTHENTICATED', owner: 'ok', viewer: 'ok', finance: 'ok', apiKey: 'FORBIDDEN', checkout: 'FORBIDDEN' },
  ],
  [
    'requirePermission (merchant.settings)',
    (c) => requirePermission({ caller: c }, 'merchant.settings'),
    { anonymous: 'UNAUTHENTICATED', owner: 'ok', viewer: 'FORBIDDEN', finance: 'FORBIDDEN', apiKey: 'UNAUTHENTICATED', checkout: 'UNAUTHENTICATED' },
  ],
  [
    'requireFreshAuth (apiKeys.manage, not fresh)',
    (c) => requireFreshAuth({ caller: c }, 'apiKeys.manage', 'rotate API keys'),
    {
      anonymous: 'UNAUTHENTICATED',
      owner: 'REAUTHENTICATION_REQUIRED',
      viewer: 'FORBIDDEN',
      finance: 'FORBIDDEN',
      apiKey: 'UNAUTHENTICATED',
      checkout: 'UNAUTHENTICATED',
    },
  ],
  [
    'requireOrderScope (its own order)',
    (c) => requireOrderScope({ caller: c }, ORDER),
    { anonymous: 'ok', owner: 'ok', viewer: 'ok', finance: 'ok', apiKey: 'ok', checkout: 'ok' },
  ],
  [
    'requireOrderScope (another order)',
    (c) => requireOrderScope({ caller: c }, OTHER),
    { anonymous: 'ok', owner: 'ok', viewer: 'ok', finance: 'ok', apiKey: 'ok', checkout: 'SCOPE_DENIED' },
  ],
  [
    'requireSameMerchant (own id)',
    (c) => requireSameMerchant({ caller: c }, M),
    { anonymous: 'UNAUTHENTICATED', owner: 'ok', viewer: 'ok', finance: 'ok', apiKey: 'ok', checkout: 'ok' },
  ],
  [
    'requireSameMerchant (other id)',
    (c) => requireSameMerchant({ caller: c }, OTHER),
    {
      anonymous: 'UNAUTHENTICATED',
      owner: 'MERCHANT_MISMATCH',
      viewer: 'MERCHANT_MISMATCH',
      finance: 'MERCHANT_MISMATCH',
      apiKey: 'MERCHANT_MISMATCH',
      checkout: 'MERCHANT_MISMATCH',
    },
  ],
];

describe.each(rules)('%s', (_name, rule, expected) => {
  it.each(Object.keys(callers))('%s', (kind) => {
    expect(outcome(() => rule(callers[kind]!))).toBe(expected[kind]);
  });
});

describe('requireEnvironment', () => {
  it("a key's own environment wins over the path's", () => {
    expect(requireEnvironment({ caller: callers.checkout!, environment: 'sandbox' })).toBe('production');
    expect(requireEnvironment({ caller: callers.apiKey!, environment: null })).toBe('sandbox');
  });
  it('a dashboard session uses the named environment, and must name one', () => {
    expect(requireEnvironment({ caller: callers.owner!, environment: 'production' })).toBe('production');
    expect(outcome(() => requireEnvironment({ caller: callers.owner!, environment: null }))).toBe('VALIDATION_FAILED');
  });
});

describe('resolveEnvironment: the one rule for which environment a request acts in', () => {
  it('a key acts in its own; a different named one is ignored by default, refused when asked (WRONG_ENVIRONMENT)', () => {
    expect(resolveEnvironment(callers.apiKey!, 'production')).toBe('sandbox');
    expect(resolveEnvironment(callers.apiKey!, 'sandbox', 'refuse')).toBe('sandbox');
    expect(resolveEnvironment(callers.apiKey!, null, 'refuse')).toBe('sandbox');
    expect(outcome(() => resolveEnvironment(callers.apiKey!, 'production', 'refuse'))).toBe('WRONG_ENVIRONMENT');
    expect(outcome(() => resolveEnvironment(callers.checkout!, 'sandbox', 'refuse'))).toBe('WRONG_ENVIRONMENT');
  });
  it('a dashboard session acts in the one it names and must name one, with or without refusal', () => {
    expect(resolveEnvironment(callers.viewer!, 'sandbox', 'refuse')).toBe('sandbox');
    expect(outcome(() => resolveEnvironment(callers.viewer!, undefined))).toBe('VALIDATION_FAILED');
    expect(outcome(() => resolveEnvironment(callers.anonymous!, null))).toBe('VALIDATION_FAILED');
  });
});

it('a role refusal names the role and what it cannot do, with the permission in details', () => {
  let err: unknown;
  try {
    requirePermission({ caller: callers.finance! }, 'apiKeys.manage');
  } catch (e) {
    err = e;
  }
  expect(err).toMatchObject({
    code: 'FORBIDDEN',
    message: 'Your role (finance) cannot rotate API keys or change their IP allowlists',
    details: { permission: 'apiKeys.manage', role: 'finance' },
  });
});
