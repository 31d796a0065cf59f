/**
 * Teams: users distinct from merchants, roles enforced by one permission table for
 * GraphQL and REST, invites by a mailed single-use link (a real SMTP server: smtp-server on
 * loopback), removal that ends the member's sessions at once, one user in two merchants.
 */
import { createHash } from 'node:crypto';
import { print } from 'graphql';
import {
  AcceptTeamInviteDocument,
  ApiKeysDocument,
  ChangeTeamMemberRoleDocument,
  CreatePaymentLinkDocument,
  DashOrdersDocument,
  InviteTeamMemberDocument,
  LoginDocument,
  MeDocument,
  MembershipsDocument,
  MerchantEventsDocument,
  type MerchantEventsSubscription,
  RemoveTeamMemberDocument,
  RevokeTeamInviteDocument,
  RotateApiKeyDocument,
  SetNotificationUrlDocument,
  SwitchMerchantDocument,
  TeamInvitesDocument,
  TeamMembersDocument,
  UpdateMerchantSettingsDocument,
} from '../generated/graphql';
import { addMember, createMerchant } from '../support/fixtures';
import type { TestGateway } from '../support/gateway';
import { bearer, gql, wsClient } from '../support/graphql';
import { http } from '../support/http';
import { eventually } from '../support/order-watch';
import { freshLogin } from '../support/reauth';
import type { TestSmtp } from '../support/smtp';
import { errorCode, startTeamGateway, stopTeamGateway } from '../support/teams';

jest.setTimeout(120_000);

const T = '/api/v2/testnet';
let smtp: TestSmtp;
let gw: TestGateway;

beforeAll(async () => {
  ({ gw, smtp } = await startTeamGateway({
    // Subscriptions re-check their credential often, so a removed member's stream ends promptly.
    SUBSCRIPTION_AUTH_RECHECK_MS: '200',
  }));
});
afterAll(() => stopTeamGateway({ gw, smtp }));

const code = errorCode;
const sql = <T = Record<string, unknown>>(q: string, params: unknown[] = []) => gw.app.orm.em.fork().getConnection().execute<T[]>(q, params);
let seq = 0;
const newEmail = (what: string) => `${what}-${++seq}-${Date.now()}@team.test`;

