/**
 * The sandbox as `npm start` runs it (DEV_CHAINS on: the runtime starts the four local chains, seeds
 * their tokens and funds the faucet wallet) — driven through REST as a new user would: the networks
 * list, the faucet into wallets of their own, limits, bad input, and a paid order on TRON and SOLANA.
 * Balances are read on chain through the `rpc_url` the networks endpoint hands out.
 */
import { randomBytes } from 'node:crypto';
import { Connection, Keypair, PublicKey } from '@solana/web3.js';
import { getAssociatedTokenAddressSync } from '@solana/spl-token';
import { Contract, JsonRpcProvider, Wallet } from 'ethers';
import { TronWeb } from 'tronweb';
import { fromHex } from 'tronweb/utils';
import type { Network } from '../../src/common/environment';
import { internalContext } from '../../src/common/context';
import { openTransferWallet } from '../../src/chains/transfer-wallet';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { http } from '../support/http';
import { checkout, eventually } from '../support/order-watch';

jest.setTimeout(180_000);

interface NetworkView {
  name: Network;
  chain_id: number | null;
  rpc_url: string;
  confirmations: number;
  tokens: { symbol: string; address: string; decimals: number }[];
}

let gw: TestGateway;
let networks: Record<string, NetworkView>;

beforeAll(async () => {
  gw = await startTestGateway({
    DEV_CHAINS: 'true',
    OFFER_UNWATCHED_NETWORKS: 'false',
    FAUCET_IP_PER_HOUR: '9',
    SANDBOX_TRON_CONFIRMATIONS: '3',
    SANDBOX_SOLANA_CONFIRMATIONS: '3',
    WATCH_POLL_MS: '200',
  });
  const res = await http(gw.url, '/api/v2/testnet/networks');
  expect(res.status).toBe(200);
  networks = Object.fromEntries((res.body.data.networks as NetworkView[]).map((n) => [n.name, n]));
});

afterAll(async () => {
  await gw?.close();
});

/** A fresh wallet of the user's own on each family: its address and key material. */
function newWallet(network: Network): { address: string; key: string } {
  if (network === 'SOLANA') {
    const seed = randomBytes(32);
    return { address: Keypair.fromSeed(seed).publicKey.toBase58(), key: seed.toString('hex') };
  }
  const w = Wallet.createRandom();
  return { address: network === 'TRON' ? fromHex(`41${w.address.slice(2).toLowerCase()}`) : w.address, key: w.privateKey };
}

/** Token balance read through the public rpc_url, with each family's ordinary client. */
async function balanceOf(network: Network, symbol: string, owner: string): Promise<bigint> {
  const n = networks[network]!;
  const token = n.tokens.find((t) => t.symbol === symbol)!;
  if (network === 'SOLANA') {
    const c = new Connection(n.rpc_url, 'confirmed');
    const ata = getAssociatedTokenAddressSync(new PublicKey(token.address), new PublicKey(owner));
    return (await c.getAccountInfo(ata)) ? BigInt((await c.getTokenAccountBalance(ata)).value.amount) : 0n;
  }
  if (network === 'TRON') {
    const tron = new TronWeb({ fullHost: n.rpc_url });
    const res = await tron.transactionBuilder.triggerConstantContract(token.address, 'balanceOf(address)', {}, [{ type: 'address', value: owner }], owner);
    return BigInt(`0x${res.constant_result?.[0] || '0'}`);
  }
  // What MetaMask does with the chain id and RPC URL it is given
  const provider = new JsonRpcProvider(n.rpc_url, n.chain_id!, { staticNetwork: true });
  try {
    expect(Number((await provider.getNetwork()).chainId)).toBe(n.chain_id);
    return (await new Contract(token.address, ['function balanceOf(address) view returns (uint256)'], provider).getFunction('balanceOf')(owner)) as bigint;
  } finally {
    provider.destroy();
  }
}

const faucet = (body: unknown, env = 'testnet') => http(gw.url, `/api/v2/${env}/faucet`, { body });
const grants = async () => Number((await gw.app.orm.em.fork().execute<{ n: string }[]>('select count(*) as n from faucet_grants'))[0]!.n);
const units = (network: Network, symbol: string, whole: bigint) => whole * 10n ** BigInt(networks[network]!.tokens.find((t) => t.symbol === symbol)!.decimals);

