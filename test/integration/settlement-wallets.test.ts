import { Keypair, PublicKey } from '@solana/web3.js';
import { randomBytes } from 'node:crypto';
import { Wallet } from 'ethers';
import { tronAddressFromBody } from '../../src/chains/tron/tron.address';
import { associatedTokenAddress } from '../../src/chains/solana/solana.driver';
import { LoginDocument, SetSettlementWalletDocument, SettlementWalletsDocument } from '../generated/graphql';
import { addMember, createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { bearer, gql } from '../support/graphql';
import { http } from '../support/http';
import { WebhookReceiver } from '../support/webhook-receiver';
import { bodyOf, FAST_WEBHOOKS, payOrder, SEPOLIA_USDT, verifies } from '../support/webhooks';

/**
 * Settlement wallets: owner + password, per-family address checks, the gateway's own
 * addresses refused, the hold, the settlement_wallet.changed webhook and the history — through
 * GraphQL and REST on a real gateway and PostgreSQL.
 */
let gw: TestGateway;
const receivers: WebhookReceiver[] = [];
const ACCOUNT_LIMIT = 6;

beforeAll(async () => {
  // Production keeps its default 24 h hold; sandbox its default 0.
  gw = await startTestGateway({ ...FAST_WEBHOOKS, RATE_LIMIT_LOGIN_ACCOUNT_PER_MIN: String(ACCOUNT_LIMIT) });
});
afterAll(async () => {
  await gw?.close();
  await Promise.all(receivers.map((r) => r.close()));
});

const evm = () => Wallet.createRandom().address;
const tron = () => tronAddressFromBody(randomBytes(20).toString('hex'));
const sol = () => Keypair.generate().publicKey.toBase58();
const ADDRESS = { ETHEREUM: evm, BINANCE: evm, TRON: tron, SOLANA: sol } as const;

async function owner() {
  const m = await createMerchant(gw.app);
  const login = await gql(gw.url, LoginDocument, { email: m.email, password: m.password });
  return { ...m, token: login.data!.login.token };
}

const rows = async (merchantId: string) =>
  gw.app.orm.em
    .fork()
    .getConnection()
    .execute<{ network: string; environment: string; address: string }[]>(
      `select network, environment, address from settlement_wallets where merchant_id = ? order by created_at`,
      [merchantId],
    );
const events = async (merchantId: string) =>
  gw.app.orm.em
    .fork()
    .getConnection()
    .execute<{ type: string; payload: Record<string, unknown> }[]>(`select type, payload from merchant_events where merchant_id = ? order by seq`, [
      merchantId,
    ]);

const setGql = (
  token: string,
  vars: { environment?: 'SANDBOX' | 'PRODUCTION'; network: 'ETHEREUM' | 'BINANCE' | 'TRON' | 'SOLANA'; address: string; password: string },
) => gql(gw.url, SetSettlementWalletDocument, { environment: 'SANDBOX', ...vars }, bearer(token));
const setRest = (token: string, env: 'testnet' | 'mainnet', network: string, body: unknown) =>
  http(gw.url, `/api/v2/${env}/merchant/settlement-wallets/${network}`, { method: 'PUT', body, headers: { authorization: `Bearer ${token}` } });

describe('the owner sets an address', () => {
  it.each(['ETHEREUM', 'BINANCE', 'TRON', 'SOLANA'] as const)('%s via GraphQL (sandbox: active at once) and reads it back', async (network) => {
    const m = await owner();
    const address = ADDRESS[network]();
    const res = await setGql(m.token, { network, address, password: m.password });
    expect(res.errors).toBeUndefined();
    const s = res.data!.setSettlementWallet;
    expect(s.changed).toBe(true);
    expect(s.setting).toMatchObject({ environment: 'SANDBOX', network, current: { address, setBy: m.email, replacedAt: null }, pending: null });
    expect(Math.abs(new Date(s.setting.current!.activeFrom).getTime() - Date.now())).toBeLessThan(5000);
    const read = await gql(gw.url, SettlementWalletsDocument, { environment: 'SANDBOX', network }, bearer(m.token));
    expect(read.data!.settlementWallets).toEqual([s.setting]);
    const cur = await gw.app.settlementWallets.current(gw.app.orm.em.fork(), m.merchantId, 'sandbox', network);
    expect(cur).toEqual({ id: s.setting.current!.id, address, activeFrom: new Date(s.setting.current!.activeFrom) });
  });

  it.each(['ETHEREUM', 'BINANCE', 'TRON', 'SOLANA'] as const)(
    '%s via REST on mainnet: held for 24 h (pending, not current), in the envelope',
    async (network) => {
      const m = await owner();
      const address = ADDRESS[network]();
      const res = await setRest(m.token, 'mainnet', network.toLowerCase(), { address, password: m.password });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        status_code: 200,
        message: 'Settlement wallet updated',
        data: { changed: true, environment: 'production', network, current: null, pending: { address, set_by: m.email } },
      });
      const activeFrom = res.body.data.pending.active_from as number;
      expect(activeFrom - Date.now() / 1000).toBeGreaterThan(86400 - 30);
      expect(activeFrom - Date.now() / 1000).toBeLessThan(86400 + 30);
      expect(await gw.app.settlementWallets.current(gw.app.orm.em.fork(), m.merchantId, 'production', network)).toBeNull();
      const list = await http(gw.url, '/api/v2/mainnet/merchant/settlement-wallets', { headers: { authorization: `Bearer ${m.token}` } });
      expect(list.status).toBe(200);
      expect(list.body.data.map((s: { network: string }) => s.network)).toEqual(['ETHEREUM', 'BINANCE', 'TRON', 'SOLANA']);
      expect(list.body.data.find((s: { network: string }) => s.network === network).pending.address).toBe(address);
    },
  );

  it('an all-lower-case EVM address (no checksum) is accepted and stored checksummed', async () => {
    const m = await owner();
    const address = evm();
    const res = await setGql(m.token, { network: 'ETHEREUM', address: address.toLowerCase(), password: m.password });
    expect(res.data!.setSettlementWallet.setting.current!.address).toBe(address);
  });
});

