/**
 * Crash safety of the sweep engine on anvil (sandbox ETHEREUM), both EVM gas paths: the EIP-7702
 * batch of the dev chain (the tank sweeps many deposits in one transaction) and the Disperse top-up
 * (an adapter without the Sweeper: one funding transaction, then one transfer per deposit). The
 * scenarios every chain runs (test/support/sweep-crash-scenarios.ts): the engine killed right after
 * each step, two engines racing, and on the top-up path the shared re-org scenario (a re-org on anvil:
 * evm_snapshot, evm_revert, then other empty blocks at the same heights). Then what only EVM has: a
 * batch sweep reorged out, and a stuck transaction replaced by the engine with a bumped fee (same nonce).
 */
import { Interface, toQuantity, Wallet } from 'ethers';
import { createEvmAdapter } from '../../src/chains/evm';
import type { WatchedNetwork } from '../../src/chains/networks';
import { watchedNetworks } from '../../src/chains/networks';
import { DEPLOYER_ADDRESS, DEV_SWEEP_CONTRACTS, DEV_TOKEN_ADDRESSES, devChainNetworkConfig, startDevChains, type DevChains } from '../../src/devchain';
import type { SweepStep } from '../../src/modules/sweeps/sweep.engine';
import { startRpcProxy } from '../support/anvil-faulty-rpc';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { Killed, sweepCrashKit, sweepCrashScenarios, type SweepCrashChain } from '../support/sweep-crash-scenarios';

const erc20 = new Interface(['function mint(address to, uint256 value)', 'function balanceOf(address) view returns (uint256)']);
const USDT = DEV_TOKEN_ADDRESSES.ETHEREUM.USDT;

let chains: DevChains;
let gw: TestGateway;
let target: WatchedNetwork;
let topup: ReturnType<typeof createEvmAdapter>;

beforeAll(async () => {
  chains = await startDevChains();
  gw = await startTestGateway({ DEV_CHAINS: 'true', SANDBOX_ETHEREUM_CONFIRMATIONS: '1', ROLE: 'api' });
  target = watchedNetworks(gw.app.config, { 'sandbox:ETHEREUM': [chains.ETHEREUM.rpcUrl] }, { localSweepContracts: DEV_SWEEP_CONTRACTS }).find(
    (t) => t.environment === 'sandbox' && t.network === 'ETHEREUM',
  )!;
  // The same chain and tank without the Sweeper: what a chain without EIP-7702 (or an operator without the contract) runs.
  topup = createEvmAdapter(devChainNetworkConfig(chains.ETHEREUM, { disperseAddress: DEV_SWEEP_CONTRACTS.disperse }));
}, 60_000);
afterAll(async () => {
  await gw?.close();
  await chains?.stop();
});

const rpc = <T>(method: string, params: unknown[] = []) => chains.ETHEREUM.rpc.call<T>(method, params);

function evmChain(adapter: () => WatchedNetwork['adapter'], steps: SweepStep[]): SweepCrashChain {
  return {
    network: 'ETHEREUM',
    family: 'evm',
    walletType: 'METAMASK',
    app: () => gw.app,
    adapter,
    token: () => ({ symbol: 'USDT', name: 'Tether USD (local)', address: USDT, decimals: 6 }),
    pay: (owner, amount) =>
      rpc<string>('eth_sendTransaction', [{ from: DEPLOYER_ADDRESS, to: USDT, data: erc20.encodeFunctionData('mint', [owner, amount]), gas: '0x186a0' }]),
    tokenBalance: async (owner) => BigInt(await rpc<string>('eth_call', [{ to: USDT, data: erc20.encodeFunctionData('balanceOf', [owner]) }, 'latest'])),
    newAddress: () => Wallet.createRandom().address,
    advance: () => rpc('anvil_mine', ['0x1']),
    steps,
    amount: 7_000_000n,
  };
}

const batchChain = evmChain(() => target.adapter, ['plan', 'funded', 'send-sign', 'send-broadcast', 'sent']);
const topupChain: SweepCrashChain = {
  ...evmChain(() => topup, ['plan', 'fund-sign', 'fund-broadcast', 'funded', 'send-sign', 'send-broadcast', 'sent']),
  reorg: {
    mark: () => rpc<string>('evm_snapshot'),
    reorg: async (mark) => {
      await rpc('evm_revert', [mark]);
      await rpc('anvil_mine', ['0x3']);
    },
  },
};

describe('EIP-7702 batch path', () => sweepCrashScenarios(batchChain));
describe('Disperse top-up path', () => sweepCrashScenarios(topupChain));

