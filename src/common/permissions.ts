/**
 * Team roles and what each may do: THE permission table. Every dashboard operation names one
 * permission; `requirePermission` (access.ts) is the one check, called by the services that REST
 * routes and GraphQL resolvers (and the CLI) share, so both transports refuse the same role with the
 * same `FORBIDDEN`. docs/teams.md shows this table (`permissionTableMarkdown`; a unit test keeps the
 * page equal to the code).
 *
 * The roles govern dashboard users only. An API key is the merchant's server: what it may call is
 * fixed by the credential kind (the REST route's `auth`, GraphQL's `@Authorized`), not by a role.
 */

export const TEAM_ROLES = ['owner', 'admin', 'developer', 'finance', 'viewer'] as const;
export type TeamRole = (typeof TEAM_ROLES)[number];

const ALL: readonly TeamRole[] = TEAM_ROLES;

interface PermissionRule {
  roles: readonly TeamRole[];
  /** Completes "Your role (…) cannot …" and the docs table's "What" column. */
  action: string;
}

export const PERMISSIONS = {
  'merchant.read': { roles: ALL, action: 'see the merchant profile and its settings' },
  'merchant.settings': { roles: ['owner', 'admin'], action: 'change merchant settings (fee mode, order lifetime, tolerance, logo)' },
  'orders.read': { roles: ALL, action: 'see orders and order statistics' },
  'payments.read': { roles: ['owner', 'admin', 'finance', 'viewer'], action: 'see payments (transfers received)' },
  'exports.csv': { roles: ['owner', 'admin', 'finance'], action: 'export orders and payments as CSV' },
  'paymentLinks.read': { roles: ALL, action: 'see payment links' },
  'paymentLinks.manage': { roles: ['owner', 'admin'], action: 'create, change or delete payment links' },
  'apiKeys.read': { roles: ['owner', 'admin', 'developer', 'viewer'], action: 'see API key hints, allowlists and last use' },
  'apiKeys.manage': { roles: ['owner', 'admin', 'developer'], action: 'rotate API keys or change their IP allowlists' },
  'webhooks.read': { roles: ['owner', 'admin', 'developer', 'viewer'], action: 'see the webhook delivery log' },
  'webhooks.manage': {
    roles: ['owner', 'admin', 'developer'],
    action: 'change the notification URL, see or rotate webhook signing secrets, redeliver or test webhooks',
  },
  'settlement.read': { roles: ['owner', 'admin', 'finance', 'viewer'], action: 'see settlement addresses, sweeps, sweep balances and holds' },
  'settlement.manage': { roles: ['owner'], action: 'change settlement addresses' },
  'security.manage': { roles: ['owner', 'admin'], action: 'require a second factor of every member (the two-factor policy)' },
  'refunds.read': { roles: ['owner', 'admin', 'finance', 'viewer'], action: 'see refunds, refund settings and refund wallets' },
  'refunds.manage': { roles: ['owner', 'admin', 'finance'], action: 'request, approve or cancel refunds and change refund settings' },
  'sweeps.manage': { roles: ['owner', 'admin'], action: 'change the sweep schedule or ask for a sweep' },
  'team.read': { roles: ['owner', 'admin'], action: 'see team members and pending invites' },
  'team.manage': { roles: ['owner', 'admin'], action: 'invite, re-role or remove members (not owners) and revoke invites' },
  'team.ownership': { roles: ['owner'], action: 'make, demote or remove owners (ownership transfer)' },
  // Not finance: the trail holds every member's logins, IP addresses and user agents and the security
  // changes (keys, webhooks, team) — account oversight, not bookkeeping; finance's money data is in the exports.
  'audit.read': { roles: ['owner', 'admin'], action: 'read and export the audit trail' },
} as const satisfies Record<string, PermissionRule>;

export type Permission = keyof typeof PERMISSIONS;

export const isTeamRole = (v: unknown): v is TeamRole => typeof v === 'string' && (TEAM_ROLES as readonly string[]).includes(v);

/** Whether a member with `role` has `permission` (an unknown role has none). */
export function can(role: string, permission: Permission): boolean {
  return isTeamRole(role) && (PERMISSIONS[permission].roles as readonly TeamRole[]).includes(role);
}

/** The permissions of a role, in table order. */
export function permissionsOf(role: TeamRole): Permission[] {
  return (Object.keys(PERMISSIONS) as Permission[]).filter((p) => can(role, p));
}

/** The table as Markdown (docs/teams.md "Permission table" is exactly this). */
export function permissionTableMarkdown(): string {
  const head = `| Permission | What | ${TEAM_ROLES.join(' | ')} |`;
  const rule = `|---|---|${TEAM_ROLES.map(() => ':-:').join('|')}|`;
  const rows = (Object.entries(PERMISSIONS) as [Permission, PermissionRule][]).map(
    ([p, r]) => `| \`${p}\` | ${r.action} | ${TEAM_ROLES.map((role) => (r.roles.includes(role) ? '✓' : '—')).join(' | ')} |`,
  );
  return [head, rule, ...rows].join('\n');
}
