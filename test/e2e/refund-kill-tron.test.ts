/**
 * Refund crash safety with the BUILT worker on TRON: the kill scenarios every chain runs
 * (test/support/refund-kill-scenarios.ts) on the java-tron emulator with its resource model on
 * (accounts must be activated, energy and bandwidth are paid), so the source's gas top-up is real: the
 * gas tank activates the deposit or refund wallet and sends the TRX its transfer burns (no stake here).
 * The wrong token is a second TRC-20 (USDC) the gateway knows and the order did not ask for. TRON
 * transactions carry no nonce (reference block + expiry): a stored transfer is re-broadcast as is.
 */
import { randomBytes } from 'node:crypto';
import { id as topicOf, zeroPadValue } from 'ethers';
import type { TronWeb } from 'tronweb';
import { tronAddressBody, tronAddressFromBody, tronDriver } from '../../src/chains/tron';
import { startTronEmulator, type TronEmulator } from '../../src/devchain/tron.emulator';
import { createTestDatabase } from '../support/db';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { checkout } from '../support/order-watch';
import { CLI_JS, requireDist } from '../support/process';
import { refundKillScenarios, type TokenRole } from '../support/refund-kill-scenarios';
import { KILL_TANK_MNEMONIC } from '../support/sweep-kill-scenarios';
import { tronCustomer, tronTransfer } from '../support/tron-wallet';

const TRX = 1_000_000n;
const TRANSFER_TOPIC = topicOf('Transfer(address,address,uint256)');

let emu: TronEmulator;
let api: TestGateway;
const tokens: Record<TokenRole, string> = { main: '', wrong: '' };
let customer: string;
let wallet: TronWeb;

beforeAll(async () => {
  requireDist();
  requireDist(CLI_JS);
  emu = await startTronEmulator({ resources: true, solidityLag: 1 });
  tokens.main = await emu.deployToken({ name: 'Tether USD (emulator)', symbol: 'USDT', decimals: 6 });
  tokens.wrong = await emu.deployToken({ name: 'USD Coin (emulator)', symbol: 'USDC', decimals: 6 });
  api = await startTestGateway({ ROLE: 'api', GAS_TANK_MNEMONIC_SANDBOX: KILL_TANK_MNEMONIC }, { db: await createTestDatabase() });
  // Without DEV_CHAINS the sandbox's TRON tokens are the testnet ones: the emulator's are added like an operator would.
  await api.app.tokens.upsert(api.app.orm.em.fork(), {
    environment: 'sandbox',
    network: 'TRON',
    symbol: 'USDT',
    name: 'Tether USD (emulator)',
    address: tokens.main,
    decimals: 6,
  });
  await api.app.tokens.upsert(api.app.orm.em.fork(), {
    environment: 'sandbox',
    network: 'TRON',
    symbol: 'USDC',
    name: 'USD Coin (emulator)',
    address: tokens.wrong,
    decimals: 6,
  });
  ({ address: customer, wallet } = tronCustomer(emu));
  await emu.setTrx(customer, 100_000n * TRX); // it pays its own energy and bandwidth
  await emu.mint(tokens.main, customer, 10n ** 12n);
  await emu.mint(tokens.wrong, customer, 10n ** 12n);
  await emu.setTrx(api.app.gasTanks.address('sandbox', 'TRON')!, 100_000n * TRX);
}, 120_000);

afterAll(async () => {
  await api?.close();
  await emu?.stop();
});

/** Every TRC-20 Transfer of the token out of `owner`: the emulator executes on anvil, whose logs are the chain's. */
async function transfersFrom(owner: string, token: TokenRole = 'main'): Promise<{ to: string; amount: bigint }[]> {
  const res = await fetch(emu.anvilUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'eth_getLogs',
      params: [
        {
          address: `0x${tronAddressBody(tokens[token])}`,
          fromBlock: '0x0',
          toBlock: 'latest',
          topics: [TRANSFER_TOPIC, zeroPadValue(`0x${tronAddressBody(owner)}`, 32)],
        },
      ],
    }),
  });
  const { result } = (await res.json()) as { result: { topics: string[]; data: string }[] };
  return result.map((l) => ({ to: tronAddressFromBody(l.topics[2]!), amount: BigInt(l.data) }));
}

const sql = <R>(q: string, p: unknown[] = []) => api.app.orm.em.fork().getConnection().execute<R[]>(q, p);

refundKillScenarios({
  api: () => api,
  chains: [
    {
      network: 'TRON',
      workerEnv: () => ({ SANDBOX_TRON_RPC_URLS: emu.url, SANDBOX_TRON_CONFIRMATIONS: '1' }),
      async newOrder(m) {
        const d = await checkout(api.url, m.sandboxKey, { amountIdr: '150000', tokenAddress: tokens.main, network: 'TRON', walletType: 'TRUSTWALLET' });
        const [dep] = await sql<{ id: string }>('select id from deposits where order_id = ?', [d.orderId]);
        return { orderId: d.orderId, orderNo: d.orderNo, depositId: dep!.id, address: d.address, total: d.total };
      },
      pay: (to, amount, token = 'main') => tronTransfer(emu, wallet, customer, tokens[token], to, amount),
      advance: () => emu.mine(1),
      tokenBalance: (owner, token = 'main') => emu.balanceOf(tokens[token], owner),
      transfersFrom,
      newAddress: () => tronDriver.deriveAddress(randomBytes(64), 0),
      steps: ['fund-sign', 'fund-broadcast', 'send-sign', 'send-broadcast', 'sent'],
    },
  ],
  cliEnv: () => ({ SANDBOX_TRON_RPC_URLS: emu.url }),
});
