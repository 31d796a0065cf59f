import type { EntityManager } from '@mikro-orm/postgresql';
import { prepared } from '../../db/prepared.js';
import type { Logger } from 'pino';
import {
  BlockUnavailableError,
  isFinal,
  pollEveryToken,
  type AccountPollObservation,
  type ChainAdapter,
  type ChainHead,
  type LogScanObservation,
  type ObservedTransfer,
  type WatchedToken,
} from '../../chains/chain-adapter.js';
import type { WatchedNetwork } from '../../chains/networks.js';
import { ChainDisagreementError, describeIdentity, sameChain, WrongChainError, type ChainIdentity, type ProviderStatus } from '../../chains/chain-identity.js';
import type { Environment, Network } from '../../common/environment.js';
import type { TokenService } from '../tokens/token.service.js';
import type { MatchedTransfer, PaymentService, RecordResult } from './payment.service.js';
import type { SettlementService } from './settlement.service.js';
import type { WatcherLagSnapshot } from '../metrics/gateway-metrics.js';
import type { WatcherProvider } from './watcher-health.js';
import type { UnattributedReceiptService, UnattributedTransfer } from './unattributed-receipt.service.js';

interface WatchEntry {
  depositId: string;
  orderId: string;
  tokenId: string;
  tokenAddress: string;
  owner: string;
  cursor: string | null;
  /** The deposit's network: another network of the same family when the address is only watched for `wrong_network` receipts. */
  network: Network;
  /** When the order's late window ends (ms): the deposit closes then, and per-address polling slows down. */
  closesAt: number;
  /** Account polling: the adapter's snapshot of the deposit's accounts at their last full listing (null: none yet), and when it was read (ms, 0: never). */
  seen: string | null;
  seenAt: number;
  /** Account polling: a sweep out of the deposit moved since `seenAt`; list its history even if its accounts look unchanged. */
  recheck: boolean;
}

/** Clock difference allowed between this process and the database when comparing a sweep's update with a snapshot's time. */
const SWEEP_CLOCK_SLACK_MS = 60_000;

export interface WatcherDeps {
  payments: PaymentService;
  settlement: SettlementService;
  tokens: TokenService;
  receipts: UnattributedReceiptService;
  lateWindowS: number;
  /** How long a closed deposit's address stays watched (for `late` receipts) after its late window. */
  closedWatchS: number;
  /** Account-polling chains poll closed deposits once every this many ticks. */
  closedPollEvery: number;
  startLookbackBlocks: number;
  /** Blocks scanned per tick at most (several adapter chunks). */
  maxBlocksPerTick: number;
  /** Re-check of confirmed payments' blocks (deep reorgs after confirmation); absent or windowS 0: off. */
  reorgRecheck?: { windowS: number; intervalMs: number; maxBlocks: number };
  log: Logger;
  /** A sandbox watcher found its provider on a new chain (a restarted dev chain) and restarted its cursor there (metrics). */
  onNewChain?: (w: { environment: Environment; network: Network; from: ChainIdentity; to: ChainIdentity }) => void;
}

/** Where a watcher stands, as `/readyz` details and `watcher_health` show it (no URL: provider hosts only). */
export interface WatcherHealthSnapshot {
  environment: Environment;
  network: Network;
  headBlock: bigint | null;
  scannedBlock: bigint | null;
  /** When a tick last completed (ms), null: never. */
  lastOkAt: number | null;
  /** When a tick last failed, and why (log-safe message). */
  lastErrorAt: number | null;
  lastError: string | null;
  caughtUpAt: number | null;
  startedAt: number;
  identity: ChainIdentity | null;
  providers: WatcherProvider[];
}

/** A head's block read while the watch set loads (ChainWatcher.readTipEarly). */
interface EarlyTip {
  block: { number: bigint; hash: string };
  /** The watched tokens it was read for (address keys). */
  tokens: string;
  read: Promise<{ transfers: ObservedTransfer[]; native: ObservedTransfer[] }>;
  /** What a failed read is turned into (a pushed tip the provider cannot read). */
  failed?: (err: unknown) => unknown;
}

/** Thrown inside a tick when the provider turned out to serve another chain mid-tick: the tick ends, nothing of it is kept. */
class ChainSwitched extends Error {}

/** Thrown inside a tick when the RPC provider does not know the block a pushed head named (a socket's word the provider does not share). */
class PushedTipUnusable extends Error {
  constructor(cause: unknown) {
    super(cause instanceof Error ? cause.message : String(cause));
  }
}

/** A head as this tick got it: `pushed` when it is a push subscription's announcement (not read from the RPC provider). */
type TickHead = ChainHead & { pushed?: true };

/**
 * The watch set holds every deposit address of the chain family (closed ones for `closedWatchS` too),
 * loaded incrementally by creation time; whether a matched deposit is still open is read from the
 * database when its transfer is recorded. The full reload only drops deposits past their retention,
 * so it is rare: with 30 days of closed deposits it is the expensive query.
 */
export const FULL_RELOAD_MS = 10 * 60_000;
/**
 * Incremental loads re-read deposits created this long before the newest one seen: `created_at` is
 * stamped before the inserting transaction commits, so a deposit can become visible after a newer
 * one was already loaded (concurrent checkouts, API clocks a little apart). Missing it until the next
 * full reload would let the scan pass over its payment for good.
 */
const COMMIT_SLACK_MS = 5_000;
const REORG_REWIND = 64n;
/** Orders settled in one transaction at most (a block's orders usually fit in one). */
const SETTLE_BATCH = 50;
/** Orders settled in parallel one by one (after a refused batch; each holds one pooled connection of 20 while it runs). */
const SETTLE_CONCURRENCY = 8;
/** Block-hash calls in flight at once during the deep-reorg re-check. */
const RECHECK_BATCH = 8;

/**
 * Observes one (environment, network): records transfers into watched deposit addresses as payments,
 * confirms or orphans them, and asks the settlement service to re-evaluate the orders it touched.
 * It never decides an order's status itself. Network calls happen outside transactions; payments and
 * the cursor that covers them commit together, so a restart resumes with nothing missed or doubled.
 */