describe('EVM only', () => {
  const kit = sweepCrashKit(batchChain);
  const idsOf = (deposits: { id: string }[]) => `{${deposits.map((d) => d.id).join(',')}}`;
  const sweepOf = async (depositId: string) =>
    (
      await kit.sql<{ status: string; tx_hash: string | null; block_hash: string | null }>(
        `select status, tx_hash, block_hash from sweeps where deposit_id = ?`,
        [depositId],
      )
    )[0];

  it('a sweep reorged out goes back to sending, its stored transaction is broadcast again and confirmed once', async () => {
    const paid = await kit.paidDeposits(1);
    const depositId = paid.deposits[0]!.id;
    const snapshot = await rpc<string>('evm_snapshot');
    const deep = kit.engine(undefined, { confirmations: 3 });
    for (let i = 0; i < 10 && (await sweepOf(depositId))?.status !== 'sent'; i++) await deep.tick(gw.app.orm.em.fork());
    const sent = await sweepOf(depositId);
    expect(sent?.status).toBe('sent');
    expect(await batchChain.tokenBalance(paid.settlement)).toBe(batchChain.amount);
    // The block holding the sweep is replaced: revert, then other (empty) blocks at the same heights.
    await rpc('evm_revert', [snapshot]);
    await rpc('anvil_mine', ['0x3']);
    expect(await batchChain.tokenBalance(paid.settlement)).toBe(0n);
    await deep.tick(gw.app.orm.em.fork());
    expect(['sending', 'sent']).toContain((await sweepOf(depositId))?.status); // back to sending; possibly re-included within the same tick
    for (let i = 0; i < 20 && (await sweepOf(depositId))?.status !== 'confirmed'; i++) {
      await deep.tick(gw.app.orm.em.fork());
      await rpc('anvil_mine', ['0x1']);
    }
    const done = await sweepOf(depositId);
    expect(done?.status).toBe('confirmed');
    expect(done?.tx_hash).toBe(sent!.tx_hash); // the same stored transaction, not a new one
    expect(done?.block_hash).not.toBe(sent!.block_hash);
    await kit.expectSweptOnce(paid);
  }, 120_000);

  it("a worker that loses the race between reading balances and signing (the other worker's batch swept them meanwhile, so its gas estimate reverts) finishes its tick and stores nothing; each deposit swept once", async () => {
    const paid = await kit.paidDeposits(2);
    const ids = idsOf(paid.deposits);
    const statuses = async () => (await kit.sql<{ status: string }>(`select status from sweeps where deposit_id = any(?::uuid[])`, [ids])).map((r) => r.status);
    // The late worker's node: when its batch gas estimate arrives (both sweeps funded), the other worker
    // runs a whole tick first (it signs, stores and broadcasts the same deposits; anvil mines it), then
    // the estimate goes to anvil, which reverts it on the now empty balances.
    let other: Promise<void> | null = null;
    const proxy = await startRpcProxy(chains.ETHEREUM.rpcUrl, async (req) => {
      if (req.method === 'eth_estimateGas' && !other && (await statuses()).join() === 'funded,funded') {
        other = kit.engine().tick(gw.app.orm.em.fork());
        await other;
      }
      return undefined;
    });
    try {
      const late = watchedNetworks(gw.app.config, { 'sandbox:ETHEREUM': [proxy.url] }, { localSweepContracts: DEV_SWEEP_CONTRACTS }).find(
        (t) => t.environment === 'sandbox' && t.network === 'ETHEREUM',
      )!;
      await kit.engine(undefined, { adapter: late.adapter }).tick(gw.app.orm.em.fork());
      expect(other).not.toBeNull(); // the race happened: the other worker swept between the late one's balance read and its estimate
      // One batch estimate (the fee estimates of planning are plain transfers) and no broadcast by the late worker.
      expect(proxy.requests.filter((r) => r.method === 'eth_estimateGas' && 'authorizationList' in ((r.params[0] ?? {}) as object))).toHaveLength(1);
      expect(proxy.requests.filter((r) => r.method === 'eth_sendRawTransaction')).toHaveLength(0);
      // The late worker stored no transaction: one batch (the other's), its deposits sending or beyond.
      const [batches] = await kit.sql<{ n: number }>(
        `select count(distinct t.id)::int as n from sweep_txs t join sweep_tx_links l on l.tx_id = t.id join sweeps s on s.id = l.sweep_id where s.deposit_id = any(?::uuid[])`,
        [ids],
      );
      expect(batches!.n).toBe(1);
      await kit.runUntilConfirmed(paid.deposits, () => [kit.engine()]);
      await kit.expectSweptOnce(paid);
    } finally {
      await proxy.close();
    }
  }, 120_000);

  it.each([
    ['batch path, the batch', batchChain, 'batch'],
    ['top-up path, the funding', topupChain, 'funding'],
    ["top-up path, a deposit's transfer", topupChain, 'transfer'],
  ] as const)(
    '%s: a stuck transaction (automine off) is replaced by the engine with a bumped fee after stuckAfterS; the replacement confirms, the sweep once',
    async (_path, chain, kind) => {
      const k = sweepCrashKit(chain);
      const paid = await k.paidDeposits(2);
      const txs = () =>
        k.sql<{ id: string; tx_hash: string; nonce: string; state: string; replaces_id: string | null; fee_bump_percent: number }>(
          `select t.id, t.tx_hash, t.nonce::text, t.state, t.replaces_id, t.fee_bump_percent from sweep_txs t where t.kind = ? and exists (select 1 from sweep_tx_links l join sweeps s on s.id = l.sweep_id where l.tx_id = t.id and s.deposit_id = ?) order by t.created_at`,
          [kind, paid.deposits[0]!.id],
        );
      const engine = k.engine(undefined, { stuckAfterS: 1 });
      if (kind === 'transfer') {
        // The top-up goes through first (automine on): the deposit's own transfer is the one that sticks.
        // An engine stopped right after the funding is included (before it sends) leaves the sweeps funded.
        let funded = false;
        for (let i = 0; i < 10 && !funded; i++)
          funded = await k
            .engine('funded')
            .tick(gw.app.orm.em.fork())
            .then(
              () => false,
              (err: unknown) => err instanceof Killed,
            );
        expect(funded).toBe(true);
      }
      await rpc('evm_setAutomine', [false]);
      try {
        for (let i = 0; i < 5 && (await txs()).length === 0; i++) await engine.tick(gw.app.orm.em.fork());
        const [stuck] = await txs();
        expect(stuck).toMatchObject({ state: 'broadcast', replaces_id: null, fee_bump_percent: 100 });
        const pending = await rpc<{ blockNumber: string | null; maxFeePerGas: string; maxPriorityFeePerGas: string }>('eth_getTransactionByHash', [
          stuck!.tx_hash,
        ]);
        if (kind === 'transfer') {
          // The base fee jumps past the transfer's max fee: blocks are mined (the tank's top-up can be), the
          // transfer is not (anvil even drops it from its pool and refuses it again: the engine sees it unknown).
          await rpc('anvil_setNextBlockBaseFeePerGas', [toQuantity(BigInt(pending.maxFeePerGas) * 2n)]);
          await rpc('anvil_mine', ['0x1']);
          await rpc('evm_setAutomine', [true]);
        }
        expect(await rpc<unknown>('eth_getTransactionReceipt', [stuck!.tx_hash])).toBeNull(); // not mined
        await new Promise((r) => setTimeout(r, 1200));
        // A deposit's transfer: the deposit cannot pay the bump; the first tick tops it up, a later one signs the bump.
        for (let i = 0; i < 6 && (await txs()).length < 2; i++) await engine.tick(gw.app.orm.em.fork());
        const attempts = await txs();
        expect(attempts).toHaveLength(2);
        const replacement = attempts[1]!;
        expect(replacement).toMatchObject({ replaces_id: stuck!.id, nonce: stuck!.nonce, fee_bump_percent: 125, state: 'broadcast' });
        // The node took the replacement in place of the stuck one: same sender and nonce, higher fees.
        const bumped = await rpc<{ maxFeePerGas: string; maxPriorityFeePerGas: string }>('eth_getTransactionByHash', [replacement.tx_hash]);
        expect(BigInt(bumped.maxFeePerGas)).toBeGreaterThan(BigInt(pending.maxFeePerGas));
        expect(BigInt(bumped.maxPriorityFeePerGas)).toBeGreaterThan(BigInt(pending.maxPriorityFeePerGas));
        await rpc('evm_setAutomine', [true]);
        await k.runUntilConfirmed(paid.deposits, () => [engine]);
        const [first, second] = await txs();
        expect(first!.state).toBe('dead');
        expect(second!.state).toBe('included');
        expect(await rpc<unknown>('eth_getTransactionReceipt', [stuck!.tx_hash])).toBeNull(); // never mined
        if (kind !== 'funding') expect((await sweepOf(paid.deposits[0]!.id))?.tx_hash).toBe(replacement.tx_hash);
        if (kind === 'transfer') {
          // The second top-up (for the bump) is linked to the sweep and included; the sweep never left `sending` meanwhile.
          const topUps = await k.sql<{ state: string }>(
            `select t.state from sweep_txs t join sweep_tx_links l on l.tx_id = t.id join sweeps s on s.id = l.sweep_id where s.deposit_id = ? and t.kind = 'funding' order by t.created_at`,
            [paid.deposits[0]!.id],
          );
          expect(topUps.map((t) => t.state)).toEqual(['included', 'included']);
        }
        await k.expectSweptOnce(paid);
      } finally {
        await rpc('evm_setAutomine', [true]);
      }
    },
    120_000,
  );
});
