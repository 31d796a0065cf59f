/**
 * The second factor over GraphQL and the legacy REST login: TOTP enrolment (sealed secret,
 * otpauth URI and QR, confirmed by a first code), recovery codes, the login's second step and each of
 * its refusals (wrong code, reused code, used recovery code, expired or spent challenge, too many
 * wrong answers), re-authentication that needs the second factor, and the merchant's policy.
 * Passkeys are tested in a real Chromium (test/e2e/passkey-browser.test.ts).
 */
import jsQR from 'jsqr';
import { PNG } from 'pngjs';
import {
  ApiKeysDocument,
  BeginTotpEnrolmentDocument,
  CompleteLoginDocument,
  ConfirmTotpEnrolmentDocument,
  DisableTotpDocument,
  LoginDocument,
  LoginPasskeyOptionsDocument,
  MeDocument,
  ReauthenticateDocument,
  ReauthenticateWithSecondFactorDocument,
  RegenerateRecoveryCodesDocument,
  RotateApiKeyDocument,
  SecondFactorStatusDocument,
  SetSecondFactorPolicyDocument,
} from '../generated/graphql';
import { internalContext } from '../../src/common/context';
import { DashboardUser } from '../../src/modules/merchants/dashboard-user.entity';
import { addMember, createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { bearer, gql } from '../support/graphql';
import { http } from '../support/http';
import { enrolTotp, forgetSpentStep, totpNow } from '../support/second-factor';

let gw: TestGateway;
beforeAll(async () => (gw = await startTestGateway({ ROLE: 'api' })));
afterAll(() => gw?.close());

const sql = <T>(q: string, params: unknown[] = []) => gw.app.orm.em.fork().getConnection().execute<T[]>(q, params);
const code = (r: { errors?: { extensions?: { code?: string } }[] }) => r.errors?.[0]?.extensions?.code;

/** Password login of a 2FA user: the SECOND_FACTOR_REQUIRED error's challenge. */
async function passwordStep(account: { email: string; password: string }) {
  const r = await gql(gw.url, LoginDocument, { email: account.email, password: account.password });
  expect(r.data).toBeNull();
  expect(code(r)).toBe('SECOND_FACTOR_REQUIRED');
  const ext = r.errors![0]!.extensions as { challengeToken: string; challengeExpiresAt: string; methods: string[] };
  return ext;
}

describe('TOTP enrolment', () => {
  it('needs a fresh session; the secret is sealed at rest; the QR holds the otpauth URI; a first code activates it and returns 10 recovery codes', async () => {
    const m = await createMerchant(gw.app);
    const token = (await gql(gw.url, LoginDocument, { email: m.email, password: m.password })).data!.login.token;
    // A stolen access token alone cannot enrol a factor the owner does not know about.
    expect(code(await gql(gw.url, BeginTotpEnrolmentDocument, {}, bearer(token)))).toBe('REAUTHENTICATION_REQUIRED');
    expect((await gql(gw.url, ReauthenticateDocument, { password: m.password }, bearer(token))).errors).toBeUndefined();

    const begun = (await gql(gw.url, BeginTotpEnrolmentDocument, {}, bearer(token))).data!.beginTotpEnrolment;
    expect(begun.secret).toMatch(/^[A-Z2-7]{32}$/);
    const uri = new URL(begun.otpauthUri);
    expect(uri.protocol).toBe('otpauth:');
    expect(uri.host).toBe('totp');
    expect(uri.searchParams.get('secret')).toBe(begun.secret);
    expect(decodeURIComponent(uri.pathname)).toContain(m.email);
    const png = PNG.sync.read(Buffer.from(begun.qrCodeDataUrl.replace(/^data:image\/png;base64,/, ''), 'base64'));
    expect(jsQR(new Uint8ClampedArray(png.data), png.width, png.height)?.data).toBe(begun.otpauthUri);

    const [row] = await sql<{ secret_ciphertext: string; confirmed_at: Date | null }>(
      `select secret_ciphertext, confirmed_at from user_totp t join dashboard_users u on u.id = t.user_id where u.email = ?`,
      [m.email],
    );
    expect(row!.secret_ciphertext).toMatch(/^v2\./);
    expect(row!.secret_ciphertext).not.toContain(begun.secret);
    expect(row!.confirmed_at).toBeNull();
    // Pending: login is still password-only.
    expect((await gql(gw.url, LoginDocument, { email: m.email, password: m.password })).data?.login.token).toBeTruthy();
    const pending = await gql(gw.url, SecondFactorStatusDocument, {}, bearer(token));
    expect(pending.errors).toBeUndefined();
    expect(pending.data!.secondFactorStatus).toMatchObject({ totpEnabled: false, totpPending: true, recoveryCodesRemaining: 0 });

    const wrong = await gql(gw.url, ConfirmTotpEnrolmentDocument, { code: '000000' === (await totpNow(begun.secret)) ? '111111' : '000000' }, bearer(token));
    expect(code(wrong)).toBe('INVALID_SECOND_FACTOR');
    const ok = await gql(gw.url, ConfirmTotpEnrolmentDocument, { code: await totpNow(begun.secret) }, bearer(token));
    expect(ok.errors).toBeUndefined();
    const codes = ok.data!.confirmTotpEnrolment.recoveryCodes!;
    expect(codes).toHaveLength(10);
    expect(new Set(codes).size).toBe(10);
    for (const c of codes) expect(c).toMatch(/^[a-z0-9]{4}-[a-z0-9]{4}-[a-z0-9]{4}-[a-z0-9]{4}$/);
    // Stored hashed, never in plaintext.
    const stored = await sql<{ code_hash: string }>(
      `select code_hash from user_recovery_codes r join dashboard_users u on u.id = r.user_id where u.email = ?`,
      [m.email],
    );
    expect(stored).toHaveLength(10);
    for (const s of stored) for (const c of codes) expect(s.code_hash).not.toContain(c.replace(/-/g, ''));
    expect((await gql(gw.url, SecondFactorStatusDocument, {}, bearer(token))).data!.secondFactorStatus).toMatchObject({
      totpEnabled: true,
      totpPending: false,
      recoveryCodesRemaining: 10,
    });
    // Enrolled once: another enrolment is refused until it is turned off.
    expect(code(await gql(gw.url, BeginTotpEnrolmentDocument, {}, bearer(token)))).toBe('SECOND_FACTOR_STATE');
  });
});

describe('login with a second step', () => {
  it('password → challenge; a TOTP code completes it; the same code is refused the second time', async () => {
    const m = await createMerchant(gw.app);
    const { secret } = await enrolTotp(gw.url, m);
    await forgetSpentStep(gw.app, m.email); // enrolment spent the current code
    const first = await passwordStep(m);
    expect(first.methods.sort()).toEqual(['RECOVERY_CODE', 'TOTP']);
    expect(Date.parse(first.challengeExpiresAt)).toBeGreaterThan(Date.now());
    // No session was opened by the password alone.
    expect(first).not.toHaveProperty('token');

    const wrong = await gql(gw.url, CompleteLoginDocument, { challengeToken: first.challengeToken, secondFactor: { totpCode: '12345' } });
    expect(code(wrong)).toBe('INVALID_SECOND_FACTOR');
    const current = await totpNow(secret);
    const done = await gql(gw.url, CompleteLoginDocument, { challengeToken: first.challengeToken, secondFactor: { totpCode: current } });
    expect(done.errors).toBeUndefined();
    const me = await gql(gw.url, MeDocument, {}, bearer(done.data!.completeLogin.token));
    expect(me.data?.me.email).toBe(m.email);

    // The spent challenge cannot open a second session.
    const again = await gql(gw.url, CompleteLoginDocument, { challengeToken: first.challengeToken, secondFactor: { totpCode: current } });
    expect(code(again)).toBe('CHALLENGE_EXPIRED');
    // Someone who saw the code replays it on a new challenge: refused as reused.
    const second = await passwordStep(m);
    const replay = await gql(gw.url, CompleteLoginDocument, { challengeToken: second.challengeToken, secondFactor: { totpCode: current } });
    expect(code(replay)).toBe('SECOND_FACTOR_REUSED');
  });

  it('a recovery code works once; exactly one of the answers must be given', async () => {
    const m = await createMerchant(gw.app);
    const { recoveryCodes, secret } = await enrolTotp(gw.url, m);
    const c = await passwordStep(m);
    const both = await gql(gw.url, CompleteLoginDocument, {
      challengeToken: c.challengeToken,
      secondFactor: { totpCode: await totpNow(secret), recoveryCode: recoveryCodes[0]! },
    });
    expect(code(both)).toBe('VALIDATION_FAILED');
    const none = await gql(gw.url, CompleteLoginDocument, { challengeToken: c.challengeToken, secondFactor: {} });
    expect(code(none)).toBe('VALIDATION_FAILED');
    const wrong = await gql(gw.url, CompleteLoginDocument, { challengeToken: c.challengeToken, secondFactor: { recoveryCode: 'aaaa-bbbb-cccc-dddd' } });
    expect(code(wrong)).toBe('INVALID_SECOND_FACTOR');
    // Upper case and spaces are forgiven (typed from paper).
    const typed = recoveryCodes[0]!.toUpperCase().replace(/-/g, ' ');
    const ok = await gql(gw.url, CompleteLoginDocument, { challengeToken: c.challengeToken, secondFactor: { recoveryCode: typed } });
    expect(ok.errors).toBeUndefined();
    expect(ok.data!.completeLogin.token).toBeTruthy();

    const next = await passwordStep(m);
    const used = await gql(gw.url, CompleteLoginDocument, { challengeToken: next.challengeToken, secondFactor: { recoveryCode: recoveryCodes[0]! } });
    expect(code(used)).toBe('SECOND_FACTOR_REUSED');
    const other = await gql(gw.url, CompleteLoginDocument, { challengeToken: next.challengeToken, secondFactor: { recoveryCode: recoveryCodes[1]! } });
    expect(other.errors).toBeUndefined();
  });

  it('an expired challenge, an unknown one and one with too many wrong answers are refused even with the right code', async () => {
    const m = await createMerchant(gw.app);
    const { secret } = await enrolTotp(gw.url, m);
    await forgetSpentStep(gw.app, m.email);

    const expired = await passwordStep(m);
    // Its five minutes pass (moved back in the database rather than waited for).
    await sql(
      `update auth_challenges set expires_at = now() - interval '1 second' where purpose = 'login' and user_id = (select id from dashboard_users where email = ?)`,
      [m.email],
    );
    expect(code(await gql(gw.url, CompleteLoginDocument, { challengeToken: expired.challengeToken, secondFactor: { totpCode: await totpNow(secret) } }))).toBe(
      'CHALLENGE_EXPIRED',
    );
    expect(code(await gql(gw.url, CompleteLoginDocument, { challengeToken: 'made-up-token', secondFactor: { totpCode: await totpNow(secret) } }))).toBe(
      'CHALLENGE_EXPIRED',
    );
    expect(code(await gql(gw.url, LoginPasskeyOptionsDocument, { challengeToken: expired.challengeToken }))).toBe('CHALLENGE_EXPIRED');

    const guessed = await passwordStep(m);
    const right = await totpNow(secret);
    const wrongCode = right === '999999' ? '999998' : '999999';
    for (let i = 0; i < 5; i++) {
      expect(code(await gql(gw.url, CompleteLoginDocument, { challengeToken: guessed.challengeToken, secondFactor: { totpCode: wrongCode } }))).toBe(
        'INVALID_SECOND_FACTOR',
      );
    }
    const sixth = await gql(gw.url, CompleteLoginDocument, { challengeToken: guessed.challengeToken, secondFactor: { totpCode: right } });
    expect(code(sixth)).toBe('CHALLENGE_EXPIRED');
    expect(sixth.errors![0]!.message).toMatch(/Too many wrong answers/);
    // Nothing was opened by any of it: the account has only the enrolment's session.
    const [n] = await sql<{ n: string }>(`select count(*) as n from sessions s join dashboard_users u on u.id = s.user_id where u.email = ?`, [m.email]);
    expect(Number(n!.n)).toBe(1);
  });

  it('the legacy REST login has the same second step', async () => {
    const m = await createMerchant(gw.app);
    const { secret } = await enrolTotp(gw.url, m);
    await forgetSpentStep(gw.app, m.email);
    const first = await http(gw.url, '/api/v2/auth/login', { body: { email: m.email, password: m.password, user_type: 'merchant' } });
    expect(first.status).toBe(403);
    expect(first.body).toMatchObject({ status_code: 403, data: { code: 'SECOND_FACTOR_REQUIRED', methods: ['totp', 'recovery_code'] } });
    expect(first.body.data.token).toBeUndefined();
    const challenge = first.body.data.challenge_token as string;
    expect(first.body.data.challenge_expired_at).toBeGreaterThan(Date.now() / 1000);

    const wrong = await http(gw.url, '/api/v2/auth/login/second-factor', {
      body: { challenge_token: challenge, totp_code: '000000' === (await totpNow(secret)) ? '111111' : '000000' },
    });
    expect(wrong.body).toMatchObject({ status_code: 403, data: { code: 'INVALID_SECOND_FACTOR' } });
    const bad = await http(gw.url, '/api/v2/auth/login/second-factor', { body: { totp_code: '123456' } });
    expect(bad.body).toMatchObject({ status_code: 400, data: { code: 'VALIDATION_FAILED' } });
    const ok = await http(gw.url, '/api/v2/auth/login/second-factor', { body: { challenge_token: challenge, totp_code: await totpNow(secret) } });
    expect(ok.status).toBe(200);
    const me = await http(gw.url, '/api/v2/auth/me', { headers: bearer(ok.body.data.token) });
    expect(me.body).toMatchObject({ status_code: 200, data: { user: { email: m.email } } });
    const spent = await http(gw.url, '/api/v2/auth/login/second-factor', { body: { challenge_token: challenge, totp_code: await totpNow(secret) } });
    expect(spent.body).toMatchObject({ status_code: 401, data: { code: 'CHALLENGE_EXPIRED' } });
  });
});

describe('re-authentication with a second factor', () => {
  it('the password alone no longer makes the session fresh; password and code do; turning 2FA off and regenerating codes need it', async () => {
    const m = await createMerchant(gw.app);
    const { secret, recoveryCodes } = await enrolTotp(gw.url, m);
    await forgetSpentStep(gw.app, m.email);
    const c = await passwordStep(m);
    const token = (await gql(gw.url, CompleteLoginDocument, { challengeToken: c.challengeToken, secondFactor: { totpCode: await totpNow(secret) } })).data!
      .completeLogin.token;
    const auth = bearer(token);

    // A fresh login is not a re-authentication: sensitive operations still ask.
    expect(code(await gql(gw.url, RotateApiKeyDocument, { environment: 'SANDBOX' }, auth))).toBe('REAUTHENTICATION_REQUIRED');
    expect(code(await gql(gw.url, DisableTotpDocument, {}, auth))).toBe('REAUTHENTICATION_REQUIRED');
    expect(code(await gql(gw.url, RegenerateRecoveryCodesDocument, {}, auth))).toBe('REAUTHENTICATION_REQUIRED');

    // Password only: SECOND_FACTOR_REQUIRED, and nothing becomes fresh.
    expect(code(await gql(gw.url, ReauthenticateDocument, { password: m.password }, auth))).toBe('SECOND_FACTOR_REQUIRED');
    expect(code(await gql(gw.url, RotateApiKeyDocument, { environment: 'SANDBOX' }, auth))).toBe('REAUTHENTICATION_REQUIRED');
    const restPasswordOnly = await http(gw.url, '/api/v2/auth/reauthenticate', { body: { password: m.password }, headers: auth });
    expect(restPasswordOnly.body).toMatchObject({ status_code: 403, data: { code: 'SECOND_FACTOR_REQUIRED' } });
    // Wrong password with a right code: INVALID_PASSWORD (the code is not spent).
    expect(
      code(await gql(gw.url, ReauthenticateWithSecondFactorDocument, { password: 'not it at all', secondFactor: { totpCode: await totpNow(secret) } }, auth)),
    ).toBe('INVALID_PASSWORD');
    // The login's code again: reused.
    await forgetSpentStep(gw.app, m.email);
    const now = await totpNow(secret);
    expect((await gql(gw.url, ReauthenticateWithSecondFactorDocument, { password: m.password, secondFactor: { totpCode: now } }, auth)).errors).toBeUndefined();
    expect(code(await gql(gw.url, ReauthenticateWithSecondFactorDocument, { password: m.password, secondFactor: { totpCode: now } }, auth))).toBe(
      'SECOND_FACTOR_REUSED',
    );

    // Fresh with both: the key rotates; new recovery codes replace the old ones.
    expect((await gql(gw.url, RotateApiKeyDocument, { environment: 'SANDBOX' }, auth)).errors).toBeUndefined();
    const regenerated = await gql(gw.url, RegenerateRecoveryCodesDocument, {}, auth);
    expect(regenerated.errors).toBeUndefined();
    const fresh = regenerated.data!.regenerateRecoveryCodes;
    expect(fresh).toHaveLength(10);
    const c2 = await passwordStep(m);
    expect(code(await gql(gw.url, CompleteLoginDocument, { challengeToken: c2.challengeToken, secondFactor: { recoveryCode: recoveryCodes[3]! } }))).toBe(
      'INVALID_SECOND_FACTOR',
    );

    // REST re-authentication with a recovery code.
    const restOk = await http(gw.url, '/api/v2/auth/reauthenticate', { body: { password: m.password, recovery_code: fresh[0] }, headers: auth });
    expect(restOk.body).toMatchObject({ status_code: 200, data: { second_factor: 'recovery_code' } });

    // Turning it off: then login is password-only again and the recovery codes are gone.
    expect((await gql(gw.url, DisableTotpDocument, {}, auth)).errors).toBeUndefined();
    expect((await gql(gw.url, LoginDocument, { email: m.email, password: m.password })).data?.login.token).toBeTruthy();
    expect((await gql(gw.url, SecondFactorStatusDocument, {}, auth)).data!.secondFactorStatus).toMatchObject({ totpEnabled: false, recoveryCodesRemaining: 0 });
  });

  it('a password-only re-authentication from before the factor was enrolled stops counting once it is', async () => {
    const m = await createMerchant(gw.app);
    const other = (await gql(gw.url, LoginDocument, { email: m.email, password: m.password })).data!.login.token;
    expect((await gql(gw.url, ReauthenticateDocument, { password: m.password }, bearer(other))).errors).toBeUndefined();
    await enrolTotp(gw.url, m); // in another session
    expect(code(await gql(gw.url, RotateApiKeyDocument, { environment: 'SANDBOX' }, bearer(other)))).toBe('REAUTHENTICATION_REQUIRED');
  });
});

describe('the merchant policy', () => {
  it('a user without a second factor may only enrol; the last factor cannot be removed while it applies', async () => {
    const owner = await createMerchant(gw.app);
    const { secret } = await enrolTotp(gw.url, owner);
    const ownerToken = (
      await gql(gw.url, LoginDocument, { email: owner.email, password: owner.password }).then(async (r) => {
        const ext = r.errors![0]!.extensions as { challengeToken: string };
        await forgetSpentStep(gw.app, owner.email);
        return gql(gw.url, CompleteLoginDocument, { challengeToken: ext.challengeToken, secondFactor: { totpCode: await totpNow(secret) } });
      })
    ).data!.completeLogin.token;
    const ownerAuth = bearer(ownerToken);
    expect(code(await gql(gw.url, SetSecondFactorPolicyDocument, { required: true }, ownerAuth))).toBe('REAUTHENTICATION_REQUIRED');
    await forgetSpentStep(gw.app, owner.email);
    expect(
      (await gql(gw.url, ReauthenticateWithSecondFactorDocument, { password: owner.password, secondFactor: { totpCode: await totpNow(secret) } }, ownerAuth))
        .errors,
    ).toBeUndefined();

    // A colleague without a second factor (a viewer member, set up directly: invitations are tested in teams.test.ts).
    const colleague = await addMember(gw.app, owner.merchantId, 'viewer');
    // Someone without a factor cannot switch the policy on for others; the owner (with one) can.
    expect((await gql(gw.url, SetSecondFactorPolicyDocument, { required: true }, ownerAuth)).data?.setSecondFactorPolicy).toBe(true);

    const viewerToken = (await gql(gw.url, LoginDocument, { email: colleague.email, password: colleague.password })).data!.login.token;
    const viewer = bearer(viewerToken);
    expect((await gql(gw.url, MeDocument, {}, viewer)).data?.me.email).toBe(colleague.email);
    expect((await gql(gw.url, SecondFactorStatusDocument, {}, viewer)).data!.secondFactorStatus).toMatchObject({
      requiredByMerchant: true,
      enrolmentRequired: true,
    });
    expect(code(await gql(gw.url, ApiKeysDocument, {}, viewer))).toBe('SECOND_FACTOR_ENROLMENT_REQUIRED');
    const rest = await http(gw.url, '/api/v2/testnet/merchant/payment-link', { headers: viewer });
    expect(rest.body).toMatchObject({ status_code: 403, data: { code: 'SECOND_FACTOR_ENROLMENT_REQUIRED' } });

    // Enrolling (a viewer may: it is their own sign-in) lifts it at once.
    const enrolled = await enrolTotp(gw.url, colleague);
    expect((await gql(gw.url, ApiKeysDocument, {}, bearer(enrolled.token))).errors).toBeUndefined();
    expect((await gql(gw.url, ApiKeysDocument, {}, viewer)).errors).toBeUndefined();

    // While the policy applies the owner's only factor cannot be turned off.
    expect(code(await gql(gw.url, DisableTotpDocument, {}, ownerAuth))).toBe('SECOND_FACTOR_REQUIRED_BY_POLICY');
    expect((await gql(gw.url, SecondFactorStatusDocument, {}, ownerAuth)).data!.secondFactorStatus.totpEnabled).toBe(true);

    // A user without a factor cannot turn the policy on (they would lock everybody into enrolment first).
    const m2 = await createMerchant(gw.app);
    const t2 = (await gql(gw.url, LoginDocument, { email: m2.email, password: m2.password })).data!.login.token;
    await gql(gw.url, ReauthenticateDocument, { password: m2.password }, bearer(t2));
    expect(code(await gql(gw.url, SetSecondFactorPolicyDocument, { required: true }, bearer(t2)))).toBe('SECOND_FACTOR_STATE');
    expect(
      await gw.app.secondFactors.hasFactor(
        internalContext(gw.app.orm.em.fork()).em,
        (await gw.app.orm.em.fork().findOneOrFail(DashboardUser, { email: m2.email })).id,
      ),
    ).toBe(false);
  });
});