describe('changes: hold, webhook, history', () => {
  it('sends settlement_wallet.changed, signed, in the change’s transaction; the same address again is a no-op; a change during the hold replaces the pending one', async () => {
    const r = await WebhookReceiver.start();
    receivers.push(r);
    const m = await owner();
    // Production URLs must be https when saved; the receiver is plain http on 127.0.0.1, so it is written directly.
    await gw.app.orm.em.fork().getConnection().execute(`update merchants set notification_url_production = ? where id = ?`, [r.url, m.merchantId]);
    const A = tron();
    const B = tron();
    const C = tron();
    // First address in production: held (nothing active yet).
    expect((await setGql(m.token, { environment: 'PRODUCTION', network: 'TRON', address: A, password: m.password })).data!.setSettlementWallet.changed).toBe(
      true,
    );
    // Again: no-op, no event.
    const again = await setRest(m.token, 'mainnet', 'TRON', { address: A, password: m.password });
    expect(again.body).toMatchObject({ status_code: 200, message: 'Settlement wallet unchanged', data: { changed: false } });
    // Pretend A's hold ended (a day later), then change to B, then to C during B's hold.
    await gw.app.orm.em
      .fork()
      .getConnection()
      .execute(`update settlement_wallets set active_from = now() - interval '1 second', created_at = now() - interval '1 day' where merchant_id = ?`, [
        m.merchantId,
      ]);
    expect((await gw.app.settlementWallets.current(gw.app.orm.em.fork(), m.merchantId, 'production', 'TRON'))!.address).toBe(A);
    await setGql(m.token, { environment: 'PRODUCTION', network: 'TRON', address: B, password: m.password });
    const toC = (await setGql(m.token, { environment: 'PRODUCTION', network: 'TRON', address: C, password: m.password })).data!.setSettlementWallet.setting;
    // Sweeps still go to A; C waits for its own (new) hold; B never became active.
    expect(toC.current!.address).toBe(A);
    expect(toC.pending!.address).toBe(C);
    expect(new Date(toC.pending!.activeFrom).getTime() - Date.now()).toBeGreaterThan(86400_000 - 30_000);
    expect(toC.history.map((h) => h.address)).toEqual([C, B, A]);
    expect((await gw.app.settlementWallets.current(gw.app.orm.em.fork(), m.merchantId, 'production', 'TRON'))!.address).toBe(A);
    // Setting A (the active one) back cancels the pending change at once.
    const back = (await setGql(m.token, { environment: 'PRODUCTION', network: 'TRON', address: A, password: m.password })).data!.setSettlementWallet.setting;
    expect(back.pending).toBeNull();
    expect(back.current!.address).toBe(A);
    expect(back.history.map((h) => h.address)).toEqual([A, C, B, A]);

    const evts = await events(m.merchantId);
    expect(evts.map((e) => e.type)).toEqual(Array(4).fill('settlement_wallet.changed'));
    expect(evts.map((e) => [e.payload.previousAddress, e.payload.replacedPendingAddress, e.payload.address])).toEqual([
      [null, null, A],
      [A, null, B],
      [A, B, C],
      [A, C, A],
    ]);
    await r.waitFor(4);
    const hooks = r.received.map((w) => ({ w, body: bodyOf(w) }));
    for (const { w } of hooks) {
      expect(verifies(m.productionKey, w)).toBe(true);
      expect(w.headers['x-service-event']).toBe('settlement_wallet.changed');
    }
    const toCHook = hooks.find((h) => h.body.data.address === C)!;
    expect(toCHook.body.data).toMatchObject({
      merchant_id: m.merchantId,
      environment: 'production',
      network: 'TRON',
      previous_address: A,
      replaced_pending_address: B,
      address: C,
      active_from: toC.pending!.activeFrom,
      changed_by: { email: m.email },
    });
    expect(toCHook.w.headers['x-service-idempotency-key']).toBe(`settlement_wallet.changed:${toC.pending!.id}`);
  });
});