export class ChainWatcher {
  readonly environment: Environment;
  readonly network: Network;
  private readonly adapter: ChainAdapter;
  private readonly confirmations: number;
  private watch = new Map<string, WatchEntry>(); // key: the driver's addressKey of the address watched on chain
  private lastDepositSeen = new Date(0);
  private lastFullReload = 0;
  private tokens: (WatchedToken & { id: string })[] = [];
  /** Scanned tokens by address key (the match looks up each transfer's token). */
  private tokenByKey = new Map<string, WatchedToken & { id: string }>();
  private ticks = 0;
  /** Orders whose settlement failed last tick: settled again next tick (their payments are already recorded). */
  private unsettled = new Set<string>();
  // Where the watcher stands, for metrics (lag()).
  private headBlock: bigint | null = null;
  private scannedBlock: bigint | null = null;
  private caughtUpAt: number | null = null;
  private readonly startedAt = Date.now();
  /** When the confirmed blocks were last re-checked (0: due now, e.g. after a reorg below the cursor). */
  private lastRecheck = 0;
  /**
   * The chain this watcher's cursor belongs to, and since when (payments detected before that belong
   * to an earlier chain behind the same URL: never confirmed, orphaned or reorged by this chain's
   * hashes). Undefined until loaded from `chain_cursors`; null when nothing was stored yet.
   */
  private chain: { identity: ChainIdentity; since: Date } | null | undefined;
  /** When the head was last seen below the cursor and the chain identity probed for it (throttle). */
  private lastBelowCursorCheck = 0;
  private lastOkAt: number | null = null;
  /** The cursor this watcher committed last (a hint for reading the next block early; the stored one decides). */
  private savedCursor: { block: bigint; hash: string } | null = null;
  /** The newest head a push subscription announced and no tick has used yet. */
  private pushed: { number: bigint; hash: string; parentHash: string } | null = null;
  /** Pending payments and receipts whose block hash was checked at head tip `tip` (unchanged tip: nothing to read again). */
  private checkedAt: { tip: string; ids: Set<string> } | null = null;
  private lastErrorAt: number | null = null;
  private lastError: string | null = null;

  constructor(
    target: WatchedNetwork,
    private readonly deps: WatcherDeps,
  ) {
    this.environment = target.environment;
    this.network = target.network;
    this.adapter = target.adapter;
    this.confirmations = target.config.confirmations;
  }

  /** Watched addresses right now (tests and metrics). */
  get watchedCount(): number {
    return this.watch.size;
  }

  /** Head seen, block scanned, and when everything up to the head was last scanned (metrics: watcher lag). */
  lag(): WatcherLagSnapshot {
    return {
      environment: this.environment,
      network: this.network,
      headBlock: this.headBlock,
      scannedBlock: this.scannedBlock,
      caughtUpAt: this.caughtUpAt,
      startedAt: this.startedAt,
    };
  }

  private scanned(block: bigint, head: bigint): void {
    this.scannedBlock = block;
    if (block >= head) this.caughtUpAt = Date.now();
  }

  /** The network's providers (host only) with their chain-identity state (metrics). */
  providers(): ProviderStatus[] {
    return this.adapter.identity.providers();
  }

  /** Everything `/readyz` and `watcher_health` show about this watcher. */
  health(): WatcherHealthSnapshot {
    return {
      environment: this.environment,
      network: this.network,
      headBlock: this.headBlock,
      scannedBlock: this.scannedBlock,
      lastOkAt: this.lastOkAt,
      lastErrorAt: this.lastErrorAt,
      lastError: this.lastError,
      caughtUpAt: this.caughtUpAt,
      startedAt: this.startedAt,
      identity: this.chain?.identity ?? null,
      providers: this.providerDetails(),
    };
  }

  /** Each provider's chain identity and health score, in configured order (host only). */
  private providerDetails(): WatcherProvider[] {
    const scores = this.adapter.providerHealth.snapshot();
    const best = scores.reduce<bigint | null>((m, p) => (p.head === null ? m : m === null || p.head > m ? p.head : m), null);
    return this.adapter.identity.providers().map((p, i) => {
      const score = scores[i];
      if (!score) return p;
      return {
        ...p,
        health: score.state,
        rank: score.rank,
        errorRate: score.errorRate,
        latencyMs: score.latencyMs,
        head: score.head?.toString() ?? null,
        lagBlocks: score.head !== null && best !== null ? (best - score.head).toString() : null,
        lastFailure: score.lastReason,
        retryAt: score.retryAt,
      };
    });
  }

  /**
   * Push: subscribes to the adapter's new heads (where it has them); each head is kept for the next
   * tick (EVM: its hash and parent hash spare the head read) and `wake` is called so the job polls at
   * once. Returns null when the adapter has no push. A hint only: polling stays the fallback.
   */
  subscribe(wake: () => void, onState?: (state: 'open' | 'down') => void): { close(): Promise<void> } | null {
    if (!this.adapter.subscribeHeads) return null;
    return this.adapter.subscribeHeads((head) => {
      if (head.hash && head.parentHash && (this.pushed === null || head.number >= this.pushed.number))
        this.pushed = { number: head.number, hash: head.hash, parentHash: head.parentHash };
      wake();
    }, onState);
  }

  /**
   * The head for this tick: the pushed one when it is new (depth finality only: it tells no
   * `finalized` block), else read from the node.
   */
  private async head(): Promise<TickHead> {
    const pushed = this.pushed;
    this.pushed = null;
    if (pushed && this.adapter.finality === 'depth' && (this.headBlock === null || pushed.number > this.headBlock)) {
      const depth = BigInt(this.confirmations);
      return {
        latest: pushed.number,
        finalized: pushed.number > depth ? pushed.number - depth : 0n,
        tip: { hash: pushed.hash, parentHash: pushed.parentHash },
        pushed: true,
      };
    }
    return this.adapter.getHead();
  }

