/**
 * SOLANA push: the adapter's `subscribeHeads` over the facade's WebSocket (`slotSubscribe`, the
 * validator's pubsub wire protocol). Heads are coalesced, a dropped or refused socket reconnects with
 * backoff and says so (`down`, then `open`), and nothing of it reaches the caller as an exception.
 * Then the watcher driven by it: woken by heads while the socket is up, by a polling timer only while
 * it is down; a payment before, during and after a drop is each recorded once.
 */
import { Keypair, Transaction, type PublicKey } from '@solana/web3.js';
import { createAssociatedTokenAccountIdempotentInstruction, createTransferCheckedInstruction, getAssociatedTokenAddressSync } from '@solana/spl-token';
import type { ChainAdapter } from '../../src/chains/chain-adapter';
import { watchedNetworks, type WatchedNetwork } from '../../src/chains/networks';
import { createSolanaAdapter, type SolanaAdapter } from '../../src/chains/solana';
import { solanaWsUrl } from '../../src/chains/solana/solana.heads';
import { startSolanaFacade, type SolanaFacade } from '../../src/devchain/solana.facade';
import { createChainWatcher } from '../../src/jobs/chain-watcher.factory';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { eventually } from '../support/order-watch';

jest.setTimeout(180_000);

type State = 'open' | 'down';

/** Heads and states one subscription reported. */
function recorder(adapter: ChainAdapter) {
  const heads: bigint[] = [];
  const states: State[] = [];
  const sub = adapter.subscribeHeads!(
    (h) => heads.push(h.number),
    (s) => states.push(s),
  );
  return { heads, states, sub, state: () => states[states.length - 1] };
}

describe('SOLANA subscribeHeads against the facade', () => {
  let f: SolanaFacade;
  const adapters: SolanaAdapter[] = [];
  const adapter = (opts: Parameters<typeof createSolanaAdapter>[1] = {}) => {
    const a = createSolanaAdapter(
      { network: 'SOLANA', rpcUrls: [f.url], wsUrls: [solanaWsUrl(f.url)], confirmations: 0, maxBlockRange: 0, timeoutMs: 5000 },
      opts,
    );
    adapters.push(a);
    return a;
  };

  beforeAll(async () => {
    f = await startSolanaFacade({ finalityLag: 2 });
  });
  afterAll(async () => {
    await Promise.all(adapters.map((a) => a.close()));
    await f?.stop();
  });

  it('derives the WebSocket URL as web3.js does (port + 1, ws/wss); no URL, no push', () => {
    expect(createSolanaAdapter({ network: 'SOLANA', rpcUrls: [f.url], confirmations: 0, maxBlockRange: 0, timeoutMs: 5000 }).subscribeHeads).toBeUndefined();
    expect(solanaWsUrl('http://127.0.0.1:8899')).toBe('ws://127.0.0.1:8900/');
    expect(solanaWsUrl('https://mainnet.helius-rpc.com/?api-key=k')).toBe('wss://mainnet.helius-rpc.com/?api-key=k');
  });

  it('reports each new slot; a burst of slots is coalesced into the newest one', async () => {
    const r = recorder(adapter({ heads: { minIntervalMs: 3000 } }));
    await eventually(async () => r.state() === 'open', 'the subscription is confirmed');
    expect(r.states).toEqual(['open']);
    f.advanceSlots(1);
    await eventually(async () => r.heads.includes(BigInt(f.slot())), 'the new slot is reported');
    const before = r.heads.length;
    for (let i = 0; i < 10; i++) f.advanceSlots(1);
    await eventually(async () => r.heads[r.heads.length - 1] === BigInt(f.slot()), 'the newest slot of the burst is reported');
    // ten notifications, at most two heads: the first at once if its interval was over, the rest as one
    expect(r.heads.length - before).toBeLessThanOrEqual(2);
    expect(f.calls.filter((c) => c === 'ws:slotSubscribe').length).toBeGreaterThanOrEqual(1);
    await r.sub.close();
  });

  it('a dropped socket, refused while down, reconnects with backoff: down, then open, heads again', async () => {
    const errors: string[] = [];
    const r = recorder(adapter({ heads: { minIntervalMs: 0, backoffBaseMs: 20, backoffMaxMs: 200, onError: (e) => errors.push(e.message) } }));
    await eventually(async () => r.state() === 'open', 'the subscription is confirmed');
    const subscribers = f.slotSubscribers();
    f.setSocketsRefused(true);
    f.dropSockets();
    await eventually(async () => r.state() === 'down', 'the loss is reported');
    // refused upgrades: reported as socket failures, tried again (never thrown)
    await eventually(async () => errors.filter((e) => /503/.test(e)).length >= 2, 'reconnection attempts while refused');
    f.setSocketsRefused(false);
    await eventually(async () => r.state() === 'open', 'the subscription is back');
    expect(r.states).toEqual(['open', 'down', 'open']);
    // the dropped sockets' subscriptions are gone: one live per open subscription
    expect(f.slotSubscribers()).toBeLessThanOrEqual(subscribers);
    f.advanceSlots(1);
    await eventually(async () => r.heads[r.heads.length - 1] === BigInt(f.slot()), 'heads flow after the reconnection');
    await r.sub.close();
  });

  it('a provider where nothing listens is skipped for the next URL; close() ends the subscription for good', async () => {
    const dead = 'ws://127.0.0.1:1/';
    const r = recorder(adapter({ wsUrls: [dead, f.wsUrl], heads: { backoffBaseMs: 10, backoffMaxMs: 50 } }));
    await eventually(async () => r.state() === 'open', 'the second URL serves the subscription');
    expect(r.states).toEqual(['down', 'open']);
    const live = f.slotSubscribers();
    await r.sub.close();
    await eventually(async () => f.slotSubscribers() === live - 1, 'the facade sees the subscription end');
    f.advanceSlots(1);
    f.dropSockets();
    // nothing comes back after close: no reconnection, no state change
    const states = r.states.length;
    await new Promise((res) => setTimeout(res, 300));
    expect(r.states.length).toBe(states);
    expect(f.slotSubscribers()).toBe(live - 1);
  });
});

