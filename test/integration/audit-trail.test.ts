/**
 * The audit trail: logins, failed logins and sensitive operations are recorded with who,
 * what (secrets never), when, IP and user agent, in the change's transaction; a merchant reads only
 * its own over GraphQL and CSV; the table is append-only for the application's role; each merchant's
 * hash chain has no forks under concurrency, and an edit or a gap made past the trigger is found.
 */
import pg from 'pg';
import {
  AcceptTeamInviteDocument,
  AuditEventsDocument,
  ChangeTeamMemberRoleDocument,
  InviteTeamMemberDocument,
  LoginDocument,
  RemoveTeamMemberDocument,
  RevokeTeamInviteDocument,
  SwitchMerchantDocument,
  ReauthenticateDocument,
  RotateApiKeyDocument,
  SetApiKeyIpAllowlistDocument,
  SetNotificationUrlDocument,
} from '../generated/graphql';
import { internalContext } from '../../src/common/context';
import { recordAudit } from '../../src/modules/audit/audit.service';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { bearer, gql } from '../support/graphql';
import { http } from '../support/http';
import { freshLogin } from '../support/reauth';

let gw: TestGateway;
beforeAll(async () => (gw = await startTestGateway({ ROLE: 'api', WEBHOOK_ALLOW_PRIVATE_URLS: 'true' })));
afterAll(() => gw?.close());

const UA = { 'user-agent': 'audit-test/1.0 (jest)' };
const login = async (m: { email: string; password: string }) =>
  (await gql(gw.url, LoginDocument, { email: m.email, password: m.password }, UA)).data!.login.token;
const db = () => gw.app.orm.em.fork().getConnection();

/** Runs statements on one connection of the test database as the superuser, triggers off (what only an owner or superuser can do). */
async function asSuperuserWithoutTriggers(sql: string, params: unknown[] = []): Promise<void> {
  const c = new pg.Client({ connectionString: gw.db.url });
  await c.connect();
  try {
    await c.query('begin');
    await c.query(`set local session_replication_role = replica`);
    await c.query(sql, params);
    await c.query('commit');
  } finally {
    await c.end();
  }
}