  /** One pass: refresh the watch set, scan new blocks (or poll deposits), confirm, settle. */
  async tick(em: EntityManager): Promise<{ recorded: number; settled: number }> {
    try {
      const r = await this.pass(em);
      this.lastOkAt = Date.now();
      return r;
    } catch (err) {
      if (err instanceof ChainSwitched) {
        this.lastOkAt = Date.now();
        return { recorded: 0, settled: 0 };
      }
      // sandbox: every provider moved to a new chain (the calls failed as refused): follow it
      if (this.environment === 'sandbox' && this.chain && (await this.adoptNewChain(em).catch(() => false))) {
        this.lastOkAt = Date.now();
        return { recorded: 0, settled: 0 };
      }
      this.lastErrorAt = Date.now();
      // shown by `/readyz`: URLs cut to their host (paths and queries may carry API keys)
      this.lastError = (err instanceof Error ? err.message : String(err)).replace(/\b(https?|wss?):\/\/([^/\s"'@]*@)?([^/\s"']+)[^\s"']*/g, '$1://$3');
      if (err instanceof WrongChainError) {
        this.deps.log.error(
          { network: this.network, environment: this.environment, provider: err.provider, got: describeIdentity(err.got) },
          'no provider serves the expected chain; the watcher waits',
        );
      }
      if (err instanceof ChainDisagreementError) {
        this.deps.log.error(
          { network: this.network, environment: this.environment, served: err.served.map((s) => `${s.provider}: ${describeIdentity(s.identity)}`) },
          'providers serve different chains and none is expected; the watcher waits',
        );
      }
      throw err;
    }
  }

  private async pass(em: EntityManager): Promise<{ recorded: number; settled: number }> {
    // Production: the stored identity is pinned before the first call, so no provider on another
    // chain answers a single call of this watcher.
    if (this.chain === undefined) await this.loadChain(em);
    // Head first, then the watch set: a transfer in a block up to this head was mined before the head
    // was read, so its deposit (committed before the payer could see the address) is in the set loaded
    // next. The other way round, a deposit committed and paid between the two reads was scanned past.
    let head = await this.head();
    this.headBlock = head.latest;
    // The head's provider serves the chain the cursor belongs to (or, sandbox, a new chain: restarted there).
    await this.followChain(em, head, false);
    const observation = this.adapter.observation;
    // The cursor is read beside the watch set. A head on top of the cursor this watcher saved last
    // (each pushed head, usually) is read from the node meanwhile; its transfers are matched only
    // once the watch set is loaded, and the read is used only if the stored cursor and the tokens
    // turn out as expected (bench:detect).
    const loaded = Promise.all([this.refreshWatchSet(em), observation.kind === 'log-scan' ? this.cursor(em, head) : null]);
    const early = this.readTipEarly(head, loaded);
    const [, cursor] = await loaded;
    const touched = new Set<string>(this.unsettled);
    let recorded: number;
    if (observation.kind === 'log-scan') {
      try {
        recorded = await this.scanRange(em, head, cursor!, observation, touched, early);
      } catch (err) {
        if (!(err instanceof PushedTipUnusable)) throw err;
        // A pushed tip the (verified) RPC provider does not know: the socket's word is dropped and the
        // head read from the provider, in this same tick.
        this.deps.log.warn(
          { network: this.network, environment: this.environment, block: head.latest.toString(), err: err.message },
          'a pushed head could not be read from the provider; the head is read from it instead',
        );
        head = await this.adapter.getHead();
        this.headBlock = head.latest;
        await this.followChain(em, head, false);
        // head first, then the watch set (as above): a deposit paid in a block up to this newer head is in the set
        const [, again] = await Promise.all([this.refreshWatchSet(em), this.cursor(em, head)]);
        recorded = await this.scanRange(em, head, again, observation, touched);
      }
    } else recorded = await this.pollDeposits(em, observation, touched);
    // Account polling reads every watched deposit up to now in one pass: a finished pass is caught up.
    if (observation.kind !== 'log-scan') this.scanned(head.latest, head.latest);
    // Pending payments and receipts are checked side by side (different tables, no shared rows).
    const [confirmed] = await Promise.all([this.confirm(em, head), this.confirmReceipts(em, head)]);
    for (const id of confirmed) touched.add(id);
    for (const id of await this.recheckConfirmed(em)) touched.add(id);
    // The orders touched settle together, SETTLE_BATCH per transaction (one commit for a block's
    // orders: bench:detect). A batch the database refuses is settled again one order at a time, a few
    // at once, so one order that cannot settle holds back no other: it is logged and retried next tick.
    const queue: string[] = [];
    const all = [...touched];
    this.unsettled = new Set();
    for (let i = 0; i < all.length; i += SETTLE_BATCH) {
      const batch = all.slice(i, i + SETTLE_BATCH);
      if (batch.length === 1) queue.push(...batch);
      else
        await this.deps.settlement.settleMany(em, batch).catch((err: unknown) => {
          this.deps.log.warn(
            { err: err instanceof Error ? err.message : String(err), orders: batch.length, network: this.network, environment: this.environment },
            'settling orders together failed; settling them one by one',
          );
          queue.push(...batch);
        });
    }
    await Promise.all(
      Array.from({ length: Math.min(SETTLE_CONCURRENCY, queue.length) }, async () => {
        for (let id = queue.shift(); id !== undefined; id = queue.shift()) {
          try {
            await this.deps.settlement.settle(em, id);
          } catch (err) {
            this.unsettled.add(id);
            this.deps.log.error({ err, orderId: id, network: this.network, environment: this.environment }, 'settling an order failed; retrying next tick');
          }
        }
      }),
    );
    return { recorded, settled: touched.size };
  }

  /**
   * Reads `head`'s block (scanBlock) when it lies on top of the cursor this watcher committed last and
   * tokens are watched: the read starts at once, the match waits for `loaded` (the watch set). Null
   * otherwise. A failed read fails nothing: the scan reads again.
   */
  private readTipEarly(head: ChainHead, loaded: Promise<unknown>): EarlyTip | null {
    const obs = this.adapter.observation;
    const saved = this.savedCursor;
    if (obs.kind !== 'log-scan' || !obs.scanBlock || !head.tip || !saved?.hash || !this.tokens.length) return null;
    if (head.latest !== saved.block + 1n || head.tip.parentHash !== saved.hash) return null;
    const tokens = this.tokens;
    const block = { number: head.latest, hash: head.tip.hash };
    const read = obs.scanBlock(block, tokens, (addr) => this.watch.has(this.key(addr)), loaded);
    read.catch(() => undefined); // used (and its failure seen) only by scanTip
    return { block, tokens: tokens.map((t) => this.key(t.address)).join(','), read };
  }

  private key(address: string): string {
    return this.adapter.driver.addressKey(address);
  }

  /**
   * Incremental: new deposits every tick; a rare full reload drops those past retention. Every deposit
   * of the chain family is in the set, whatever its status or network: an address of another network
   * of the family (the EVM address on the other EVM chain) and a closed deposit still receive
   * transfers, and those are recorded as unattributed receipts, never lost.
   */
  private async refreshWatchSet(em: EntityManager): Promise<void> {
    const now = Date.now();
    const full = now - this.lastFullReload > FULL_RELOAD_MS;
    const oldest = new Date(now - (this.deps.lateWindowS + this.deps.closedWatchS) * 1000);
    // The registry is read every tick (a few rows), beside the deposits: see below.
    const [rows, tokens] = await Promise.all([
      prepared<{
        id: string;
        order_id: string;
        token_id: string;
        network: Network;
        address: string;
        token_address: string;
        cursor: string | null;
        watch_seen: string | null;
        watch_seen_at: Date | null;
        created_at: Date;
        expires_at: Date;
      }>(
        em,
        full ? 'watch_deposits_all' : 'watch_deposits_since',
        `select d.id, d.order_id, d.token_id, d.network, d.address, t.address as token_address, d.cursor, d.watch_seen, d.watch_seen_at, d.created_at, o.expires_at
       from deposits d join tokens t on t.id = d.token_id join orders o on o.id = d.order_id
       where d.environment = ? and d.family = ? and o.expires_at > ? ${full ? '' : 'and d.created_at > ?'}
       order by d.created_at`,
        full
          ? [this.environment, this.adapter.family, oldest]
          : [this.environment, this.adapter.family, oldest, new Date(this.lastDepositSeen.getTime() - COMMIT_SLACK_MS)],
      ),
      this.deps.tokens.listActive(em, this.environment, this.network),
    ]);
    const before = this.watch;
    if (full) {
      this.watch = new Map();
      this.lastFullReload = now;
    }
    // The registry is read every tick (a few rows): a token activated since the last tick is scanned at
    // once, for its first deposit's payment and as a `wrong_token` receipt at every other deposit (read
    // only at a full reload, a token registered after start went unscanned for up to 10 minutes).
    this.tokens = tokens.map((t) => ({
      id: t.id,
      address: t.address,
      decimals: t.decimals,
      symbol: t.symbol,
    }));
    this.tokenByKey = new Map(this.tokens.map((t) => [this.key(t.address), t]));
    for (const r of rows) {
      const closesAt = new Date(r.expires_at).getTime() + this.deps.lateWindowS * 1000;
      const key = this.key(r.address);
      // A recheck not yet done survives a reload (the sweep that asked for it may be older than the next sweep query reaches).
      const recheck = before.get(key)?.recheck === true;
      const seenAt = r.watch_seen_at ? new Date(r.watch_seen_at).getTime() : 0;
      this.watch.set(key, {
        depositId: r.id,
        orderId: r.order_id,
        tokenId: r.token_id,
        tokenAddress: r.token_address,
        owner: r.address,
        cursor: r.cursor,
        network: r.network,
        closesAt,
        seen: r.watch_seen,
        seenAt,
        recheck,
      });
      if (new Date(r.created_at) > this.lastDepositSeen) this.lastDepositSeen = new Date(r.created_at);
    }
  }

  /**
   * Sorts transfers into deposit addresses: the deposit's own token on its own network is a payment
   * candidate (a closed deposit's turns into a `late` receipt when recorded); another watched token is
   * a `wrong_token` receipt; a token of this network at an address of another network of the family is
   * a `wrong_network` receipt. Receipts never count toward an order.
   */
  private match(transfers: ObservedTransfer[]): { payments: MatchedTransfer[]; receipts: UnattributedTransfer[] } {
    const payments: MatchedTransfer[] = [];
    const receipts: UnattributedTransfer[] = [];
    for (const t of transfers) {
      // Not a receipt: a zero amount (anyone can send one to any deposit address for the price of
      // gas; recorded, it broke the `amount > 0` check and froze the network), or a deposit address
      // paying itself (nothing came in).
      if (t.amount <= 0n || this.key(t.from) === this.key(t.to)) continue;
      const entry = this.watch.get(this.key(t.to));
      if (!entry) continue;
      const token = this.tokenByKey.get(this.key(t.token));
      if (!token) continue; // not a registry token of this network (the scan asks only for those)
      const base = { transfer: t, depositId: entry.depositId, orderId: entry.orderId };
      if (entry.network !== this.network) receipts.push({ ...base, tokenId: token.id, reason: 'wrong_network' });
      else if (token.id !== entry.tokenId) receipts.push({ ...base, tokenId: token.id, reason: 'wrong_token' });
      else payments.push({ ...base, tokenId: entry.tokenId });
    }
    return { payments, receipts };
  }

  /**
   * Native coin sent to deposit addresses (any deposit of the family, like a token): `native_coin`
   * receipts. Not a receipt: a zero amount, an address paying itself, and the gas tank's own funding
   * transactions (top-ups and activations are in `sweep_txs`, and a refund's top-up on its refund,
   * each stored before it was broadcast).
   */
  private async matchNative(em: EntityManager, transfers: ObservedTransfer[]): Promise<UnattributedTransfer[]> {
    const seen = transfers.filter((t) => t.amount > 0n && this.key(t.from) !== this.key(t.to) && this.watch.has(this.key(t.to)));
    if (!seen.length) return [];
    const ours = new Set(
      (
        await em.execute<{ tx_hash: string }[]>(
          `select tx_hash from sweep_txs where environment = ? and network = ? and tx_hash in (${seen.map(() => '?').join(',')})
           union all
           select f.value->>'txHash' from refunds r cross join lateral jsonb_array_elements(r.funding_raw::jsonb) f
           where r.environment = ? and r.network = ? and r.funding_raw is not null and f.value->>'txHash' in (${seen.map(() => '?').join(',')})`,
          [this.environment, this.network, ...seen.map((t) => t.txHash), this.environment, this.network, ...seen.map((t) => t.txHash)],
        )
      ).map((r) => r.tx_hash.toLowerCase()),
    );
    return seen
      .filter((t) => !ours.has(t.txHash.toLowerCase()))
      .map((t) => {
        const entry = this.watch.get(this.key(t.to))!;
        return { transfer: t, depositId: entry.depositId, orderId: entry.orderId, tokenId: null, reason: 'native_coin' as const };
      });
  }

  /**
   * Records what a scan or poll matched, inside the cursor's transaction. Payment candidates whose
   * deposit is closed become `late` receipts: the deposit rows are read FOR SHARE, so the expiry job
   * cannot close one between this check and the insert (it waits for this commit).
   */
  private async recordAll(
    tx: EntityManager,
    matched: { payments: MatchedTransfer[]; receipts: UnattributedTransfer[] },
    touched: Set<string>,
  ): Promise<number> {
    let payments = matched.payments;
    const receipts = [...matched.receipts];
    const ids = [...new Set(payments.map((m) => m.depositId))];
    if (ids.length) {
      const closed = new Set(
        (
          await prepared<{ id: string }>(
            tx,
            'watch_closed_deposits',
            `select id from deposits where id in (select value::uuid from jsonb_array_elements_text(?::jsonb)) and status = 'closed' for share`,
            [JSON.stringify(ids)],
          )
        ).map((r) => r.id),
      );
      if (closed.size) {
        receipts.push(...payments.filter((m) => closed.has(m.depositId)).map((m) => ({ ...m, reason: 'late' as const })));
        payments = payments.filter((m) => !closed.has(m.depositId));
      }
    }
    const { failed } = await this.record(tx, payments, touched);
    const r = await this.deps.receipts.record(tx, this.environment, this.network, receipts);
    for (const f of r.failed) {
      this.deps.log.error(
        { network: this.network, environment: this.environment, txHash: f.transfer.txHash, index: f.transfer.index, depositId: f.depositId, err: f.error },
        'unattributed receipt could not be recorded; set aside in watcher_failures, the scan goes on',
      );
    }
    return payments.length - failed.length + receipts.length - r.failed.length;
  }

  /** Records matched transfers (inside the cursor's transaction); those the database refused are set aside and raised as alerts. */
  private async record(tx: EntityManager, matched: MatchedTransfer[], touched: Set<string>): Promise<RecordResult> {
    const result = await this.deps.payments.record(tx, this.environment, this.network, matched);
    for (const id of result.touched) touched.add(id);
    for (const f of result.failed) {
      const t = f.transfer;
      this.deps.log.error(
        {
          network: this.network,
          environment: this.environment,
          txHash: t.txHash,
          index: t.index,
          depositId: f.depositId,
          amount: t.amount.toString(),
          err: f.error,
        },
        'transfer could not be recorded; set aside in watcher_failures, the scan goes on',
      );
    }
    return result;
  }

  /** Log-scanning chains: scan (cursor, latest] in chunks, after checking the cursor block is still canonical. */
  private async scanRange(
    em: EntityManager,
    head: TickHead,
    stored: { block: bigint; hash: string | null },
    scan: LogScanObservation,
    touched: Set<string>,
    early: EarlyTip | null = null,
  ): Promise<number> {
    let cursor = stored;
    // A head below the cursor: a lagging node, or another chain behind the URL (a restarted dev chain
    // starts low). The identity says which (probed at most every 10 s for this).
    if (head.latest < cursor.block && Date.now() - this.lastBelowCursorCheck > 10_000) {
      this.lastBelowCursorCheck = Date.now();
      await this.followChain(em, head, true);
    }
    // The head tip proves the cursor still canonical without a read: the cursor IS the head (nothing
    // new), or the head's parent (one new block, read by its hash: its logs cannot straddle a reorg).
    if (head.tip && cursor.hash && this.tokens.length) {
      if (head.latest === cursor.block && head.tip.hash === cursor.hash) {
        this.scanned(cursor.block, head.latest);
        return 0;
      }
      if (head.latest === cursor.block + 1n && head.tip.parentHash === cursor.hash && scan.scanBlock) {
        const scanBlock = scan.scanBlock;
        // a pushed tip the provider does not know is the socket's word only: the tick reads the head
        // instead (pass); any other failure (a rate limit, a timeout) fails the tick as a read would
        const failed = (err: unknown): unknown => (head.pushed && err instanceof BlockUnavailableError ? new PushedTipUnusable(err) : err);
        const read: typeof scanBlock = (...args) =>
          scanBlock(...args).catch((err: unknown) => {
            throw failed(err);
          });
        return this.scanTip(em, head, { number: head.latest, hash: head.tip.hash }, read, touched, early && { ...early, failed });
      }
    }
    if (cursor.hash) {
      const canonical = await this.adapter.getBlockHash(cursor.block);
      // Another chain is never a reorg: its identity is checked before anything is rewound.
      if (canonical && canonical !== cursor.hash) await this.followChain(em, head, true);
      if (canonical && canonical !== cursor.hash) {
        // Reorg below our cursor: rewind and rescan. Orphaned payments are caught by confirm();
        // re-included ones are re-recorded with their new block.
        const back = cursor.block > REORG_REWIND ? cursor.block - REORG_REWIND : 0n;
        this.deps.log.warn(
          { network: this.network, environment: this.environment, from: cursor.block.toString(), to: back.toString() },
          'reorg detected; rescanning',
        );
        cursor = { block: back, hash: null };
        this.lastRecheck = 0; // it may reach below confirmed payments: re-check them this tick
      }
    }
    if (head.latest <= cursor.block || this.tokens.length === 0) {
      if (this.tokens.length === 0) await this.saveCursor(em, head.latest, null);
      this.scanned(this.tokens.length === 0 ? head.latest : cursor.block, head.latest);
      return 0;
    }
    const to = head.latest - cursor.block > BigInt(this.deps.maxBlocksPerTick) ? cursor.block + BigInt(this.deps.maxBlocksPerTick) : head.latest;
    const watch = this.watch;
    // The cursor's hash is read BEFORE the logs: if the chain reorganises during the scan, the cursor
    // keeps the old hash and the next tick's check above rewinds and rescans. (Read after, it would
    // carry the new chain's hash over logs of the old one: a transfer re-included in another block
    // would be orphaned by confirm() and never scanned again.)
    // (a pushed tip's hash may stand as the cursor's: the next tick's parent link or hash check proves or rewinds it)
    const toHash = to === head.latest && head.tip ? head.tip.hash : await this.adapter.getBlockHash(to);
    if (!toHash) return 0; // the node does not serve `to` yet (lagging node behind a failover): next tick
    const transfers = await scan.scanTransfers(cursor.block + 1n, to, this.tokens, (addr) => watch.has(this.key(addr)));
    const matched = this.match(transfers);
    if (scan.scanNative)
      matched.receipts.push(...(await this.matchNative(em, await scan.scanNative(cursor.block + 1n, to, (addr) => watch.has(this.key(addr))))));
    // Logs and hashes may come from different nodes (failover) or straddle a reorg: commit only when
    // the blocks holding matched transfers are still the ones the logs came from.
    const stale = await this.staleBlocks([...matched.payments, ...matched.receipts]);
    if (stale.length) {
      this.deps.log.warn({ network: this.network, environment: this.environment, blocks: stale.map(String) }, 'chain changed during the scan; rescanning');
      return 0;
    }
    const recorded = await em.transactional(async (tx) => {
      const n = await this.recordAll(tx, matched, touched);
      await this.saveCursor(tx, to, toHash);
      return n;
    });
    this.savedCursor = { block: to, hash: toHash };
    this.scanned(to, head.latest);
    return recorded;
  }

  /** One new block on top of the cursor, read by its hash; payments and the cursor commit together. */
  private async scanTip(
    em: EntityManager,
    head: ChainHead,
    block: { number: bigint; hash: string },
    scanBlock: NonNullable<LogScanObservation['scanBlock']>,
    touched: Set<string>,
    early: EarlyTip | null = null,
  ): Promise<number> {
    const watch = this.watch;
    // the early read is this block's with the tokens watched now, or it is not used
    const usable = early && early.block.hash === block.hash && early.tokens === this.tokens.map((t) => this.key(t.address)).join(',');
    // a failed early read fails as a read would (never read again at once: a rate-limited provider gets no second call)
    const { transfers, native } = usable
      ? await early.read.catch((err: unknown) => {
          throw early.failed ? early.failed(err) : err;
        })
      : await scanBlock(block, this.tokens, (addr) => watch.has(this.key(addr)));
    const matched = this.match(transfers);
    // The block may have been replaced since it was read (its logs are still its own): nothing is
    // committed over a block that is no longer canonical; the next tick sees the new tip. The hash is
    // read after the scan, beside the native receipts' database lookup.
    const [nativeReceipts, canonical] = await Promise.all([
      this.matchNative(em, native),
      matched.payments.length || matched.receipts.length || native.length ? this.adapter.getBlockHash(block.number) : Promise.resolve(block.hash),
    ]);
    matched.receipts.push(...nativeReceipts);
    if ((matched.payments.length || matched.receipts.length) && canonical !== block.hash) {
      this.deps.log.warn({ network: this.network, environment: this.environment, block: block.number.toString() }, 'chain changed during the scan; rescanning');
      return 0;
    }
    const settledHere: { ids: string[]; announce: () => void }[] = [];
    const recorded = await em.transactional(async (tx) => {
      settledHere.length = 0;
      const n = await this.recordAll(tx, matched, touched);
      // Already final at this head (one confirmation: the block holding the transfer confirms it): its
      // hash was just checked against the chain, so its payments confirm in this transaction, by the
      // rule confirm() applies, and their orders settle in it too: detection and Success commit
      // together (bench:detect).
      if (matched.payments.length && isFinal(this.adapter.finality, block.number, head, this.confirmations)) {
        const orders = await this.deps.payments.confirmBlock(tx, this.environment, this.network, block.hash);
        for (const id of orders) touched.add(id);
        const settled = await this.settleWithRecording(tx, orders);
        if (settled) settledHere.push(settled);
      }
      await this.saveCursor(tx, block.number, block.hash);
      return n;
    });
    // settled with their payments: not settled again this tick (unless confirm() touches them again)
    for (const s of settledHere) {
      s.announce();
      for (const id of s.ids) touched.delete(id);
    }
    this.savedCursor = { block: block.number, hash: block.hash };
    this.scanned(block.number, head.latest);
    // The provider served a block on top of the cursor's: it is on the watched chain (the periodic
    // identity probe is spared while the hash chain continues).
    this.adapter.identity.vouch?.();
    return recorded;
  }

  /**
   * Settles `orders` inside the recording transaction, under a savepoint: what cannot settle here
   * (a lock another transaction holds, a deadlock, anything) is rolled back alone and settled after
   * the commit like any touched order; the recording commits either way. Orders that failed to
   * settle last tick are left to that path. Null when nothing was settled here.
   */
  private async settleWithRecording(tx: EntityManager, orders: string[]): Promise<{ ids: string[]; announce: () => void } | null> {
    const ids = orders.filter((id) => !this.unsettled.has(id));
    // a block paying more orders than one settlement batch keeps its recording short: they settle after it, in batches
    if (!ids.length || ids.length > SETTLE_BATCH) return null;
    await tx.execute('savepoint settle_block');
    try {
      const { announce } = await this.deps.settlement.settleWithin(tx, ids);
      await tx.execute('release savepoint settle_block');
      return { ids, announce };
    } catch (err) {
      await tx.execute('rollback to savepoint settle_block');
      this.deps.log.warn(
        { err: err instanceof Error ? err.message : String(err), orders: ids.length, network: this.network, environment: this.environment },
        'settling a block with its payments failed; its orders settle after the recording commits',
      );
      return null;
    }
  }

  /** Blocks of matched transfers whose canonical hash is no longer the one their logs carry. */
  private async staleBlocks(matched: { transfer: ObservedTransfer }[]): Promise<bigint[]> {
    const seen = new Map<bigint, string>();
    const stale: bigint[] = [];
    for (const { transfer } of matched) {
      const known = seen.get(transfer.blockNumber);
      if (known === undefined) seen.set(transfer.blockNumber, transfer.blockHash);
      else if (known !== transfer.blockHash) stale.push(transfer.blockNumber); // two versions of one block in one answer
    }
    for (const [n, hash] of seen) if (!stale.includes(n) && (await this.adapter.getBlockHash(n)) !== hash) stale.push(n);
    return stale;
  }

  /**
   * Account-polling chains: read every watched deposit's token accounts (one per watched token) and
   * list the history, since the deposit's own cursor, only of those that changed since their last
   * listing or that a sweep of ours left since (balance back where it was is no proof then).
   */
  private async pollDeposits(em: EntityManager, poll: AccountPollObservation, touched: Set<string>): Promise<number> {
    // Sweeps first, accounts after: a sweep that landed before the accounts are read is in flight or moved since the last query.
    await this.markSwept(em);
    const startedAt = Date.now();
    // Open deposits every tick; closed ones (kept for `late` receipts) once every `closedPollEvery`
    // ticks, so a month of closed deposits does not multiply the per-address RPC calls.
    const now = Date.now();
    const slowTurn = this.ticks++ % this.deps.closedPollEvery === 0;
    const entries = [...this.watch.values()].filter((e) => e.network === this.network && (slowTurn || e.closesAt > now));
    if (!entries.length) return 0;
    // Every watched token at every owner: the deposit's own (payments) and the others (`wrong_token`).
    // The deposit's own token's account every poll; the others (`wrong_token` receipts) on the slow turn.
    const deposits = pollEveryToken(
      entries.map((e) => ({
        owner: e.owner,
        cursor: e.cursor,
        seen: e.seen,
        recheck: e.recheck,
        reads: (t: WatchedToken) => slowTurn || this.key(t.address) === this.key(e.tokenAddress),
      })),
      this.tokens,
    );
    if (!deposits.length) return 0;
    const { transfers, cursors, seen } = await poll.pollDeposits(deposits);
    const matched = this.match(transfers);
    // Native coin at the same owners (`native_coin` receipts, never an order's payment, so no checkout
    // waits on it): read on the slow turn, which keeps a poll's calls flat in open deposits.
    if (poll.pollNative && slowTurn) matched.receipts.push(...(await this.matchNative(em, await poll.pollNative([...new Set(entries.map((e) => e.owner))]))));
    const updates: { id: string; set_cursor: boolean; cursor: string | null; set_seen: boolean; seen: string | null; seen_at: string }[] = [];
    for (const e of entries) {
      const next = cursors[e.owner];
      const snapshot = seen[e.owner];
      const setCursor = next !== undefined && next !== e.cursor;
      const setSeen = snapshot !== undefined && (snapshot !== e.seen || e.recheck);
      if (setCursor || setSeen) {
        updates.push({
          id: e.depositId,
          set_cursor: setCursor,
          cursor: setCursor ? next! : null,
          set_seen: setSeen,
          seen: setSeen ? snapshot! : null,
          seen_at: new Date(startedAt).toISOString(),
        });
      }
    }
    const recorded = await em.transactional(async (tx) => {
      const n = await this.recordAll(tx, matched, touched);
      if (updates.length) {
        await tx.execute(
          `update deposits d set
             cursor = case when u.set_cursor then u.cursor else d.cursor end,
             watch_seen = case when u.set_seen then u.seen else d.watch_seen end,
             watch_seen_at = case when u.set_seen then u.seen_at else d.watch_seen_at end
           from jsonb_to_recordset(?::jsonb) as u(id uuid, set_cursor boolean, cursor text, set_seen boolean, seen text, seen_at timestamptz)
           where d.id = u.id`,
          [JSON.stringify(updates)],
        );
      }
      return n;
    });
    // Committed: the watch set follows.
    for (const e of entries) {
      const next = cursors[e.owner];
      const snapshot = seen[e.owner];
      if (next !== undefined) e.cursor = next;
      if (snapshot !== undefined) {
        if (snapshot !== e.seen || e.recheck) e.seenAt = startedAt;
        e.seen = snapshot;
        e.recheck = false;
      }
    }
    return recorded;
  }

  /** Until when the last sweep query reached (ms); null: not asked yet, reach back to the oldest stored snapshot. */
  private sweepsQueriedAt: number | null = null;

  /**
   * Flags the deposits a sweep left since their snapshot: every sweep still in flight, and every one
   * updated since the previous query (or, first, since the oldest snapshot) later than the deposit's
   * snapshot. The flag stays until a full listing clears it.
   */
  private async markSwept(em: EntityManager): Promise<void> {
    let floor = this.sweepsQueriedAt;
    if (floor === null) {
      floor = Date.now();
      for (const e of this.watch.values()) if (e.seen !== null && e.seenAt < floor) floor = e.seenAt;
    }
    const queriedAt = Date.now();
    const rows = await em.execute<{ deposit_id: string; last: Date; open: boolean }[]>(
      `select deposit_id, max(updated_at) as last, bool_or(status not in ('confirmed','failed')) as open from sweeps
       where environment = ? and network = ? and (status not in ('confirmed','failed') or updated_at > ?)
       group by deposit_id`,
      [this.environment, this.network, new Date(floor - SWEEP_CLOCK_SLACK_MS)],
    );
    this.sweepsQueriedAt = queriedAt;
    if (!rows.length) return;
    const swept = new Map(rows.map((r) => [r.deposit_id, r]));
    for (const e of this.watch.values()) {
      const s = swept.get(e.depositId);
      if (s && (s.open || new Date(s.last).getTime() > e.seenAt - SWEEP_CLOCK_SLACK_MS)) e.recheck = true;
    }
  }

  /**
   * The ids already checked at `head`'s tip (same head hash: same chain, same depth, so the same
   * verdict); empty when the head moved or tells no tip. A new tip starts a new set.
   */
  private unchangedSince(head: ChainHead): Set<string> {
    if (!head.tip) return new Set();
    if (this.checkedAt?.tip !== head.tip.hash) this.checkedAt = { tip: head.tip.hash, ids: new Set() };
    return new Set(this.checkedAt.ids);
  }

  private checked(head: ChainHead, id: string): void {
    if (head.tip && this.checkedAt?.tip === head.tip.hash) this.checkedAt.ids.add(id);
  }

  /** Pending payments count once final under the adapter's finality rule and still in the canonical chain. */
  private async confirm(em: EntityManager, head: TickHead): Promise<string[]> {
    const pending = await this.deps.payments.pending(em, this.environment, this.network, this.chainSince());
    if (!pending.length) return [];
    const deepEnough = (bn: bigint) => isFinal(this.adapter.finality, bn, head, this.confirmations);
    // the head block's hash came with this tick's head: no read for a payment in it
    // (a pushed head's hash is a socket's word: a payment in that block is checked with the RPC provider)
    const hashes = new Map<bigint, string | null>(head.tip && !head.pushed ? [[head.latest, head.tip.hash]] : []);
    const confirmed: string[] = [];
    const orphaned: string[] = [];
    const touched = new Set<string>();
    const unchanged = this.unchangedSince(head);
    for (const p of pending) {
      // checked at this very tip already, and neither confirmed nor orphaned then: still neither
      if (unchanged.has(p.id)) continue;
      this.checked(head, p.id);
      if (!hashes.has(p.blockNumber)) hashes.set(p.blockNumber, await this.adapter.getBlockHash(p.blockNumber));
      const canonical = hashes.get(p.blockNumber);
      if (canonical && canonical !== p.blockHash) {
        orphaned.push(p.id);
        touched.add(p.orderId);
      } else if (canonical && deepEnough(p.blockNumber)) {
        confirmed.push(p.id);
        touched.add(p.orderId);
      }
    }
    if (orphaned.length) await this.followChain(em, head, true); // another chain is not a reorg
    if (confirmed.length || orphaned.length) {
      await em.transactional(async (tx) => {
        await this.deps.payments.markConfirmed(tx, confirmed);
        await this.deps.payments.markOrphaned(tx, orphaned);
      });
    }
    // Orders with pending payments are also re-settled so they show Processing.
    for (const p of pending) touched.add(p.orderId);
    return [...touched];
  }

  /**
   * Deep reorgs after confirmation: every REORG_RECHECK_INTERVAL_MS (and at once after a reorg below
   * the cursor), the blocks of payments confirmed within REORG_RECHECK_WINDOW_S are compared with the
   * chain, one block-hash call per distinct block. Payments in a replaced block are moved out of
   * confirmed (PaymentService.markReorged) and their orders settled again, which raises the alarm
   * (`payment.reorged`) and takes back a Success whose money is gone. An unknown hash (a lagging node)
   * proves nothing and is checked again next time.
   */
  private async recheckConfirmed(em: EntityManager): Promise<string[]> {
    const cfg = this.deps.reorgRecheck;
    if (!cfg || cfg.windowS <= 0 || Date.now() - this.lastRecheck < cfg.intervalMs) return [];
    this.lastRecheck = Date.now();
    const blocks = await this.deps.payments.confirmedBlocks(
      em,
      this.environment,
      this.network,
      new Date(Date.now() - cfg.windowS * 1000),
      cfg.maxBlocks,
      this.chainSince(),
    );
    // One hash per distinct block number, RECHECK_BATCH calls in flight at a time.
    const numbers = [...new Set(blocks.map((b) => b.blockNumber))];
    const canonical = new Map<bigint, string | null>();
    for (let i = 0; i < numbers.length; i += RECHECK_BATCH) {
      const batch = numbers.slice(i, i + RECHECK_BATCH);
      const hashes = await Promise.all(batch.map((n) => this.adapter.getBlockHash(n)));
      batch.forEach((n, j) => canonical.set(n, hashes[j] ?? null));
    }
    const replaced = blocks.filter((b) => {
      const now = canonical.get(b.blockNumber);
      return !!now && now !== b.blockHash;
    });
    if (!replaced.length) return [];
    // Another chain behind the URL replaces every block: that is no reorg (sandbox: followed; production: refused).
    await this.followChain(em, null, true);
    const moved = await em.transactional((tx) => this.deps.payments.markReorged(tx, this.environment, this.network, replaced));
    this.deps.log.error(
      { network: this.network, environment: this.environment, blocks: replaced.map((b) => b.blockNumber.toString()), payments: moved.map((m) => m.id) },
      'confirmed payments were reorganised away (reorg deeper than the confirmation depth)',
    );
    return [...new Set(moved.map((m) => m.orderId))];
  }

  /** Unattributed receipts: confirmed (and reported) or orphaned by the same rule as payments; they never touch an order's status. */
  private async confirmReceipts(em: EntityManager, head: ChainHead): Promise<void> {
    const pending = await this.deps.receipts.pending(em, this.environment, this.network, this.chainSince());
    if (!pending.length) return;
    const hashes = new Map<bigint, string | null>();
    const confirmed: string[] = [];
    const orphaned: string[] = [];
    const unchanged = this.unchangedSince(head);
    for (const p of pending) {
      if (unchanged.has(p.id)) continue;
      this.checked(head, p.id);
      if (!hashes.has(p.blockNumber)) hashes.set(p.blockNumber, await this.adapter.getBlockHash(p.blockNumber));
      const canonical = hashes.get(p.blockNumber);
      if (canonical && canonical !== p.blockHash) orphaned.push(p.id);
      else if (canonical && isFinal(this.adapter.finality, p.blockNumber, head, this.confirmations)) confirmed.push(p.id);
    }
    if (orphaned.length) await this.followChain(em, head, true);
    if (confirmed.length || orphaned.length) {
      await em.transactional(async (tx) => {
        await this.deps.receipts.markConfirmed(tx, confirmed);
        await this.deps.receipts.markOrphaned(tx, orphaned);
      });
    }
  }

  /** Payments and receipts detected since this instant belong to the chain followed now (null: one chain so far). */
  private chainSince(): Date | null {
    return this.chain?.since ?? null;
  }

  /** Reads the stored chain identity and pins it: providers on another chain are refused from the first call. */
  private async loadChain(em: EntityManager): Promise<void> {
    const [row] = await em.execute<{ chain_id: string | null; genesis_hash: string | null; identity_since: Date | null }[]>(
      `select chain_id, genesis_hash, identity_since from chain_cursors where environment = ? and network = ?`,
      [this.environment, this.network],
    );
    this.chain = row?.genesis_hash ? { identity: { chainId: row.chain_id, genesis: row.genesis_hash }, since: new Date(row.identity_since ?? 0) } : null;
    if (this.chain) this.adapter.identity.pin(this.chain.identity);
  }

  /**
   * Checks that the provider answering serves the chain the cursor belongs to (`force`: probe it now,
   * else the gate's cached verification, renewed on every switch of provider and every 30 s). The
   * first identity is stored with the cursor. Another chain is never treated as a reorg:
   * - production: refused (the gate is pinned; this only throws `WrongChainError`);
   * - sandbox (a restarted dev chain, a reset testnet): a new chain identity; the cursor restarts on
   *   the new chain (`WATCH_START_LOOKBACK_BLOCKS` before its head), SOLANA's per-deposit cursors are
   *   cleared, and payments recorded on the earlier chain keep their status (never confirmed,
   *   orphaned or reorged by the new chain's blocks). The tick ends (`ChainSwitched`).
   */
  private async followChain(em: EntityManager, head: ChainHead | null, force: boolean): Promise<void> {
    let identity: ChainIdentity;
    try {
      identity = await this.adapter.identity.current(force);
    } catch (err) {
      if (err instanceof WrongChainError && (await this.adoptNewChain(em))) throw new ChainSwitched();
      throw err;
    }
    if (this.chain === undefined) await this.loadChain(em);
    if (!this.chain) {
      // The first identity is never just the answer of whichever provider came first: every provider
      // is asked, the expected chain (or the majority's) is pinned, the others are refused by name.
      const agreed = await this.adapter.identity.establish();
      // this tick's head came from a provider on another chain: dropped; the next one is gated
      if (!sameChain(agreed, identity)) throw new ChainSwitched();
      // the first identity: everything recorded before belongs to it (since the epoch)
      const since = await this.storeIdentity(em, identity, head, false);
      this.chain = { identity, since };
      this.adapter.identity.pin(identity);
      return;
    }
    if (sameChain(identity, this.chain.identity)) return;
    // The gate is pinned to the stored identity, so this is a gate not pinned yet: pin it, and drop the tick.
    this.adapter.identity.pin(this.chain.identity);
    throw new WrongChainError(this.network, 'unknown', identity, this.chain.identity);
  }

  /**
   * Sandbox only: when EVERY provider serves another chain than the stored one (the dev chains were
   * restarted, a testnet was reset), that chain is followed from now on: a new chain identity, the
   * cursor restarts on it and SOLANA's per-deposit cursors and account snapshots are cleared. Payments recorded on the
   * earlier chain keep their status. Production never follows: the providers stay refused and alarmed.
   */
  private async adoptNewChain(em: EntityManager): Promise<boolean> {
    const identity = this.adapter.identity.allRefused();
    if (this.environment !== 'sandbox' || !identity || !this.chain || sameChain(identity, this.chain.identity)) return false;
    const from = this.chain.identity;
    this.adapter.identity.pin(identity);
    const head = await this.adapter.getHead();
    const since = await this.storeIdentity(em, identity, head, true);
    this.chain = { identity, since };
    this.lastFullReload = 0; // the watch set's SOLANA cursors and snapshots were cleared: read them again
    this.unsettled = new Set();
    this.headBlock = head.latest;
    this.scannedBlock = null;
    this.caughtUpAt = null;
    this.deps.log.warn(
      { network: this.network, environment: this.environment, from: describeIdentity(from), to: describeIdentity(identity), head: head.latest.toString() },
      'every provider serves a new chain (restarted dev chain?): a new chain identity, the cursor restarts on it; payments of the earlier chain keep their status',
    );
    this.deps.onNewChain?.({ environment: this.environment, network: this.network, from, to: identity });
    return true;
  }

  /** Stores `identity` with the cursor (a new chain: the cursor restarts before its head). Returns since when it is followed. */
  private async storeIdentity(em: EntityManager, identity: ChainIdentity, head: ChainHead | null, restart: boolean): Promise<Date> {
    return em.transactional(async (tx) => {
      const start = head ? (head.latest > BigInt(this.deps.startLookbackBlocks) ? head.latest - BigInt(this.deps.startLookbackBlocks) : 0n) : 0n;
      const [row] = await tx.execute<{ identity_since: Date }[]>(
        `insert into chain_cursors (environment, network, block_number, block_hash, chain_id, genesis_hash, identity_since, updated_at)
         values (?, ?, ?, null, ?, ?, ${restart ? 'clock_timestamp()' : "'epoch'::timestamptz"}, now())
         on conflict (environment, network) do update set chain_id = excluded.chain_id, genesis_hash = excluded.genesis_hash, identity_since = excluded.identity_since,
           ${restart ? 'block_number = excluded.block_number, block_hash = null,' : ''} updated_at = now()
         returning identity_since`,
        [this.environment, this.network, start.toString(), identity.chainId, identity.genesis],
      );
      // SOLANA: the cursors and account snapshots belong to the earlier chain (an account there can look like one here)
      if (restart) {
        await tx.execute(
          `update deposits set cursor = null, watch_seen = null, watch_seen_at = null where environment = ? and network = ? and (cursor is not null or watch_seen is not null)`,
          [this.environment, this.network],
        );
      }
      return new Date(row!.identity_since);
    });
  }

  private async cursor(em: EntityManager, head: ChainHead): Promise<{ block: bigint; hash: string | null }> {
    const rows = await prepared<{ block_number: string; block_hash: string | null }>(
      em,
      'watch_cursor',
      `select block_number, block_hash from chain_cursors where environment = ? and network = ?`,
      [this.environment, this.network],
    );
    if (rows[0]) return { block: BigInt(rows[0].block_number), hash: rows[0].block_hash };
    const start = head.latest > BigInt(this.deps.startLookbackBlocks) ? head.latest - BigInt(this.deps.startLookbackBlocks) : 0n;
    return { block: start, hash: null };
  }

  private async saveCursor(em: EntityManager, block: bigint, hash: string | null): Promise<void> {
    await prepared(
      em,
      'watch_save_cursor',
      `insert into chain_cursors (environment, network, block_number, block_hash, updated_at) values (?, ?, ?, ?, now())
       on conflict (environment, network) do update set block_number = excluded.block_number, block_hash = excluded.block_hash, updated_at = now()`,
      [this.environment, this.network, block.toString(), hash],
    );
  }
}
