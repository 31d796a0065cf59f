/**
 * Teams with a second factor: an owner with TOTP invites a finance member
 * over GraphQL — the team change needs the password and the TOTP code on that session — the member
 * accepts by the mailed link (a real SMTP server), exports orders as CSV and cannot rotate the API
 * key; the owner sees each step in the audit trail. The merchant's "second factor required" policy
 * applies to the merchant a session acts for.
 */
import {
  AcceptTeamInviteDocument,
  AuditEventsDocument,
  CompleteLoginDocument,
  InviteTeamMemberDocument,
  LoginDocument,
  MeDocument,
  ReauthenticateDocument,
  ReauthenticateWithSecondFactorDocument,
  RotateApiKeyDocument,
  SetSecondFactorPolicyDocument,
  SwitchMerchantDocument,
} from '../generated/graphql';
import { addMember, createMerchant } from '../support/fixtures';
import type { TestGateway } from '../support/gateway';
import { bearer, gql } from '../support/graphql';
import { http } from '../support/http';
import { eventually } from '../support/order-watch';
import { enrolTotp, forgetSpentStep, totpNow } from '../support/second-factor';
import type { TestSmtp } from '../support/smtp';
import { errorCode, startTeamGateway, stopTeamGateway } from '../support/teams';

jest.setTimeout(120_000);

const T = '/api/v2/testnet';
let smtp: TestSmtp;
let gw: TestGateway;

beforeAll(async () => {
  ({ gw, smtp } = await startTeamGateway());
});
afterAll(() => stopTeamGateway({ gw, smtp }));

const code = errorCode;
const sql = <R = Record<string, unknown>>(q: string, params: unknown[] = []) => gw.app.orm.em.fork().getConnection().execute<R[]>(q, params);

async function order(m: { merchantId: string; sandboxKey: string }, orderNo: string) {
  const r = await http(gw.url, `${T}/merchant/fiat/order`, {
    body: { merchant_id: m.merchantId, order_no: orderNo, amount: '50000' },
    headers: { 'api-key': m.sandboxKey },
  });
  expect(r.status).toBe(201);
}