it('records a failed login, the login, re-authentication and each sensitive change, with who, IP and user agent, never a secret', async () => {
  const m = await createMerchant(gw.app);
  const other = await createMerchant(gw.app);
  expect((await gql(gw.url, LoginDocument, { email: m.email, password: 'not the password' }, UA)).errors?.[0]?.extensions?.code).toBe('INVALID_CREDENTIALS');
  const auth = { ...bearer(await login(m)), ...UA };
  expect((await gql(gw.url, ReauthenticateDocument, { password: m.password }, auth)).errors).toBeUndefined();
  const rotated = await gql(gw.url, RotateApiKeyDocument, { environment: 'PRODUCTION' }, auth);
  expect(rotated.errors).toBeUndefined();
  const newKey = rotated.data!.rotateApiKey.apiKey!;
  expect((await gql(gw.url, SetNotificationUrlDocument, { environment: 'PRODUCTION', url: 'https://merchant.example/hook' }, auth)).errors).toBeUndefined();
  expect((await gql(gw.url, SetApiKeyIpAllowlistDocument, { environment: 'PRODUCTION', cidrs: ['203.0.113.0/24'] }, auth)).errors).toBeUndefined();
  // Another merchant's activity never shows in this one's trail.
  await login(other);

  const page = await gql(gw.url, AuditEventsDocument, { first: 50 }, auth);
  expect(page.errors).toBeUndefined();
  const events = page.data!.auditEvents.edges.map((e) => e.node).reverse();
  expect(events.map((e) => e.action)).toEqual([
    'merchant.created',
    'api_key.rotated',
    'api_key.rotated', // the CLI-style creation (fixture)
    'auth.login_failed',
    'auth.login',
    'auth.reauthenticated',
    'api_key.rotated',
    'webhook.notification_url_changed',
    'api_key.allowlist_changed',
  ]);
  expect(page.data!.auditEvents.totalCount).toBe(events.length);
  const [failed, ok] = [events[3]!, events[4]!];
  expect(failed).toMatchObject({ userId: expect.any(String), userAgent: UA['user-agent'], ip: expect.stringMatching(/127\.0\.0\.1/) });
  expect(JSON.parse(failed.after!)).toEqual({ email: m.email });
  expect(ok.userId).toBe(failed.userId);
  const hook = events[7]!;
  expect(hook).toMatchObject({ subject: 'production', userId: ok.userId, userAgent: UA['user-agent'] });
  expect(JSON.parse(hook.before!)).toEqual({ url: null });
  expect(JSON.parse(hook.after!)).toEqual({ url: 'https://merchant.example/hook' });
  expect(JSON.parse(events[8]!.after!)).toEqual({ cidrs: ['203.0.113.0/24'] });
  // Chain positions 1..n, no secret anywhere (the new key, the password).
  expect(events.map((e) => e.chainSeq)).toEqual(events.map((_, i) => i + 1));
  const everything = JSON.stringify(await db().execute('select * from audit_events'));
  expect(everything).not.toContain(newKey);
  expect(everything).not.toContain(m.password);
  expect(everything).not.toContain(m.productionKey);

  // Filters and pages.
  const only = await gql(gw.url, AuditEventsDocument, { filter: { actions: ['api_key.rotated'] }, first: 2 }, auth);
  expect(only.data!.auditEvents.edges.map((e) => e.node.action)).toEqual(['api_key.rotated', 'api_key.rotated']);
  expect(only.data!.auditEvents.pageInfo.hasNextPage).toBe(true);
  const next = await gql(
    gw.url,
    AuditEventsDocument,
    { filter: { actions: ['api_key.rotated'] }, first: 2, after: only.data!.auditEvents.pageInfo.endCursor },
    auth,
  );
  expect(next.data!.auditEvents.edges).toHaveLength(1);
  expect(next.data!.auditEvents.pageInfo.hasNextPage).toBe(false);
  const future = await gql(gw.url, AuditEventsDocument, { filter: { from: new Date(Date.now() + 3_600_000).toISOString() } }, auth);
  expect(future.data!.auditEvents.edges).toHaveLength(0);
  const bad = await gql(gw.url, AuditEventsDocument, { filter: { actions: ['not.an.action'] } }, auth);
  expect(bad.errors?.[0]?.extensions?.code).toBe('VALIDATION_FAILED');
  const badCursor = await gql(gw.url, AuditEventsDocument, { after: 'garbage' }, auth);
  expect(badCursor.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
  // An API key cannot read the trail.
  const byKey = await gql(gw.url, AuditEventsDocument, {}, { 'api-key': m.sandboxKey });
  expect(byKey.errors?.[0]?.extensions?.code).toBeDefined();
  expect(byKey.data?.auditEvents).toBeFalsy();

  // CSV: the same rows, formula-guarded, and the export itself recorded.
  await recordAudit(
    gw.app.orm.em.fork(),
    {
      ...internalContext(gw.app.orm.em.fork()),
      caller: { kind: 'dashboard', userId: ok.userId!, merchantId: m.merchantId, sessionId: 'x', role: 'owner' },
      userAgent: '=HYPERLINK("http://evil")',
    },
    'auth.logout',
  );
  const csv = await http(gw.url, '/api/v2/testnet/merchant/export/audit.csv', { headers: auth });
  expect(csv.status).toBe(200);
  const text = String(csv.body);
  expect(text.split('\n')[0]).toBe('occurred_at,action,user_id,api_key_id,operator,subject,ip,user_agent,before,after,chain_seq,hash,id');
  expect(text).toContain(`"'=HYPERLINK(""http://evil"")"`);
  expect(text).toContain('webhook.notification_url_changed');
  expect(text).not.toContain(other.merchantId);
  const latest = await gql(gw.url, AuditEventsDocument, { first: 1 }, auth);
  expect(latest.data!.auditEvents.edges[0]!.node.action).toBe('export.audit_csv');
  const badCsv = await http(gw.url, '/api/v2/testnet/merchant/export/audit.csv?from=yesterday', { headers: auth });
  expect(badCsv.status).toBe(400);
  expect(badCsv.body).toMatchObject({ status_code: 400, data: { code: 'VALIDATION_FAILED' } });

  expect((await gw.app.audit.verify(gw.app.orm.em.fork())).fault).toBeNull();
});

it('a change that fails records nothing; the record commits with the change', async () => {
  const m = await createMerchant(gw.app);
  const auth = { ...bearer(await login(m)), ...UA };
  await gql(gw.url, ReauthenticateDocument, { password: m.password }, auth);
  const before = (await db().execute<{ n: number }[]>('select count(*)::int as n from audit_events where merchant_id = ?', [m.merchantId]))[0]!.n;
  const refused = await gql(gw.url, SetNotificationUrlDocument, { environment: 'PRODUCTION', url: 'http://plain.example/hook' }, auth);
  expect(refused.errors?.[0]?.extensions?.code).toBe('NOTIFICATION_URL_REJECTED');
  expect((await db().execute<{ n: number }[]>('select count(*)::int as n from audit_events where merchant_id = ?', [m.merchantId]))[0]!.n).toBe(before);
});

it('the application role cannot UPDATE, DELETE or TRUNCATE the trail', async () => {
  const m = await createMerchant(gw.app);
  await expect(db().execute(`update audit_events set action = 'x' where merchant_id = ?`, [m.merchantId])).rejects.toThrow(/append-only: UPDATE refused/);
  await expect(db().execute(`delete from audit_events where merchant_id = ?`, [m.merchantId])).rejects.toThrow(/append-only: DELETE refused/);
  await expect(db().execute(`truncate audit_events`)).rejects.toThrow(/append-only: TRUNCATE refused/);
  expect((await db().execute<{ n: number }[]>('select count(*)::int as n from audit_events where merchant_id = ?', [m.merchantId]))[0]!.n).toBe(3);
});

it('concurrent writers of one merchant extend one chain without forks', async () => {
  const m = await createMerchant(gw.app);
  const source = {
    ...internalContext(gw.app.orm.em.fork()),
    caller: { kind: 'dashboard' as const, userId: m.merchantId, merchantId: m.merchantId, sessionId: 's', role: 'owner' },
  };
  await Promise.all(Array.from({ length: 30 }, (_, i) => recordAudit(gw.app.orm.em.fork(), source, 'auth.logout', { after: { count: i } })));
  const seqs = (await db().execute<{ s: string }[]>('select chain_seq::text as s from audit_events where chain = ? order by chain_seq', [m.merchantId])).map(
    (r) => Number(r.s),
  );
  expect(seqs).toEqual(Array.from({ length: 33 }, (_, i) => i + 1));
  expect(await gw.app.audit.verify(gw.app.orm.em.fork(), { chain: m.merchantId })).toMatchObject({ rows: 33, fault: null });
});

it('verify names the first row edited past the trigger, and a deleted row (a gap)', async () => {
  const m = await createMerchant(gw.app);
  const rows = await db().execute<{ id: string }[]>('select id::text from audit_events where chain = ? order by chain_seq', [m.merchantId]);
  expect(rows).toHaveLength(3);
  await asSuperuserWithoutTriggers(`update audit_events set after = '{"id":"someone-else"}'::jsonb where id = $1`, [rows[1]!.id]);
  expect((await gw.app.audit.verify(gw.app.orm.em.fork(), { chain: m.merchantId })).fault).toEqual({
    id: rows[1]!.id,
    chain: m.merchantId,
    chainSeq: 2,
    reason: expect.stringMatching(/edited/),
  });

  const n = await createMerchant(gw.app);
  const nRows = await db().execute<{ id: string }[]>('select id::text from audit_events where chain = ? order by chain_seq', [n.merchantId]);
  await asSuperuserWithoutTriggers(`delete from audit_events where id = $1`, [nRows[1]!.id]);
  expect((await gw.app.audit.verify(gw.app.orm.em.fork(), { chain: n.merchantId })).fault).toEqual({
    id: nRows[2]!.id,
    chain: n.merchantId,
    chainSeq: 3,
    reason: expect.stringMatching(/gap/),
  });
});

it('records team changes and merchant switches on the merchant concerned; a failed login on every merchant of the account; finance cannot read the trail', async () => {
  const a = await createMerchant(gw.app);
  const b = await createMerchant(gw.app);
  const owner = bearer(await freshLogin(gw.url, b));
  const invite = async (email: string, role: 'FINANCE' | 'DEVELOPER') => {
    const r = await gql(gw.url, InviteTeamMemberDocument, { email, role }, owner);
    expect(r.errors).toBeUndefined();
    return { id: r.data!.inviteTeamMember.invite.id, token: /#token=(.+)$/.exec(r.data!.inviteTeamMember.inviteUrl!)![1]! };
  };
  const revoked = await invite(`gone-${b.merchantId}@team.test`, 'DEVELOPER');
  expect((await gql(gw.url, RevokeTeamInviteDocument, { inviteId: revoked.id }, owner)).errors).toBeUndefined();
  const { token } = await invite(a.email, 'FINANCE');
  expect((await gql(gw.url, AcceptTeamInviteDocument, { token, password: a.password })).errors).toBeUndefined();
  const underA = bearer(await login(a));
  const switched = await gql(gw.url, SwitchMerchantDocument, { merchantId: b.merchantId }, underA);
  expect(switched.errors).toBeUndefined();
  // Finance in b: the trail is owners' and admins' (permission audit.read).
  expect((await gql(gw.url, AuditEventsDocument, { first: 5 }, bearer(switched.data!.switchMerchant.token))).errors?.[0]?.extensions).toMatchObject({
    code: 'FORBIDDEN',
    permission: 'audit.read',
  });
  const [{ id: aUser }] = await db().execute<{ id: string }[]>(`select id from dashboard_users where email = ?`, [a.email]);
  expect((await gql(gw.url, ChangeTeamMemberRoleDocument, { userId: aUser!, role: 'DEVELOPER' }, owner)).errors).toBeUndefined();
  expect((await gql(gw.url, LoginDocument, { email: a.email, password: 'wrong password!' }, UA)).errors?.[0]?.extensions?.code).toBe('INVALID_CREDENTIALS');
  expect((await gql(gw.url, RemoveTeamMemberDocument, { userId: aUser! }, owner)).errors).toBeUndefined();

  const trail = async (merchantId: string) =>
    await db().execute<{ action: string; user_id: string | null; after: Record<string, unknown> | null; before: Record<string, unknown> | null }[]>(
      `select action, user_id, after, before from audit_events where merchant_id = ? and action like any (array['team.%', 'auth.merchant_switched', 'auth.login_failed']) order by id`,
      [merchantId],
    );
  const inB = await trail(b.merchantId);
  expect(inB.map((e) => e.action)).toEqual([
    'team.invited',
    'team.invite_revoked',
    'team.invited',
    'team.invite_accepted',
    'auth.merchant_switched',
    'team.role_changed',
    'auth.login_failed',
    'team.member_removed',
  ]);
  expect(inB[3]).toMatchObject({ user_id: aUser, after: { email: a.email, role: 'finance', accountCreated: false } });
  expect(inB[4]).toMatchObject({ user_id: aUser, after: { fromMerchantId: a.merchantId } });
  expect(inB[5]).toMatchObject({ before: { role: 'finance' }, after: { role: 'developer' } });
  expect(inB[7]).toMatchObject({ before: { userId: aUser, role: 'developer' } });
  // The failed login is on a's own merchant too (the account belonged to both then).
  expect((await trail(a.merchantId)).map((e) => e.action)).toEqual(['auth.login_failed']);
  expect(JSON.stringify(inB)).not.toContain(token);
});
