/**
 * Passkeys as a second factor, in a real Chromium with a CDP virtual authenticator (WebAuthn.enable,
 * WebAuthn.addVirtualAuthenticator): the page is one of the gateway's own (its origin is the relying
 * party's: PUBLIC_BASE_URL), the browser runs navigator.credentials.create/get with the options the
 * GraphQL API gave, and the credential goes back for verification — registration, the login's second
 * step, re-authentication, removal; and the refusals (a replayed assertion, another origin's answer,
 * removal without a fresh session).
 *
 * WebAuthn refuses IP addresses as relying-party ids, so the gateway runs as http://localhost:<port>
 * (a secure context) with PUBLIC_BASE_URL saying so.
 */
import { createServer } from 'node:net';
import type { Browser, CDPSession, Page } from 'playwright-core';
import {
  CompleteLoginDocument,
  LoginDocument,
  LoginPasskeyOptionsDocument,
  MeDocument,
  PasskeyRegistrationOptionsDocument,
  PasskeysDocument,
  ReauthenticateDocument,
  ReauthenticateWithSecondFactorDocument,
  ReauthPasskeyOptionsDocument,
  RegisterPasskeyDocument,
  RemovePasskeyDocument,
  RotateApiKeyDocument,
  SecondFactorStatusDocument,
} from '../generated/graphql';
import { launchBrowser } from '../support/browser';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { bearer, gql } from '../support/graphql';

jest.setTimeout(120_000);

let gw: TestGateway;
let browser: Browser;
let page: Page;
let cdp: CDPSession;
let authenticatorId: string;

const code = (r: { errors?: { extensions?: { code?: string } }[] }) => r.errors?.[0]?.extensions?.code;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

beforeAll(async () => {
  const port = await freePort();
  gw = await startTestGateway({ ROLE: 'api', PORT: String(port), PUBLIC_BASE_URL: `http://localhost:${port}` });
  browser = await launchBrowser();
  page = await browser.newPage();
  await page.goto(`http://localhost:${port}/healthz`);
  cdp = await page.context().newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  ({ authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: {
      protocol: 'ctap2',
      transport: 'internal',
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  }));
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await gw?.close();
});

/**
 * Runs in the page (a string, as the project's TypeScript has no DOM types): the options JSON through
 * PublicKeyCredential.parse…OptionsFromJSON, the ceremony, the credential back as `toJSON()`.
 */
function inPage(call: 'create' | 'get', options: unknown): Promise<Record<string, unknown>> {
  const parse = call === 'create' ? 'parseCreationOptionsFromJSON' : 'parseRequestOptionsFromJSON';
  return page.evaluate(`(async () => {
    const publicKey = PublicKeyCredential.${parse}(${JSON.stringify(options)});
    const cred = await navigator.credentials.${call}({ publicKey });
    return cred.toJSON();
  })()`) as Promise<Record<string, unknown>>;
}

/** navigator.credentials.create in the page with the server's creation options; the credential as JSON. */
const browserCreate = (options: unknown) => inPage('create', options);
/** navigator.credentials.get in the page with the server's request options; the assertion as JSON. */
const browserGet = (options: unknown) => inPage('get', options);