/** The token of the newest invite link mailed to `to`. */
async function mailedToken(to: string): Promise<string> {
  await eventually(async () => smtp.mails.some((m) => m.to.includes(to)), `the invite mail to ${to}`);
  const text = smtp.mails.filter((m) => m.to.includes(to)).at(-1)!.parsed.text ?? '';
  const token = text.match(/https:\/\/dashboard\.gateway\.test\/invite#token=([A-Za-z0-9_-]+)/)?.[1];
  if (!token) throw new Error(`no invite link in: ${text}`);
  return token;
}

const exportCsv = (token: string) => http(gw.url, `${T}/merchant/export/orders.csv`, { headers: bearer(token) });

describe('an owner with TOTP builds a team', () => {
  it('invites a finance member only with password and TOTP; finance exports CSV but cannot rotate the API key', async () => {
    const m = await createMerchant(gw.app);
    await order(m, 'TEAM-2FA-1');
    const { secret } = await enrolTotp(gw.url, m);

    // Sign-in is two steps now.
    const first = await gql(gw.url, LoginDocument, { email: m.email, password: m.password });
    expect(code(first)).toBe('SECOND_FACTOR_REQUIRED');
    const challengeToken = (first.errors![0]!.extensions as { challengeToken: string }).challengeToken;
    await forgetSpentStep(gw.app, m.email);
    const done = await gql(gw.url, CompleteLoginDocument, { challengeToken, secondFactor: { totpCode: await totpNow(secret) } });
    expect(done.errors).toBeUndefined();
    const owner = bearer(done.data!.completeLogin.token);

    // A team change needs a fresh session, and the password alone does not make it fresh.
    const email = `finance-${Date.now()}@team-2fa.test`;
    expect(code(await gql(gw.url, InviteTeamMemberDocument, { email, role: 'FINANCE' }, owner))).toBe('REAUTHENTICATION_REQUIRED');
    expect(code(await gql(gw.url, ReauthenticateDocument, { password: m.password }, owner))).toBe('SECOND_FACTOR_REQUIRED');
    expect(code(await gql(gw.url, InviteTeamMemberDocument, { email, role: 'FINANCE' }, owner))).toBe('REAUTHENTICATION_REQUIRED');
    expect(await sql(`select 1 from team_invites where email = ?`, [email])).toEqual([]);
    expect(smtp.mails.some((mail) => mail.to.includes(email))).toBe(false);

    // Password and TOTP code: the invite goes out.
    await forgetSpentStep(gw.app, m.email);
    expect(
      (await gql(gw.url, ReauthenticateWithSecondFactorDocument, { password: m.password, secondFactor: { totpCode: await totpNow(secret) } }, owner)).errors,
    ).toBeUndefined();
    const invited = await gql(gw.url, InviteTeamMemberDocument, { email, role: 'FINANCE' }, owner);
    expect(invited.errors).toBeUndefined();
    expect(invited.data!.inviteTeamMember.invite).toMatchObject({ email, role: 'FINANCE', status: 'PENDING' });

    // The finance user accepts the mailed link over GraphQL and signs in (no factor of their own; no policy).
    const accepted = await gql(gw.url, AcceptTeamInviteDocument, { token: await mailedToken(email), password: 'finance password 2fa' });
    expect(accepted.errors).toBeUndefined();
    expect(accepted.data!.acceptTeamInvite).toMatchObject({ merchantId: m.merchantId, email, role: 'FINANCE', accountCreated: true });
    const finToken = (await gql(gw.url, LoginDocument, { email, password: 'finance password 2fa' })).data!.login.token;
    const fin = bearer(finToken);
    expect((await gql(gw.url, MeDocument, {}, fin)).data!.me).toMatchObject({ email, role: 'finance', merchant: { id: m.merchantId } });

    const csv = await exportCsv(finToken);
    expect(csv.status).toBe(200);
    expect(csv.headers.get('content-type')).toMatch(/^text\/csv/);
    expect(csv.text).toContain('TEAM-2FA-1');

    // Even freshly re-authenticated, finance cannot rotate the API key; the old key keeps working.
    expect((await gql(gw.url, ReauthenticateDocument, { password: 'finance password 2fa' }, fin)).errors).toBeUndefined();
    const rotate = await gql(gw.url, RotateApiKeyDocument, { environment: 'PRODUCTION' }, fin);
    expect(rotate.errors?.[0]?.extensions).toMatchObject({ code: 'FORBIDDEN', permission: 'apiKeys.manage', role: 'finance' });
    expect((await http(gw.url, '/api/v2/mainnet/merchant/me', { headers: { 'api-key': m.productionKey } })).status).toBe(200);

    // The owner sees each of those steps in the audit trail, in order, with who did it; the refused
    // rotation changed nothing, so it recorded nothing.
    const trail = await gql(gw.url, AuditEventsDocument, { first: 100 }, owner);
    expect(trail.errors).toBeUndefined();
    const rows = trail.data!.auditEvents.edges.map((e) => e.node).sort((x, y) => x.chainSeq - y.chainSeq);
    const steps = ['second_factor.totp_enabled', 'auth.login', 'auth.reauthenticated', 'team.invited', 'team.invite_accepted', 'export.orders_csv'];
    let at = -1;
    for (const step of steps) {
      const next = rows.findIndex((r, i) => i > at && r.action === step);
      expect([step, next > at]).toEqual([step, true]);
      at = next;
    }
    const joined = rows.find((r) => r.action === 'team.invite_accepted')!;
    const exported = rows.find((r) => r.action === 'export.orders_csv')!;
    expect(exported.userId).toBe(joined.userId); // the finance member, not the owner
    expect(rows.filter((r) => r.action === 'api_key.rotated' && r.userId === joined.userId)).toEqual([]);
  });

  it("the merchant's policy binds the sessions acting for it, not the member's sessions for another merchant", async () => {
    const a = await createMerchant(gw.app);
    const b = await createMerchant(gw.app);
    await order(a, 'POLICY-A-1');
    await order(b, 'POLICY-B-1');
    // The member joins A first (login lands there), then B.
    const member = await addMember(gw.app, a.merchantId, 'finance');
    await addMember(gw.app, b.merchantId, 'finance', member);

    // A's owner (with a factor) requires one from everybody in A.
    const { token: ownerToken, secret } = await enrolTotp(gw.url, a);
    await forgetSpentStep(gw.app, a.email);
    expect(
      (
        await gql(
          gw.url,
          ReauthenticateWithSecondFactorDocument,
          { password: a.password, secondFactor: { totpCode: await totpNow(secret) } },
          bearer(ownerToken),
        )
      ).errors,
    ).toBeUndefined();
    expect((await gql(gw.url, SetSecondFactorPolicyDocument, { required: true }, bearer(ownerToken))).data?.setSecondFactorPolicy).toBe(true);

    // Login acts for A (the oldest membership): only enrolment, who-am-I and switching are open.
    const underA = (await gql(gw.url, LoginDocument, { email: member.email, password: member.password })).data!.login.token;
    const csvA = await exportCsv(underA);
    expect(csvA.status).toBe(403);
    expect(csvA.body).toMatchObject({ status_code: 403, data: { code: 'SECOND_FACTOR_ENROLMENT_REQUIRED' } });
    expect((await gql(gw.url, MeDocument, {}, bearer(underA))).data!.me).toMatchObject({ email: member.email, merchant: { id: a.merchantId } });

    // Switching to B (no policy) gives a session that works; the A session stays restricted.
    const switched = await gql(gw.url, SwitchMerchantDocument, { merchantId: b.merchantId }, bearer(underA));
    expect(switched.errors).toBeUndefined();
    const csvB = await exportCsv(switched.data!.switchMerchant.token);
    expect(csvB.status).toBe(200);
    expect(csvB.text).toContain('POLICY-B-1');
    expect(csvB.text).not.toContain('POLICY-A-1');
    expect((await exportCsv(underA)).status).toBe(403);

    // Switching back to A lands under A's policy again.
    const back = await gql(gw.url, SwitchMerchantDocument, { merchantId: a.merchantId }, bearer(switched.data!.switchMerchant.token));
    expect(back.errors).toBeUndefined();
    expect((await exportCsv(back.data!.switchMerchant.token)).body).toMatchObject({ status_code: 403, data: { code: 'SECOND_FACTOR_ENROLMENT_REQUIRED' } });
  });
});
