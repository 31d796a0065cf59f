import { can, PERMISSIONS, permissionsOf, permissionTableMarkdown, TEAM_ROLES, type Permission } from '../../src/common/permissions.js';

/*
 * The permission table (src/common/permissions.ts) keeps the rules set for the roles; the
 * docs/teams.md copy of it is checked by test/unit/docs.test.ts (generated section "permission-table").
 */

const all = Object.keys(PERMISSIONS) as Permission[];
const reads = all.filter((p) => p.endsWith('.read'));

it('the owner has every permission, ownership and settlement included', () => {
  expect(permissionsOf('owner')).toEqual(all);
});

it('an admin has everything but ownership and the settlement addresses', () => {
  expect(all.filter((p) => !can('admin', p))).toEqual(['settlement.manage', 'team.ownership']);
});

it('a viewer only reads, and reads neither the team, the audit trail nor exports', () => {
  expect(permissionsOf('viewer').every((p) => p.endsWith('.read'))).toBe(true);
  expect(reads.filter((p) => !can('viewer', p))).toEqual(['team.read', 'audit.read']);
});

it('the audit trail: owners and admins only (not finance, developer or viewer)', () => {
  expect(TEAM_ROLES.filter((r) => can(r, 'audit.read'))).toEqual(['owner', 'admin']);
});

it('finance: orders, payments, CSV export, settlement view, refunds — no API keys, webhooks, team or other changes', () => {
  expect(permissionsOf('finance')).toEqual([
    'merchant.read',
    'orders.read',
    'payments.read',
    'exports.csv',
    'paymentLinks.read',
    'settlement.read',
    'refunds.read',
    'refunds.manage',
  ]);
});

it('developer: API keys, webhooks and the notification URL, orders read — no money views or team', () => {
  expect(permissionsOf('developer')).toEqual([
    'merchant.read',
    'orders.read',
    'paymentLinks.read',
    'apiKeys.read',
    'apiKeys.manage',
    'webhooks.read',
    'webhooks.manage',
  ]);
});

it('an unknown role has no permission', () => {
  expect(all.some((p) => can('superuser', p))).toBe(false);
});

it('the Markdown table has one row per permission and one column per role', () => {
  const lines = permissionTableMarkdown().split('\n');
  expect(lines).toHaveLength(all.length + 2);
  expect(lines[0]).toBe(`| Permission | What | ${TEAM_ROLES.join(' | ')} |`);
  expect(lines.find((l) => l.startsWith('| `exports.csv`'))).toBe('| `exports.csv` | export orders and payments as CSV | ✓ | ✓ | — | ✓ | — |');
});