describe('refused', () => {
  it('a non-owner (admin) session: FORBIDDEN in both transports, nothing written', async () => {
    const m = await createMerchant(gw.app);
    const { email } = await addMember(gw.app, m.merchantId, 'admin', { email: `admin-${Date.now()}@merchant.test`, password: 'admin password 1' });
    const token = (await gql(gw.url, LoginDocument, { email, password: 'admin password 1' })).data!.login.token;
    const g = await setGql(token, { network: 'ETHEREUM', address: evm(), password: 'admin password 1' });
    expect(g.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    const rest = await setRest(token, 'testnet', 'ETHEREUM', { address: evm(), password: 'admin password 1' });
    expect(rest.status).toBe(403);
    expect(rest.body).toMatchObject({ status_code: 403, message: 'Your role (admin) cannot change settlement addresses' });
    // An API key is not a dashboard session.
    const byKey = await http(gw.url, '/api/v2/testnet/merchant/settlement-wallets/ETHEREUM', {
      method: 'PUT',
      body: { address: evm(), password: m.password },
      headers: { 'api-key': m.sandboxKey },
    });
    expect(byKey.status).toBe(401);
    expect(await rows(m.merchantId)).toEqual([]);
  });

  it('a wrong or missing password: INVALID_PASSWORD / validation error, nothing written', async () => {
    const m = await owner();
    const wrong = await setGql(m.token, { network: 'ETHEREUM', address: evm(), password: 'not the password' });
    expect(wrong.errors?.[0]).toMatchObject({ message: 'The password is not correct', extensions: { code: 'INVALID_PASSWORD' } });
    const restWrong = await setRest(m.token, 'testnet', 'ETHEREUM', { address: evm(), password: 'nope' });
    expect(restWrong.body).toMatchObject({ status_code: 403, message: 'The password is not correct' });
    const missing = await setRest(m.token, 'testnet', 'ETHEREUM', { address: evm() });
    expect(missing.status).toBe(400);
    expect(missing.body.message).toMatch(/password.*required/);
    const empty = await setGql(m.token, { network: 'ETHEREUM', address: evm(), password: '' });
    expect(empty.errors?.[0]?.extensions?.code).toBe('VALIDATION_FAILED');
    expect(await rows(m.merchantId)).toEqual([]);
    expect(await events(m.merchantId)).toEqual([]);
  });

  it('password guesses are rate limited per account, like login (and count toward it)', async () => {
    const m = await owner();
    const codes: string[] = [];
    for (let i = 0; i < ACCOUNT_LIMIT + 1; i++)
      codes.push(String((await setGql(m.token, { network: 'TRON', address: tron(), password: `guess ${i}` })).errors?.[0]?.extensions?.code));
    expect(codes.slice(0, ACCOUNT_LIMIT - 1).every((c) => c === 'INVALID_PASSWORD')).toBe(true);
    expect(codes.at(-1)).toBe('RATE_LIMITED');
    // Even the right password now waits; login for the account too.
    const right = await setRest(m.token, 'testnet', 'TRON', { address: tron(), password: m.password });
    expect(right.status).toBe(429);
    expect((await gql(gw.url, LoginDocument, { email: m.email, password: m.password })).errors?.[0]?.extensions?.code).toBe('RATE_LIMITED');
    expect(await rows(m.merchantId)).toEqual([]);
  });

  const good = evm();
  // EIP-55's own example 0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed with the case of its last letter flipped.
  const badChecksum = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD';
  const tronGood = tron();
  const tronTypo = tronGood.slice(0, 10) + (tronGood[10] === 'a' ? 'b' : 'a') + tronGood.slice(11);
  const pda = associatedTokenAddress(
    Keypair.generate().publicKey,
    new PublicKey('4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU'),
    'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA',
  );
  const INVALID: [network: 'ETHEREUM' | 'BINANCE' | 'TRON' | 'SOLANA', address: string, message: RegExp][] = [
    ['ETHEREUM', badChecksum, /EIP-55 checksum/],
    ['ETHEREUM', '0x1234', /0x followed by 40 hexadecimal digits/],
    ['BINANCE', good.slice(2), /0x followed by 40 hexadecimal digits/],
    ['ETHEREUM', '0x0000000000000000000000000000000000000000', /zero address/],
    ['TRON', tronTypo, /checksum/],
    ['TRON', good, /34 base58 characters starting with T/],
    ['TRON', tronAddressFromBody('0'.repeat(40)), /zero address/],
    ['SOLANA', 'not-base58-0OIl', /32-byte public key/],
    ['SOLANA', '11111111111111111111111111111111', /program address \(or the zero address\)/],
    ['SOLANA', pda, /not on the ed25519 curve/],
  ];
  it.each(INVALID)('%s %s: INVALID_SETTLEMENT_ADDRESS (422) saying what is wrong, nothing written', async (network, address, message) => {
    const m = await owner();
    const g = await setGql(m.token, { network, address, password: m.password });
    expect(g.errors?.[0]?.extensions?.code).toBe('INVALID_SETTLEMENT_ADDRESS');
    expect(g.errors?.[0]?.message).toMatch(message);
    const rest = await setRest(m.token, 'testnet', network, { address, password: m.password });
    expect(rest.status).toBe(422);
    expect(rest.body).toMatchObject({ status_code: 422, message: expect.stringMatching(message) });
    expect(await rows(m.merchantId)).toEqual([]);
    expect(await events(m.merchantId)).toEqual([]);
  });

  it('the gateway’s own addresses: a deposit address (any merchant, any environment, either EVM network), a token contract or mint, a gas tank', async () => {
    const payer = await createMerchant(gw.app);
    const paid = await payOrder(gw.app, gw.url, payer);
    const tank = tron();
    gw.app.settlementWallets.reserveAddresses((network) => (network === 'TRON' ? [tank] : []));
    const cases: [env: 'SANDBOX' | 'PRODUCTION', network: 'ETHEREUM' | 'BINANCE' | 'TRON' | 'SOLANA', address: string, what: RegExp][] = [
      ['SANDBOX', 'ETHEREUM', paid.deposit.address, /deposit address/],
      ['PRODUCTION', 'BINANCE', paid.deposit.address.toLowerCase(), /deposit address/],
      ['SANDBOX', 'ETHEREUM', SEPOLIA_USDT, /token contract/],
      ['PRODUCTION', 'BINANCE', SEPOLIA_USDT.toLowerCase(), /token contract/],
      ['SANDBOX', 'TRON', 'TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf', /token contract/],
      ['PRODUCTION', 'SOLANA', 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v', /token contract/],
      ['SANDBOX', 'TRON', tank, /gas tank/],
    ];
    // Each refusal comes after the password check, which counts toward the account's limit: a few per owner.
    const owners = [await owner(), await owner()];
    for (const [i, [environment, network, address, what]] of cases.entries()) {
      const m = owners[i % 2]!;
      const g = await setGql(m.token, { environment, network, address, password: m.password });
      expect(g.errors?.[0]?.extensions?.code).toBe('SETTLEMENT_ADDRESS_REFUSED');
      expect(g.errors?.[0]?.message).toMatch(what);
    }
    const m = owners[1]!;
    const rest = await setRest(m.token, 'mainnet', 'ETHEREUM', { address: paid.deposit.address, password: m.password });
    expect(rest.body).toMatchObject({ status_code: 422, message: expect.stringMatching(/deposit address of this gateway/) });
    for (const o of owners) {
      expect(await rows(o.merchantId)).toEqual([]);
      expect(await events(o.merchantId)).toEqual([]);
    }
  });

  it('bad REST input: unknown network, no body, wrong types, no token — clear 4xx in the envelope', async () => {
    const m = await owner();
    const unknown = await setRest(m.token, 'testnet', 'DOGE', { address: evm(), password: m.password });
    expect(unknown.status).toBe(400);
    expect(unknown.body).toMatchObject({ status_code: 400, message: expect.stringMatching(/network.*ETHEREUM, BINANCE, TRON, SOLANA/) });
    const noBody = await http(gw.url, '/api/v2/testnet/merchant/settlement-wallets/TRON', { method: 'PUT', headers: { authorization: `Bearer ${m.token}` } });
    expect(noBody.status).toBe(400);
    const types = await setRest(m.token, 'testnet', 'TRON', { address: 42, password: true });
    expect(types.status).toBe(400);
    const getUnknown = await http(gw.url, '/api/v2/testnet/merchant/settlement-wallets/DOGE', { headers: { authorization: `Bearer ${m.token}` } });
    expect(getUnknown.status).toBe(400);
    const anon = await http(gw.url, '/api/v2/testnet/merchant/settlement-wallets', {});
    expect(anon.status).toBe(401);
    expect(await rows(m.merchantId)).toEqual([]);
  });
});