describe('SOLANA watcher woken by heads, a polling timer only while the socket is down', () => {
  const MERCHANT = '00000000-0000-4000-8000-0000000000f1';
  const WALLET_ID = '00000000-0000-4000-8000-0000000000f2';
  let f: SolanaFacade;
  let gw: TestGateway;
  let mint: PublicKey;
  let customer: Keypair;
  let target: WatchedNetwork;
  const owners = [Keypair.generate(), Keypair.generate(), Keypair.generate()];

  beforeAll(async () => {
    // slots every 400 ms, as a cluster: heads come by themselves, finality follows time
    f = await startSolanaFacade({ finalityLag: 2, slotIntervalMs: 400 });
    gw = await startTestGateway({ ROLE: 'api', SANDBOX_SOLANA_CONFIRMATIONS: '1' }, { rpcOverrides: { 'sandbox:SOLANA': [f.url] } });
    mint = await f.createUsdcMint();
    customer = await f.fundedKeypair(10);
    await f.mintTo(customer.publicKey, mint, 10n ** 12n);
    const em = gw.app.orm.em.fork();
    const c = em.getConnection();
    await c.execute(`update tokens set active = false where environment = 'sandbox' and network = 'SOLANA'`);
    await gw.app.tokens.upsert(em, {
      environment: 'sandbox',
      network: 'SOLANA',
      symbol: 'USDC',
      name: 'USD Coin (facade)',
      address: mint.toBase58(),
      decimals: 6,
    });
    await em.flush();
    const tokenId = (
      await c.execute<{ id: string }[]>(`select id from tokens where environment = 'sandbox' and network = 'SOLANA' and address = ?`, [mint.toBase58()])
    )[0]!.id;
    await c.execute(`insert into merchants (id, name) values ('${MERCHANT}', 'SOLANA push')`);
    await c.execute(
      `insert into merchant_wallets (id, merchant_id, environment, mnemonic_ciphertext) values ('${WALLET_ID}', '${MERCHANT}', 'sandbox', 'fixture')`,
    );
    for (const [i, o] of owners.entries()) {
      await c.execute(
        `with o as (insert into orders (id, merchant_id, environment, order_no, amount, expires_at, created_at, updated_at)
                    values (md5('po' || ?::text)::uuid, ?, 'sandbox', 'SOLPUSH-' || ?::text, 150000, now() + interval '1 day', now(), now()) returning id)
         , q as (insert into quotes (id, order_id, token_id, network, decimals, rate_source, crypto_rate, amount_idr, amount_crypto, fee_percent, fee_included,
                                     fee_amount_idr, fee_amount_crypto, total_idr, total_crypto, merchant_receives_idr, merchant_receives_crypto)
                 select md5('pq' || ?::text)::uuid, o.id, ?, 'SOLANA', 6, 'fallback', '16250', 150000, 9230769, '1', true, 1500, 92308, 150000, 9230779, 148500, 9138461 from o returning id, order_id)
         insert into deposits (id, order_id, token_id, quote_id, wallet_id, environment, network, family, derivation_index, address, wallet_type,
                               unique_code, unique_code_amount, total_amount, total_amount_fiat, expires_at, created_at)
         select md5('pd' || ?::text)::uuid, q.order_id, ?, q.id, ?, 'sandbox', 'SOLANA', 'solana', ?, ?, 'PHANTOM', 1, 10, 9230779, 150000, now() + interval '1 day', now() from q`,
        [i, MERCHANT, i, i, tokenId, i, tokenId, WALLET_ID, i, o.publicKey.toBase58()],
      );
    }
    const [base] = watchedNetworks(gw.app.config, { 'sandbox:SOLANA': [f.url] }).filter((t) => t.environment === 'sandbox' && t.network === 'SOLANA');
    // a fast backoff ceiling keeps the test short; the rules are the production ones
    target = { ...base!, adapter: createSolanaAdapter(base!.config, { wsUrls: [solanaWsUrl(f.url)], heads: { backoffBaseMs: 50, backoffMaxMs: 500 } }) };
  });

  afterAll(async () => {
    await target?.adapter.close();
    await gw?.close();
    await f?.stop();
  });

  /**
   * The customer pays `owner` without the facade's WebSocket (refused during the drop, and web3.js's
   * sendAndConfirmTransaction waits on a signatureSubscribe): sent raw, its status polled over HTTP.
   */
  async function payOverHttp(owner: PublicKey, amount: bigint): Promise<string> {
    const c = f.connection;
    const dest = getAssociatedTokenAddressSync(mint, owner);
    const tx = new Transaction().add(
      createAssociatedTokenAccountIdempotentInstruction(customer.publicKey, dest, owner, mint),
      createTransferCheckedInstruction(getAssociatedTokenAddressSync(mint, customer.publicKey), mint, dest, customer.publicKey, amount, 6),
    );
    tx.feePayer = customer.publicKey;
    tx.recentBlockhash = (await c.getLatestBlockhash('confirmed')).blockhash;
    tx.sign(customer);
    const sig = await c.sendRawTransaction(tx.serialize());
    await eventually(async () => (await c.getSignatureStatus(sig)).value?.confirmationStatus !== undefined, 'the payment is confirmed');
    return sig;
  }

  const paymentsOf = (sig: string) =>
    gw.app.orm.em
      .getConnection()
      .execute<{ n: string }[]>(`select count(*)::text as n from payments where environment = 'sandbox' and network = 'SOLANA' and tx_hash = ?`, [sig])
      .then((r) => Number(r[0]!.n));

  it('payments before, during and after a dropped socket are each recorded once', async () => {
    const watcher = createChainWatcher(gw.app, target);
    let state: State = 'down';
    let wakes = 0;
    let timerTicks = 0;
    let running = true;
    let wake: (() => void) | null = null;
    const wakeUp = () => {
      const w = wake;
      wake = null;
      w?.();
    };
    const sub = target.adapter.subscribeHeads!(
      () => {
        wakes++;
        wakeUp();
      },
      (s) => {
        state = s;
        wakeUp(); // the loop re-arms: the polling timer while down, none while open
      },
    );
    // The loop: a tick per head; a polling timer only while the socket is down (the fallback).
    const loop = (async () => {
      while (running) {
        await new Promise<void>((resolve) => {
          wake = resolve;
          if (state === 'down') {
            setTimeout(() => {
              if (wake === resolve) {
                timerTicks++;
                wakeUp();
              }
            }, 500);
          }
        });
        if (running) await watcher.tick(gw.app.orm.em.fork()).catch(() => undefined);
      }
    })();
    try {
      await eventually(async () => state === 'open' && wakes > 0, 'the watcher is woken by heads');
      const before = await f.transfer(customer, owners[0]!.publicKey, mint, 9_230_779n);
      await eventually(async () => (await paymentsOf(before)) === 1, 'the payment before the drop', 60_000);
      const timerTicksBefore = timerTicks;

      f.setSocketsRefused(true);
      f.dropSockets();
      await eventually(async () => state === 'down', 'the drop is seen');
      await eventually(async () => timerTicks > timerTicksBefore, 'the polling fallback runs');
      // no head can come now (every upgrade is refused): only the polling timer wakes the watcher
      const during = await payOverHttp(owners[1]!.publicKey, 9_230_779n);
      await eventually(async () => (await paymentsOf(during)) === 1, 'the payment during the drop (polling fallback)', 60_000);
      expect(state).toBe('down');

      f.setSocketsRefused(false);
      await eventually(async () => state === 'open', 'the socket is back', 60_000);
      const wakesBack = wakes;
      const after = await f.transfer(customer, owners[2]!.publicKey, mint, 9_230_779n);
      await eventually(async () => (await paymentsOf(after)) === 1, 'the payment after the reconnection', 60_000);
      expect(wakes).toBeGreaterThan(wakesBack);

      // more heads, more ticks: still once each, and final
      const settled = async () =>
        (
          await gw.app.orm.em
            .getConnection()
            .execute<{ n: string }[]>(
              `select count(*)::text as n from payments where environment = 'sandbox' and network = 'SOLANA' and tx_hash in (?, ?, ?) and status = 'confirmed'`,
              [before, during, after],
            )
        )[0]!.n === '3';
      await eventually(settled, 'all three confirmed', 60_000);
      for (const sig of [before, during, after]) expect(await paymentsOf(sig)).toBe(1);
    } finally {
      running = false;
      wakeUp();
      await loop;
      await sub.close();
    }
  });
});