it('register a passkey, sign in with it as the second step, re-authenticate with it, remove it', async () => {
  const m = await createMerchant(gw.app);
  const token = (await gql(gw.url, LoginDocument, { email: m.email, password: m.password })).data!.login.token;
  const auth = bearer(token);
  // Adding a factor needs a fresh session.
  expect(code(await gql(gw.url, PasskeyRegistrationOptionsDocument, {}, auth))).toBe('REAUTHENTICATION_REQUIRED');
  expect((await gql(gw.url, ReauthenticateDocument, { password: m.password }, auth)).errors).toBeUndefined();

  const creation = (await gql(gw.url, PasskeyRegistrationOptionsDocument, {}, auth)).data!.passkeyRegistrationOptions as {
    rp: { id: string };
    challenge: string;
  };
  expect(creation.rp.id).toBe('localhost');
  const attestation = await browserCreate(creation);
  const registered = await gql(gw.url, RegisterPasskeyDocument, { response: attestation, name: 'CI virtual key' }, auth);
  expect(registered.errors).toBeUndefined();
  expect(registered.data!.registerPasskey.passkey.name).toBe('CI virtual key');
  // The first factor comes with recovery codes, shown once.
  expect(registered.data!.registerPasskey.recoveryCodes).toHaveLength(10);
  const { credentials } = await cdp.send('WebAuthn.getCredentials', { authenticatorId });
  expect(credentials).toHaveLength(1);
  // The same attestation again: its ceremony is spent.
  expect(code(await gql(gw.url, RegisterPasskeyDocument, { response: attestation }, auth))).toBe('CHALLENGE_EXPIRED');

  // Login: the password gives a challenge; the passkey answers it in the browser.
  const first = await gql(gw.url, LoginDocument, { email: m.email, password: m.password });
  expect(code(first)).toBe('SECOND_FACTOR_REQUIRED');
  const ext = first.errors![0]!.extensions as { challengeToken: string; methods: string[] };
  expect(ext.methods).toContain('PASSKEY');
  const request = (await gql(gw.url, LoginPasskeyOptionsDocument, { challengeToken: ext.challengeToken })).data!.loginPasskeyOptions;
  const assertion = await browserGet(request);
  const done = await gql(gw.url, CompleteLoginDocument, { challengeToken: ext.challengeToken, secondFactor: { passkey: assertion } });
  expect(done.errors).toBeUndefined();
  const session = bearer(done.data!.completeLogin.token);
  expect((await gql(gw.url, MeDocument, {}, session)).data?.me.email).toBe(m.email);

  // A replayed assertion on a new login challenge: it signed the old challenge, so it is refused.
  const second = await gql(gw.url, LoginDocument, { email: m.email, password: m.password });
  const ext2 = second.errors![0]!.extensions as { challengeToken: string };
  await gql(gw.url, LoginPasskeyOptionsDocument, { challengeToken: ext2.challengeToken });
  const replay = await gql(gw.url, CompleteLoginDocument, { challengeToken: ext2.challengeToken, secondFactor: { passkey: assertion } });
  expect(code(replay)).toBe('INVALID_SECOND_FACTOR');
  // An assertion for the right challenge but made on another origin (a phishing page's clientDataJSON) is refused.
  const phishOptions = (await gql(gw.url, LoginPasskeyOptionsDocument, { challengeToken: ext2.challengeToken })).data!.loginPasskeyOptions;
  const genuine = await browserGet(phishOptions);
  const resp = genuine.response as { clientDataJSON: string };
  const clientData = JSON.parse(Buffer.from(resp.clientDataJSON, 'base64url').toString()) as { origin: string };
  clientData.origin = 'http://localhost.evil.test';
  const forged = { ...genuine, response: { ...resp, clientDataJSON: Buffer.from(JSON.stringify(clientData)).toString('base64url') } };
  expect(code(await gql(gw.url, CompleteLoginDocument, { challengeToken: ext2.challengeToken, secondFactor: { passkey: forged } }))).toBe(
    'INVALID_SECOND_FACTOR',
  );

  // Re-authentication on the new session: the password and the passkey.
  expect(code(await gql(gw.url, RotateApiKeyDocument, { environment: 'SANDBOX' }, session))).toBe('REAUTHENTICATION_REQUIRED');
  expect(code(await gql(gw.url, ReauthenticateDocument, { password: m.password }, session))).toBe('SECOND_FACTOR_REQUIRED');
  const reauthOptions = (await gql(gw.url, ReauthPasskeyOptionsDocument, {}, session)).data!.reauthPasskeyOptions;
  const reauthAssertion = await browserGet(reauthOptions);
  expect(
    (await gql(gw.url, ReauthenticateWithSecondFactorDocument, { password: m.password, secondFactor: { passkey: reauthAssertion } }, session)).errors,
  ).toBeUndefined();
  expect((await gql(gw.url, RotateApiKeyDocument, { environment: 'SANDBOX' }, session)).errors).toBeUndefined();

  const listed = (await gql(gw.url, PasskeysDocument, {}, session)).data!.passkeys;
  expect(listed).toHaveLength(1);
  expect(listed[0]!.lastUsedAt).not.toBeNull();
  // Removal needs a fresh session. The registering session proved password and passkey; once its window
  // passes (moved back in the database rather than waited for) it must re-authenticate first.
  const sid = (JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as { sid: string }).sid;
  await gw.app.orm.em.fork().getConnection().execute(`update sessions set reauthenticated_at = now() - interval '301 seconds' where id = ?`, [sid]);
  expect(code(await gql(gw.url, RemovePasskeyDocument, { id: listed[0]!.id }, auth))).toBe('REAUTHENTICATION_REQUIRED');
  expect((await gql(gw.url, RemovePasskeyDocument, { id: listed[0]!.id }, session)).errors).toBeUndefined();
  expect((await gql(gw.url, SecondFactorStatusDocument, {}, session)).data!.secondFactorStatus).toMatchObject({ passkeys: [], recoveryCodesRemaining: 0 });
  // Password-only login again.
  expect((await gql(gw.url, LoginDocument, { email: m.email, password: m.password })).data?.login.token).toBeTruthy();
});