/** The invite link mailed to `to` (the newest), and its token. */
async function mailedToken(to: string): Promise<{ link: string; token: string; text: string }> {
  await eventually(async () => smtp.mails.some((m) => m.to.includes(to)), `the invite mail to ${to}`);
  const mail = smtp.mails.filter((m) => m.to.includes(to)).at(-1)!;
  const text = mail.parsed.text ?? '';
  const link = text.match(/https:\/\/dashboard\.gateway\.test\/invite#token=[A-Za-z0-9_-]+/)?.[0];
  if (!link) throw new Error(`no invite link in: ${text}`);
  return { link, token: link.split('#token=')[1]!, text };
}

async function order(m: { merchantId: string; sandboxKey: string }, orderNo: string) {
  const r = await http(gw.url, `${T}/merchant/fiat/order`, {
    body: { merchant_id: m.merchantId, order_no: orderNo, amount: '50000' },
    headers: { 'api-key': m.sandboxKey },
  });
  expect(r.status).toBe(201);
}

const orderNos = async (token: string) => {
  const r = await gql(gw.url, DashOrdersDocument, { environment: 'SANDBOX', first: 50 }, bearer(token));
  expect(r.errors).toBeUndefined();
  return r.data!.orders.edges.map((e) => e.node.orderNo).sort();
};

describe('invite → accept → a finance member', () => {
  it('the owner invites by mail; the link works once; finance exports CSV but cannot rotate API keys or change the notification URL', async () => {
    const m = await createMerchant(gw.app);
    await order(m, 'TEAM-FIN-1');
    const owner = await freshLogin(gw.url, m);
    const email = newEmail('finance');

    const invited = await gql(gw.url, InviteTeamMemberDocument, { email, role: 'FINANCE' }, bearer(owner));
    expect(invited.errors).toBeUndefined();
    expect(invited.data!.inviteTeamMember).toMatchObject({ inviteUrl: null, invite: { email, role: 'FINANCE', status: 'PENDING', invitedBy: m.email } });
    const { token, text } = await mailedToken(email);
    expect(text).toContain('as finance');
    // Hashed at rest: the row holds the SHA-256, never the token.
    const rows = await sql<{ token_hash: string }>(`select token_hash from team_invites where email = ?`, [email]);
    expect(rows).toEqual([{ token_hash: createHash('sha256').update(token).digest('hex') }]);
    expect(JSON.stringify(await sql(`select * from team_invites where email = ?`, [email]))).not.toContain(token);

    // Accepting over REST creates the account.
    const accepted = await http(gw.url, '/api/v2/team/invites/accept', { body: { token, password: 'finance password 1' } });
    expect(accepted.status).toBe(200);
    expect(accepted.body.data).toMatchObject({ merchant_id: m.merchantId, email, role: 'finance', account_created: true });

    // The same link again: refused in both transports, nothing changes.
    const again = await http(gw.url, '/api/v2/team/invites/accept', { body: { token, password: 'finance password 1' } });
    expect(again.status).toBe(410);
    expect(again.body).toMatchObject({ status_code: 410, data: { code: 'INVITE_USED' } });
    expect(code(await gql(gw.url, AcceptTeamInviteDocument, { token, password: 'another password' }))).toBe('INVITE_USED');
    expect(await sql(`select role from memberships where merchant_id = ? order by created_at`, [m.merchantId])).toEqual([
      { role: 'owner' },
      { role: 'finance' },
    ]);

    // Signed in (and even freshly re-authenticated), finance reads and exports…
    const fin = await freshLogin(gw.url, { email, password: 'finance password 1' });
    expect((await gql(gw.url, MeDocument, {}, bearer(fin))).data!.me).toMatchObject({ email, role: 'finance', merchant: { id: m.merchantId } });
    const csv = await http(gw.url, `${T}/merchant/export/orders.csv`, { headers: bearer(fin) });
    expect(csv.status).toBe(200);
    expect(csv.headers.get('content-type')).toMatch(/^text\/csv/);
    expect(csv.text).toContain('TEAM-FIN-1');
    // …but cannot rotate the API key, change the notification URL, the settings or the team.
    const rotate = await gql(gw.url, RotateApiKeyDocument, { environment: 'PRODUCTION' }, bearer(fin));
    expect(rotate.errors?.[0]).toMatchObject({
      message: 'Your role (finance) cannot rotate API keys or change their IP allowlists',
      extensions: { code: 'FORBIDDEN', permission: 'apiKeys.manage', role: 'finance' },
    });
    expect(code(await gql(gw.url, SetNotificationUrlDocument, { environment: 'PRODUCTION', url: 'https://attacker.example/hook' }, bearer(fin)))).toBe(
      'FORBIDDEN',
    );
    expect(code(await gql(gw.url, ApiKeysDocument, {}, bearer(fin)))).toBe('FORBIDDEN');
    expect(code(await gql(gw.url, InviteTeamMemberDocument, { email: newEmail('x'), role: 'VIEWER' }, bearer(fin)))).toBe('FORBIDDEN');
    const settings = await http(gw.url, '/api/v2/merchant/settings', { method: 'PUT', body: { fee_included: false }, headers: bearer(fin) });
    expect(settings.status).toBe(403);
    expect(settings.body).toMatchObject({ status_code: 403, data: { code: 'FORBIDDEN', permission: 'merchant.settings', role: 'finance' } });
    const members = await http(gw.url, '/api/v2/team/members', { headers: bearer(fin) });
    expect(members.body).toMatchObject({ status_code: 403, data: { code: 'FORBIDDEN' } });
    // Nothing changed: the old production key still works, no notification URL.
    expect((await http(gw.url, '/api/v2/mainnet/merchant/me', { headers: { 'api-key': m.productionKey } })).status).toBe(200);
    expect(await sql(`select notification_url_production as url, fee_included from merchants where id = ?`, [m.merchantId])).toEqual([
      { url: null, fee_included: true },
    ]);
  });

  it('expired, revoked and unknown invite tokens are refused and change nothing; a wrong password of an existing account leaves the invite usable', async () => {
    const m = await createMerchant(gw.app);
    const owner = await freshLogin(gw.url, m);

    const expiring = newEmail('late');
    await gql(gw.url, InviteTeamMemberDocument, { email: expiring, role: 'VIEWER' }, bearer(owner));
    const late = await mailedToken(expiring);
    await sql(`update team_invites set expires_at = now() - interval '1 second' where email = ?`, [expiring]);
    const r1 = await http(gw.url, '/api/v2/team/invites/accept', { body: { token: late.token, password: 'viewer password 1' } });
    expect(r1.body).toMatchObject({ status_code: 410, data: { code: 'INVITE_EXPIRED' } });
    expect(await sql(`select 1 from dashboard_users where email = ?`, [expiring])).toEqual([]);
    expect((await gql(gw.url, TeamInvitesDocument, {}, bearer(owner))).data!.teamInvites.find((i) => i.email === expiring)?.status).toBe('EXPIRED');

    const revoked = newEmail('revoked');
    const inv = await gql(gw.url, InviteTeamMemberDocument, { email: revoked, role: 'ADMIN' }, bearer(owner));
    const { token } = await mailedToken(revoked);
    const rv = await gql(gw.url, RevokeTeamInviteDocument, { inviteId: inv.data!.inviteTeamMember.invite.id }, bearer(owner));
    expect(rv.data!.revokeTeamInvite.status).toBe('REVOKED');
    expect(code(await gql(gw.url, AcceptTeamInviteDocument, { token, password: 'admin password 1' }))).toBe('INVITE_REVOKED');
    expect(code(await gql(gw.url, RevokeTeamInviteDocument, { inviteId: inv.data!.inviteTeamMember.invite.id }, bearer(owner)))).toBe('INVITE_NOT_FOUND');

    const unknown = await http(gw.url, '/api/v2/team/invites/accept', { body: { token: 'x'.repeat(43), password: 'whatever 123' } });
    expect(unknown.body).toMatchObject({ status_code: 404, data: { code: 'INVALID_INVITE' } });

    // An email that already has an account: its own password is required; a wrong one consumes nothing.
    const other = await createMerchant(gw.app);
    await gql(gw.url, InviteTeamMemberDocument, { email: other.email, role: 'DEVELOPER' }, bearer(owner));
    const existing = await mailedToken(other.email);
    expect(code(await gql(gw.url, AcceptTeamInviteDocument, { token: existing.token, password: 'not the password' }))).toBe('INVALID_PASSWORD');
    const ok = await gql(gw.url, AcceptTeamInviteDocument, { token: existing.token, password: other.password });
    expect(ok.data!.acceptTeamInvite).toMatchObject({ merchantId: m.merchantId, role: 'DEVELOPER', accountCreated: false });
    expect(await sql(`select count(*)::int as n from dashboard_users where email = ?`, [other.email])).toEqual([{ n: 1 }]);
  });

  it('team changes need a fresh re-authentication; a member already in the team is not invited twice', async () => {
    const m = await createMerchant(gw.app);
    const stale = (await gql(gw.url, LoginDocument, { email: m.email, password: m.password })).data!.login.token;
    expect(code(await gql(gw.url, InviteTeamMemberDocument, { email: newEmail('v'), role: 'VIEWER' }, bearer(stale)))).toBe('REAUTHENTICATION_REQUIRED');
    const owner = await freshLogin(gw.url, m);
    expect(code(await gql(gw.url, InviteTeamMemberDocument, { email: m.email, role: 'VIEWER' }, bearer(owner)))).toBe('ALREADY_A_MEMBER');
    expect(await sql(`select 1 from team_invites where merchant_id = ?`, [m.merchantId])).toEqual([]);
  });
});

describe('roles', () => {
  it('a viewer reads but cannot write (GraphQL and REST), and its role change applies to its next request', async () => {
    const m = await createMerchant(gw.app);
    await order(m, 'TEAM-VIEW-1');
    const viewer = await addMember(gw.app, m.merchantId, 'viewer');
    const v = await freshLogin(gw.url, viewer);
    expect(await orderNos(v)).toEqual(['TEAM-VIEW-1']);
    expect(code(await gql(gw.url, UpdateMerchantSettingsDocument, { input: { feeIncluded: false } }, bearer(v)))).toBe('FORBIDDEN');
    const link = await gql(
      gw.url,
      CreatePaymentLinkDocument,
      { environment: 'SANDBOX', input: { title: 'x', expirationTime: 3600, maxUsage: 1, products: [{ name: 'a', price: '50000', quantity: 1 }] } },
      bearer(v),
    );
    expect(code(link)).toBe('FORBIDDEN');
    expect(code(await gql(gw.url, RotateApiKeyDocument, { environment: 'SANDBOX' }, bearer(v)))).toBe('FORBIDDEN');
    const put = await http(gw.url, '/api/v2/merchant/settings', { method: 'PUT', body: { fee_included: false }, headers: bearer(v) });
    expect(put.body).toMatchObject({ status_code: 403, data: { code: 'FORBIDDEN' } });
    const csv = await http(gw.url, `${T}/merchant/export/orders.csv`, { headers: bearer(v) });
    expect(csv.body).toMatchObject({ status_code: 403, data: { code: 'FORBIDDEN', permission: 'exports.csv' } });
    expect(await sql(`select fee_included from merchants where id = ?`, [m.merchantId])).toEqual([{ fee_included: true }]);
    expect(await sql(`select 1 from payment_links where merchant_id = ?`, [m.merchantId])).toEqual([]);

    // The owner makes the viewer an admin: the same token may change settings now.
    const owner = await freshLogin(gw.url, m);
    const changed = await http(gw.url, `/api/v2/team/members/${viewer.userId}`, { method: 'PUT', body: { role: 'admin' }, headers: bearer(owner) });
    expect(changed.body).toMatchObject({ status_code: 200, data: { user_id: viewer.userId, role: 'admin' } });
    expect((await gql(gw.url, UpdateMerchantSettingsDocument, { input: { feeIncluded: false } }, bearer(v))).errors).toBeUndefined();
  });

  it('the last owner can be neither removed nor demoted; admins cannot touch owners; ownership is transferred by an owner', async () => {
    const m = await createMerchant(gw.app);
    const owner = await freshLogin(gw.url, m);
    const ownerId = (await gql(gw.url, MeDocument, {}, bearer(owner))).data!.me.id;
    const admin = await addMember(gw.app, m.merchantId, 'admin');
    const a = await freshLogin(gw.url, admin);

    expect(code(await gql(gw.url, RemoveTeamMemberDocument, { userId: ownerId }, bearer(owner)))).toBe('LAST_OWNER');
    const demote = await http(gw.url, `/api/v2/team/members/${ownerId}`, { method: 'PUT', body: { role: 'admin' }, headers: bearer(owner) });
    expect(demote.body).toMatchObject({ status_code: 409, data: { code: 'LAST_OWNER' } });
    // An admin may manage the team, but not owners.
    expect(code(await gql(gw.url, RemoveTeamMemberDocument, { userId: ownerId }, bearer(a)))).toBe('FORBIDDEN');
    expect(code(await gql(gw.url, ChangeTeamMemberRoleDocument, { userId: admin.userId, role: 'OWNER' }, bearer(a)))).toBe('FORBIDDEN');
    expect(code(await gql(gw.url, InviteTeamMemberDocument, { email: newEmail('o'), role: 'OWNER' }, bearer(a)))).toBe('FORBIDDEN');
    expect(await sql(`select role from memberships where merchant_id = ? order by role`, [m.merchantId])).toEqual([{ role: 'admin' }, { role: 'owner' }]);

    // Transfer: the owner promotes the admin, then steps down.
    expect((await gql(gw.url, ChangeTeamMemberRoleDocument, { userId: admin.userId, role: 'OWNER' }, bearer(owner))).data!.changeTeamMemberRole.role).toBe(
      'OWNER',
    );
    expect((await gql(gw.url, ChangeTeamMemberRoleDocument, { userId: ownerId, role: 'VIEWER' }, bearer(owner))).data!.changeTeamMemberRole.role).toBe(
      'VIEWER',
    );
    const team = (await gql(gw.url, TeamMembersDocument, {}, bearer(a))).data!.teamMembers;
    expect(team.map((t) => [t.userId, t.role]).sort()).toEqual(
      [
        [admin.userId, 'OWNER'],
        [ownerId, 'VIEWER'],
      ].sort(),
    );
  });
});

describe('removal ends sessions at once', () => {
  it("a removed member's access token, refresh token and live subscription are refused; their other merchant is untouched", async () => {
    const m = await createMerchant(gw.app);
    const elsewhere = await createMerchant(gw.app);
    const dev = await addMember(gw.app, m.merchantId, 'developer');
    await addMember(gw.app, elsewhere.merchantId, 'viewer', dev);
    const login = await http(gw.url, '/api/v2/auth/login', { body: { email: dev.email, password: dev.password, user_type: 'merchant' } });
    const { token, refresh_token } = login.body.data as { token: string; refresh_token: string };
    expect((await http(gw.url, '/api/v2/auth/me', { headers: bearer(token) })).body.data.merchant.merchant_id).toBe(m.merchantId);
    const other = (await gql(gw.url, SwitchMerchantDocument, { merchantId: elsewhere.merchantId }, bearer(token))).data!.switchMerchant.token;

    const client = wsClient(gw.url, { authorization: `Bearer ${token}` });
    const errors: { extensions?: { code?: string } }[] = [];
    let completed = false;
    client.subscribe<MerchantEventsSubscription>(
      { query: print(MerchantEventsDocument), variables: { environment: 'SANDBOX' } },
      {
        next: (v) => v.errors && errors.push(...(v.errors as unknown as typeof errors)),
        error: (e) => errors.push(e as (typeof errors)[number]),
        complete: () => (completed = true),
      },
    );
    try {
      // The subscription is live (the server counts it) before the removal.
      await eventually(async () => (await gql(gw.url, MeDocument, {}, bearer(token))).data?.me.role === 'developer', 'the member signed in');

      const owner = await freshLogin(gw.url, m);
      const removed = await http(gw.url, `/api/v2/team/members/${dev.userId}`, { method: 'DELETE', headers: bearer(owner) });
      expect(removed.body).toMatchObject({ status_code: 200, data: { user_id: dev.userId, role: 'developer' } });

      // The very next request with the old token: refused, over REST and GraphQL.
      const me = await http(gw.url, '/api/v2/auth/me', { headers: bearer(token) });
      expect(me.body).toMatchObject({ status_code: 401, data: { code: 'SESSION_REVOKED' } });
      expect(code(await gql(gw.url, DashOrdersDocument, { environment: 'SANDBOX' }, bearer(token)))).toBe('SESSION_REVOKED');
      expect((await http(gw.url, '/api/v2/auth/refresh', { body: { refresh_token } })).body.data.code).toBe('SESSION_REVOKED');
      expect(await sql(`select revoked_reason from sessions where user_id = ? and merchant_id = ?`, [dev.userId, m.merchantId])).toEqual([
        { revoked_reason: 'member_removed' },
      ]);
      // The live subscription ends with the same code at its next check.
      await eventually(async () => completed && errors.length > 0, 'the subscription to end');
      expect(errors[0]?.extensions?.code).toBe('SESSION_REVOKED');
      // The user's session for the other merchant still works; logging in lands there now.
      expect((await gql(gw.url, MeDocument, {}, bearer(other))).data!.me).toMatchObject({ role: 'viewer', merchant: { id: elsewhere.merchantId } });
      const relogin = (await gql(gw.url, LoginDocument, { email: dev.email, password: dev.password })).data!.login.token;
      expect((await gql(gw.url, MembershipsDocument, {}, bearer(relogin))).data!.memberships.map((x) => x.merchantId)).toEqual([elsewhere.merchantId]);
    } finally {
      await client.dispose();
    }
  });
});

describe('one user in two merchants', () => {
  it("sees each merchant's data only under that merchant, with that merchant's role", async () => {
    const a = await createMerchant(gw.app);
    const b = await createMerchant(gw.app);
    await order(a, 'TEAM-A-1');
    await order(b, 'TEAM-B-1');
    // a's owner accepts an invite to b as finance (an existing account: its own password).
    const bOwner = await freshLogin(gw.url, b);
    await gql(gw.url, InviteTeamMemberDocument, { email: a.email, role: 'FINANCE' }, bearer(bOwner));
    const { token: invite } = await mailedToken(a.email);
    expect((await gql(gw.url, AcceptTeamInviteDocument, { token: invite, password: a.password })).data!.acceptTeamInvite.accountCreated).toBe(false);

    const underA = await freshLogin(gw.url, a);
    const ms = (await gql(gw.url, MembershipsDocument, {}, bearer(underA))).data!.memberships;
    expect(ms.map((x) => [x.merchantId, x.role, x.active])).toEqual([
      [a.merchantId, 'OWNER', true],
      [b.merchantId, 'FINANCE', false],
    ]);
    expect(await orderNos(underA)).toEqual(['TEAM-A-1']);

    const switched = await http(gw.url, '/api/v2/auth/switch-merchant', { body: { merchant_id: b.merchantId }, headers: bearer(underA) });
    expect(switched.status).toBe(200);
    const underB = switched.body.data.token as string;
    expect(await orderNos(underB)).toEqual(['TEAM-B-1']);
    const csvB = await http(gw.url, `${T}/merchant/export/orders.csv`, { headers: bearer(underB) });
    expect(csvB.text).toContain('TEAM-B-1');
    expect(csvB.text).not.toContain('TEAM-A-1');
    // Finance in b: no key rotation there, even though the same person owns a.
    expect(code(await gql(gw.url, RotateApiKeyDocument, { environment: 'SANDBOX' }, bearer(underB)))).toBe('FORBIDDEN');
    expect((await gql(gw.url, ApiKeysDocument, {}, bearer(underA))).errors).toBeUndefined();
    // Both sessions stay valid side by side.
    expect(await orderNos(underA)).toEqual(['TEAM-A-1']);

    // A merchant the user is not a member of.
    const c = await createMerchant(gw.app);
    expect(code(await gql(gw.url, SwitchMerchantDocument, { merchantId: c.merchantId }, bearer(underA)))).toBe('NOT_A_MEMBER');
    expect((await http(gw.url, '/api/v2/auth/switch-merchant', { body: { merchant_id: 'nope' }, headers: bearer(underA) })).body).toMatchObject({
      status_code: 400,
      data: { code: 'VALIDATION_FAILED' },
    });
  });
});