it('lists the four local networks with chain ids, a usable rpc_url, confirmations and both tokens', () => {
  expect(Object.keys(networks).sort()).toEqual(['BINANCE', 'ETHEREUM', 'SOLANA', 'TRON']);
  expect(networks.ETHEREUM).toMatchObject({ chain_id: 31337, confirmations: 3 });
  expect(networks.BINANCE).toMatchObject({ chain_id: 31338 });
  expect(networks.TRON).toMatchObject({ chain_id: null, confirmations: 3 });
  for (const n of Object.values(networks)) {
    expect(n.rpc_url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(n.tokens.map((t) => t.symbol).sort()).toEqual(['USDC', 'USDT']);
  }
});

it.each(['ETHEREUM', 'BINANCE', 'TRON', 'SOLANA'] as const)('the faucet sends 1000 USDT, 1000 USDC and gas on %s, seen on chain', async (network) => {
  const w = newWallet(network);
  const res = await faucet({ address: w.address, network, tokens: ['USDT', 'USDC'] });
  expect(res.status).toBe(200);
  expect(res.body.data.warnings).toEqual([]);
  expect(res.body.data.transfers.map((t: { token: string }) => t.token)).toEqual([
    { ETHEREUM: 'ETH', BINANCE: 'BNB', TRON: 'TRX', SOLANA: 'SOL' }[network],
    'USDT',
    'USDC',
  ]);
  expect(await balanceOf(network, 'USDT', w.address)).toBe(units(network, 'USDT', 1000n));
  expect(await balanceOf(network, 'USDC', w.address)).toBe(units(network, 'USDC', 1000n));
});

it('one request per address and network per window: the second gets 429 with Retry-After', async () => {
  const w = newWallet('ETHEREUM');
  expect((await faucet({ address: w.address, network: 'ETHEREUM', tokens: ['USDT'] })).status).toBe(200);
  const again = await faucet({ address: w.address, network: 'ETHEREUM', tokens: ['USDT'] });
  expect(again.status).toBe(429);
  expect(again.body).toMatchObject({ status_code: 429 });
  expect(Number(again.headers.get('retry-after'))).toBeGreaterThan(86_000);
});

it('20 concurrent requests for one address send exactly one set', async () => {
  const w = newWallet('BINANCE');
  const all = await Promise.all(Array.from({ length: 20 }, () => faucet({ address: w.address, network: 'BINANCE', tokens: ['USDT'] })));
  expect(all.map((r) => r.status).sort()).toEqual([200, ...Array(19).fill(429)]);
  expect(await balanceOf('BINANCE', 'USDT', w.address)).toBe(units('BINANCE', 'USDT', 1000n));
});

it('a token not offered on the network is refused before the grant: nothing sent, and the address can still ask', async () => {
  const w = newWallet('SOLANA');
  const before = await grants();
  const res = await faucet({ address: w.address, network: 'SOLANA', tokens: ['USDC', 'DAI'] });
  expect(res.status).toBe(400);
  expect(res.body).toMatchObject({ status_code: 400, message: expect.stringContaining('DAI is not offered on SOLANA'), data: { code: 'VALIDATION_FAILED' } });
  expect(await grants()).toBe(before);
  // the window was not spent: the corrected request is served at once
  const fixed = await faucet({ address: w.address, network: 'SOLANA', tokens: ['USDC'] });
  expect(fixed.status).toBe(200);
  expect(fixed.body.data.transfers.map((t: { token: string }) => t.token)).toEqual(['SOL', 'USDC']);
});

it.each([
  ['an EVM address on TRON', { address: '0x000000000000000000000000000000000000bEEF', network: 'TRON', tokens: ['USDT'] }],
  ['a TRON address on ETHEREUM', { address: 'TLsV52sRDL79HXGGm9yzwKibb6BeruhUzy', network: 'ETHEREUM', tokens: ['USDT'] }],
  ['a malformed SOLANA address', { address: 'not-a-key', network: 'SOLANA', tokens: ['USDT'] }],
  ['an unknown network', { address: '0x000000000000000000000000000000000000bEEF', network: 'POLYGON', tokens: ['USDT'] }],
  ['no tokens', { address: '0x000000000000000000000000000000000000bEEF', network: 'ETHEREUM', tokens: [] }],
  ['repeated tokens', { address: '0x000000000000000000000000000000000000bEEF', network: 'ETHEREUM', tokens: ['USDT', 'usdt'] }],
  ['tokens not an array', { address: '0x000000000000000000000000000000000000bEEF', network: 'ETHEREUM', tokens: 'USDT' }],
  ['a missing address', { network: 'ETHEREUM', tokens: ['USDT'] }],
])('%s is a 400 in the envelope and sends nothing', async (_label, body) => {
  const before = await grants();
  const res = await faucet(body);
  expect(res.status).toBe(400);
  expect(res.body).toMatchObject({ status_code: 400, message: expect.any(String) });
  expect(await grants()).toBe(before);
});

it('a body that is not JSON is a 400 and sends nothing', async () => {
  const before = await grants();
  const res = await http(gw.url, '/api/v2/testnet/faucet', { raw: '{"address": ', headers: { 'content-type': 'application/json' } });
  expect(res.status).toBe(400);
  expect(res.body.status_code).toBe(400);
  expect(await grants()).toBe(before);
});

it('there is no faucet in production: /mainnet/faucet is a 404 in the envelope', async () => {
  const res = await faucet({ address: '0x000000000000000000000000000000000000bEEF', network: 'ETHEREUM', tokens: ['USDT'] }, 'mainnet');
  expect(res.status).toBe(404);
  expect(res.body.status_code).toBe(404);
  expect((await http(gw.url, '/api/v2/mainnet/networks')).body.data.networks).toEqual([]);
});

it('tokens of networks nothing watches are neither listed nor accepted', async () => {
  const em = gw.app.orm.em.fork();
  expect(await gw.app.tokens.listActive(em, 'production')).toEqual([]);
  await expect(gw.app.tokens.resolve(internalContext(em), 'production', 'ETHEREUM', '0xdAC17F958D2ee523a2206206994597C13D831ec7')).rejects.toMatchObject({
    code: 'NETWORK_NOT_WATCHED',
  });
});

it('a production order is refused at creation when no production network is watched: NO_NETWORK_WATCHED, nothing stored', async () => {
  const m = await createMerchant(gw.app);
  const res = await http(gw.url, '/api/v2/mainnet/merchant/fiat/order', {
    body: { merchant_id: m.merchantId, order_no: 'PROD-1', amount: '150000' },
    headers: { 'api-key': m.productionKey },
  });
  expect(res.status).toBe(422);
  expect(res.body).toMatchObject({
    status_code: 422,
    message: expect.stringContaining('No network is watched in production'),
    data: { code: 'NO_NETWORK_WATCHED' },
  });
  const em = gw.app.orm.em.fork();
  expect(await em.getConnection().execute(`select count(*)::int as n from orders where merchant_id = ?`, [m.merchantId])).toEqual([{ n: 0 }]);
  // the sandbox, where the local chains are watched, takes the same order
  const sandbox = await http(gw.url, '/api/v2/testnet/merchant/fiat/order', {
    body: { merchant_id: m.merchantId, order_no: 'PROD-1', amount: '150000' },
    headers: { 'api-key': m.sandboxKey },
  });
  expect(sandbox.status).toBe(201);
});

describe('a new user pays an order from their own faucet-funded wallet and sees Success', () => {
  it.each([
    ['TRON', 'TRUSTWALLET'],
    ['SOLANA', 'PHANTOM'],
  ] as const)('on %s', async (network, walletType) => {
    const apiKey = (await createMerchant(gw.app)).sandboxKey;
    const usdt = networks[network]!.tokens.find((t) => t.symbol === 'USDT')!;
    const order = await checkout(gw.url, apiKey, { amountIdr: '150000', tokenAddress: usdt.address, network, walletType });
    const w = newWallet(network);
    expect((await faucet({ address: w.address, network, tokens: ['USDT'] })).status).toBe(200);
    const pay = await openTransferWallet(network, { rpcUrl: networks[network]!.rpc_url, timeoutMs: 30_000, key: w.key });
    await pay.sendToken({ address: usdt.address, decimals: usdt.decimals }, order.address, order.total);
    const status = async () => (await gw.app.orm.em.fork().execute<{ status: string }[]>('select status from orders where id = ?', [order.orderId]))[0]!.status;
    await eventually(async () => (await status()) === 'Success', `${network} order Success`, 90_000);
  });
});

it('the IP limit: past FAUCET_IP_PER_HOUR grants from one IP, a 429 names the IP limit', async () => {
  const used = Number(
    (await gw.app.orm.em.fork().execute<{ n: string }[]>(`select count(*) as n from faucet_grants where created_at > now() - interval '1 hour'`))[0]!.n,
  );
  for (let i = used; i < 9; i++) expect((await faucet({ address: newWallet('ETHEREUM').address, network: 'ETHEREUM', tokens: ['USDT'] })).status).toBe(200);
  const res = await faucet({ address: newWallet('ETHEREUM').address, network: 'ETHEREUM', tokens: ['USDT'] });
  expect(res.status).toBe(429);
  expect(res.body.message).toMatch(/per hour from one IP/);
  expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
});
