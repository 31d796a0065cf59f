import { PublicKey, type Connection, SolanaJSONRPCError, type ConfirmedSignatureInfo, type VersionedTransactionResponse } from '@solana/web3.js';
import { solanaWsUrl, subscribeSlots, type SlotSubscription, type SlotSubscriptionOptions } from './solana.heads.js';
import { TOKEN_2022_PROGRAM_ID, TOKEN_PROGRAM_ID } from '@solana/spl-token';
import { DomainError } from '../../common/errors.js';
import { ProviderHealth } from '../provider-health.js';
import { ProviderGate, type ChainIdentity } from '../chain-identity.js';
import { pairPushUrls, pushChecks } from '../push-gate.js';
import type {
  AccountPollObservation,
  AccountPollResult,
  BalanceQuery,
  ChainAdapter,
  ChainHead,
  ChainNetworkConfig,
  ObservedTransfer,
  PolledDeposit,
  SweepCapability,
  WatchedToken,
} from '../chain-adapter.js';
import { mapLimit } from '../../common/map-limit.js';
import { associatedTokenAddress, solanaDriver } from './solana.driver.js';
import { SolanaRpcPool } from './solana.rpc.js';
import { createSolanaNativeWatch } from './solana.native.js';
import { createSolanaSweeps } from './solana.sweeps.js';
import { extractTransfersInto } from './solana.transfers.js';
import { allAbsent, changedSince, fingerprint, formatSnapshot, parseSnapshot, type Snapshot } from './solana.snapshots.js';

export interface SolanaAdapterOptions {
  /** Full passes over all RPC URLs per call before giving up (default 3). */
  rounds?: number;
  /** Backoff base/cap between passes, with jitter (defaults 250 ms / 4 s). */
  baseBackoffMs?: number;
  maxBackoffMs?: number;
  /** RPC calls in flight at once across all deposits (default 8). */
  concurrency?: number;
  /** getSignaturesForAddress page size, 1..1000 (default 1000). */
  signaturePageSize?: number;
  /** Pages listed per token account per poll before the owner is reported as failed (default 100). */
  maxSignaturePages?: number;
  /** Transactions fetched per owner per poll; the cursor stops at the last one processed (default 250). */
  maxTransactionsPerOwner?: number;
  /** Called for each owner whose poll failed; its cursor is returned unchanged. */
  onDepositError?: (owner: string, error: unknown) => void;
  /**
   * `subscribeHeads`: the providers' WebSocket endpoints (default `config.wsUrls`; none: no push,
   * `subscribeHeads` is absent; `solanaWsUrl` gives the one web3.js derives from an RPC URL), and
   * the slot subscription's settings (coalescing, backoff, silence).
   */
  wsUrls?: string[];
  heads?: Omit<SlotSubscriptionOptions, 'urls' | 'onCall'>;
  /** Test seams. */
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
}

interface OwnerPoll {
  owner: string;
  until: string | null;
  tokens: WatchedToken[];
  /** Mints whose account is left unread this poll (see PolledDeposit.readAccount). */
  unread: Set<string>;
  /** The snapshot stored at the last full listing (null: none yet); undefined: list without reading the accounts first. */
  seen: string | null | undefined;
  recheck: boolean;
}

interface OwnerResult {
  transfers: ObservedTransfer[];
  cursor: string | null;
  /** The snapshot to store: set only when the history is known complete up to the accounts as read this poll. */
  seen?: string;
}

/** An account read: its fingerprint and the slot the answer was read at. */
interface AccountRead {
  fingerprint: string;
  slot: number;
}

interface TokenAccountWatch {
  mint: string;
  ata: string;
  programId: string;
}

/** JSON-RPC codes meaning "no block for this slot (yet / skipped / pruned)": an answer, not a failure. */
const NO_BLOCK_CODES = new Set([-32004, -32007, -32009, -32014]);

const TOKEN_PROGRAMS = new Set([TOKEN_PROGRAM_ID.toBase58(), TOKEN_2022_PROGRAM_ID.toBase58()]);
/** Cursor slots remembered at most (one per polled owner; past this the memo starts over). */
const MAX_CURSOR_SLOTS = 200_000;
/** Associated token addresses remembered at most (one per polled owner and mint; past this the memo starts over). */
const MAX_TOKEN_ACCOUNTS = 400_000;
/** getMultipleAccounts takes at most 100 keys per call. */
const ACCOUNTS_PER_CALL = 100;

/**
 * Amount of an SPL token account (SPL Token and Token-2022 share the first 165 bytes: mint 0..32,
 * owner 32..64, amount u64 little-endian 64..72); null when the account does not exist (an associated
 * token account is created by the first transfer into it: nothing was received yet).
 */
function tokenAccountAmount(info: { owner: PublicKey; data: Buffer } | null, ata: string, mint: string, owner: string): bigint {
  if (!info) return 0n;
  const data = info.data;
  if (!TOKEN_PROGRAMS.has(info.owner.toBase58()) || data.length < 72) throw new Error(`account ${ata} is not a token account`);
  if (new PublicKey(data.subarray(0, 32)).toBase58() !== mint || new PublicKey(data.subarray(32, 64)).toBase58() !== owner) {
    throw new Error(`token account ${ata} is not ${owner}'s account of mint ${mint}`);
  }
  return data.readBigUInt64LE(64);
}

/**
 * Solana over JSON-RPC (web3.js 1.x `Connection`).
 *
 * Deposits are watched at the associated token account of (owner, mint), not at the owner: a
 * transfer into an existing ATA does not list the owner's address at all. Everything is read at
 * `confirmed` commitment so payments show up within a second or two; `getHead().finalized` tells
 * the watcher when a slot is final (the ObservedTransfer carries its slot for that comparison).
 */
export interface SolanaAdapter extends ChainAdapter {
  /** The account poll itself (also reachable as `observation.pollDeposits`), for tests. */
  pollDeposits: AccountPollObservation['pollDeposits'];
  readonly sweeps: SweepCapability;
}

export function createSolanaAdapter(config: ChainNetworkConfig, options: SolanaAdapterOptions = {}): SolanaAdapter {
  if (config.network !== 'SOLANA') throw new Error(`createSolanaAdapter: network must be SOLANA, got ${config.network}`);
  const gate: ProviderGate = new ProviderGate({
    network: 'SOLANA',
    urls: config.rpcUrls,
    genesis: config.genesisHash ?? null,
    recheckMs: config.identityRecheckMs,
    onRefused: config.onWrongChain,
    enforce: config.verifyIdentity === true,
    // the cluster is named by its genesis hash (mainnet-beta, devnet, a local validator each have their own)
    probe: async (url): Promise<ChainIdentity> => ({ chainId: null, genesis: await pool.callOn(url, (c: Connection) => c.getGenesisHash()) }),
  });
  const pool: SolanaRpcPool = new SolanaRpcPool({
    network: config.network,
    urls: config.rpcUrls,
    timeoutMs: config.timeoutMs,
    rounds: options.rounds ?? 3,
    baseBackoffMs: options.baseBackoffMs ?? 250,
    maxBackoffMs: options.maxBackoffMs ?? 4000,
    concurrency: options.concurrency ?? 8,
    sleep: options.sleep,
    random: options.random,
    onCall: config.onRpcCall,
    // 150 slots is about a minute of Solana: an endpoint further behind is demoted
    health: new ProviderHealth({ urls: config.rpcUrls, maxLagBlocks: 150, onFailure: config.onProviderFailure }),
    gate,
  });
  const subscriptions = new Set<SlotSubscription>();
  const allWsUrls = options.wsUrls ?? config.wsUrls ?? [];
  // A validator's pubsub port answers subscriptions only (no getGenesisHash over it): a socket is used
  // only while the RPC provider it belongs to is verified on the watched chain (push-gate.ts); one that
  // belongs to no RPC URL cannot be verified and is not used (the watcher polls instead).
  const pairs = pairPushUrls(config.rpcUrls, allWsUrls, solanaWsUrl);
  const wsUrls = gate.enforcing ? allWsUrls.filter((_, i) => pairs[i] !== null) : allWsUrls;
  const checks = pushChecks(gate, config.rpcUrls, wsUrls, solanaWsUrl, 'paired');
  const pageSize = Math.min(1000, Math.max(1, options.signaturePageSize ?? 1000));
  const maxPages = options.maxSignaturePages ?? 100;
  const maxTxPerOwner = Math.max(1, options.maxTransactionsPerOwner ?? 250);
  /** Mint → owning token program; a mint never changes program, so this never goes stale. */
  const mintPrograms = new Map<string, Promise<string>>();
  /** Owner → the cursor signature last returned for it and its slot (bounded: cleared when it grows past MAX_CURSOR_SLOTS). */
  const cursorSlots = new Map<string, { signature: string; slot: number }>();
  function rememberCursorSlot(owner: string, signature: string, slot: number): void {
    if (cursorSlots.size >= MAX_CURSOR_SLOTS && !cursorSlots.has(owner)) cursorSlots.clear();
    cursorSlots.set(owner, { signature, slot });
  }

  function mintProgram(mint: string): Promise<string> {
    let p = mintPrograms.get(mint);
    if (!p) {
      p = pool
        .call('getAccountInfo', (c) => c.getAccountInfo(new PublicKey(mint), 'confirmed'))
        .then((info) => {
          const owner = info?.owner.toBase58();
          if (!owner || !TOKEN_PROGRAMS.has(owner)) {
            throw new DomainError('TOKEN_NOT_SUPPORTED', 'Token mint does not exist on this Solana network');
          }
          return owner;
        });
      // Failures are not cached: the next poll asks again.
      p.catch(() => mintPrograms.delete(mint));
      mintPrograms.set(mint, p);
    }
    return p;
  }

  /** The mint's token program, or null when the mint does not exist on this cluster (another cluster's registry address): nobody holds it, nothing arrives. */
  function mintProgramOrNull(mint: string): Promise<string | null> {
    return mintProgram(mint).catch((e: unknown) => {
      if (e instanceof DomainError && e.code === 'TOKEN_NOT_SUPPORTED') return null;
      throw e;
    });
  }

  async function getBlockHash(slot: bigint): Promise<string | null> {
    return pool.call('getBlock', async (c) => {
      try {
        // transactionDetails 'none' keeps this to a few hundred bytes.
        const block = await c.getBlock(Number(slot), {
          commitment: 'confirmed',
          transactionDetails: 'none',
          rewards: false,
          maxSupportedTransactionVersion: 0,
        });
        return block?.blockhash ?? null;
      } catch (e) {
        if (e instanceof SolanaJSONRPCError && typeof e.code === 'number' && NO_BLOCK_CODES.has(e.code)) return null;
        throw e;
      }
    });
  }

  /** Signatures touching `ata` newer than `until` (newest first), paging with `before`. */
  async function listSignatures(
    ata: string,
    until: string | null,
    untilSlot: number | null,
    minContextSlot: number | undefined,
  ): Promise<ConfirmedSignatureInfo[]> {
    const out: ConfirmedSignatureInfo[] = [];
    const address = new PublicKey(ata);
    let before: string | undefined;
    for (let page = 0; page < maxPages; page++) {
      const batch = await pool.call('getSignaturesForAddress', (c) =>
        c.getSignaturesForAddress(address, { until: until ?? undefined, before, limit: pageSize, minContextSlot }, 'confirmed'),
      );
      let done = batch.length < pageSize;
      for (const s of batch) {
        // Slot bound: used when one cursor covers several token accounts (see pollOwner).
        if (s.signature === until || (untilSlot !== null && s.slot < untilSlot)) {
          done = true;
          break;
        }
        out.push(s);
      }
      if (done) return out;
      before = batch[batch.length - 1]!.signature;
    }
    // Processing only the newest pages would move the cursor past unseen older transfers: fail loudly instead.
    throw new Error(`more than ${maxPages * pageSize} new signatures for token account ${ata}; raise maxSignaturePages`);
  }

  /**
   * (owner, mint) → its associated token account. A program-address derivation costs about a
   * millisecond of CPU (curve checks): every poll would spend that per deposit and mint.
   */
  const tokenAccountMemo = new Map<string, string>();
  function tokenAccountOf(owner: string, mint: string, programId: string): string {
    const key = `${owner}:${mint}`;
    let ata = tokenAccountMemo.get(key);
    if (ata === undefined) {
      ata = associatedTokenAddress(owner, mint, programId);
      if (tokenAccountMemo.size >= MAX_TOKEN_ACCOUNTS) tokenAccountMemo.clear();
      tokenAccountMemo.set(key, ata);
    }
    return ata;
  }

  /** The owner's token accounts of the watched mints. A registry mint absent from the cluster has none: skipped, not a failure of the owner's other accounts. */
  async function tokenAccounts(o: OwnerPoll): Promise<TokenAccountWatch[]> {
    const watches = await Promise.all(
      o.tokens.map(async (t) => {
        const programId = await mintProgramOrNull(t.address);
        return programId ? [{ mint: t.address, ata: tokenAccountOf(o.owner, t.address, programId), programId }] : [];
      }),
    );
    return watches.flat();
  }

  /** Fingerprints of these accounts, 100 per getMultipleAccounts; an account whose read failed maps to its error. */
  async function readAccounts(atas: string[]): Promise<Map<string, AccountRead | Error>> {
    const out = new Map<string, AccountRead | Error>();
    const chunks: string[][] = [];
    for (let i = 0; i < atas.length; i += ACCOUNTS_PER_CALL) chunks.push(atas.slice(i, i + ACCOUNTS_PER_CALL));
    await mapLimit(chunks, options.concurrency ?? 8, async (chunk) => {
      try {
        const { context, value } = await pool.call('getMultipleAccounts', (c) =>
          c.getMultipleAccountsInfoAndContext(
            chunk.map((a) => new PublicKey(a)),
            'confirmed',
          ),
        );
        chunk.forEach((ata, k) => out.set(ata, { fingerprint: fingerprint(value[k] ?? null), slot: context.slot }));
      } catch (e) {
        for (const ata of chunk) out.set(ata, e instanceof Error ? e : new Error(String(e)));
      }
    });
    return out;
  }

  /**
   * One owner: with a stored snapshot, list its history only when its accounts changed since (or a
   * recheck is asked for); the listing then starts from the slot the accounts were read at, so a
   * lagging node cannot answer with a history older than the snapshot stored after it.
   */
  /** The accounts read this poll: all of an owner never listed, otherwise those not left unread. */
  function readable(o: OwnerPoll, watches: TokenAccountWatch[]): TokenAccountWatch[] {
    return o.seen === null ? watches : watches.filter((w) => !o.unread.has(w.mint));
  }

  async function pollOwner(o: OwnerPoll, watches: TokenAccountWatch[], reads: Map<string, AccountRead | Error>): Promise<OwnerResult> {
    if (o.seen === undefined) return listOwner(o, watches, undefined);
    const now: Snapshot = new Map();
    let slot = 0;
    for (const w of readable(o, watches)) {
      const read = reads.get(w.ata)!;
      if (read instanceof Error) throw read;
      now.set(w.mint, read.fingerprint);
      slot = Math.max(slot, read.slot);
    }
    const stored = parseSnapshot(o.seen);
    if (!o.recheck && !changedSince(stored, now)) return { transfers: [], cursor: o.until, seen: o.seen! };
    // Never listed and no account exists: nothing ever arrived (only the owner's key can close a
    // token account, and the gateway never closes a deposit's).
    if (!o.recheck && o.until === null && stored === null && allAbsent(now)) return { transfers: [], cursor: null, seen: formatSnapshot(now) };
    const listed = await listOwner(o, watches, slot || undefined);
    if (!listed.complete) return { transfers: listed.transfers, cursor: listed.cursor };
    // An account left unread keeps its older fingerprint: the next read of it lists once more (finding nothing new).
    const next: Snapshot = new Map(stored ?? []);
    for (const [mint, fp] of now) next.set(mint, fp);
    return { transfers: listed.transfers, cursor: listed.cursor, seen: formatSnapshot(next) };
  }

  /** Lists the owner's token accounts since its cursor and decodes the transfers into them; `complete`: nothing newer was left for the next poll. */
  async function listOwner(
    o: OwnerPoll,
    watches: TokenAccountWatch[],
    minContextSlot: number | undefined,
  ): Promise<{ transfers: ObservedTransfer[]; cursor: string | null; complete: boolean }> {
    if (watches.length === 0) return { transfers: [], cursor: o.until, complete: true };

    // One cursor per owner (interface contract) but one signature list per token account: with
    // several accounts, the cursor signature belongs to only one of them, so `until` alone would
    // not stop the others. Bound them by the cursor's slot instead; same-slot entries are seen
    // again, which is harmless because payments are inserted idempotently.
    // The slot of a cursor this adapter returned is remembered, which saves that call on every poll.
    let untilSlot: number | null = null;
    if (o.until && watches.length > 1) {
      const known = cursorSlots.get(o.owner);
      if (known?.signature === o.until) untilSlot = known.slot;
      else {
        const status = await pool.call('getSignatureStatuses', (c) => c.getSignatureStatuses([o.until!], { searchTransactionHistory: true }));
        untilSlot = status.value[0]?.slot ?? null;
        if (untilSlot !== null) rememberCursorSlot(o.owner, o.until, untilSlot);
      }
    }

    const lists = await Promise.all(watches.map((w) => listSignatures(w.ata, o.until, untilSlot, minContextSlot)));
    // Chronological order (oldest first); stable sort keeps each list's in-slot order.
    const seen = new Set<string>();
    const entries: ConfirmedSignatureInfo[] = [];
    for (const list of lists) {
      for (const s of [...list].reverse()) {
        if (seen.has(s.signature)) continue;
        seen.add(s.signature);
        entries.push(s);
      }
    }
    entries.sort((a, b) => a.slot - b.slot);
    if (entries.length === 0) return { transfers: [], cursor: o.until, complete: true };

    // Budget: failed transactions cost nothing to skip (they moved no tokens), successful ones need a fetch.
    let budget = maxTxPerOwner;
    let take = 0;
    for (const s of entries) {
      if (s.err === null) {
        if (budget === 0) break;
        budget--;
      }
      take++;
    }
    const batch = entries.slice(0, take);

    const txs = await Promise.all(
      batch.map((s) =>
        s.err !== null
          ? Promise.resolve(null)
          : pool.call('getTransaction', (c) => c.getTransaction(s.signature, { commitment: 'confirmed', maxSupportedTransactionVersion: 0 })),
      ),
    );

    type Found = { sig: ConfirmedSignatureInfo; tx: VersionedTransactionResponse | null; decoded: ObservedTransfer[] };
    const found: Found[] = [];
    const slotsNeeded = new Set<number>();
    for (let i = 0; i < batch.length; i++) {
      const sig = batch[i]!;
      const tx = txs[i] ?? null;
      // A successful signature whose transaction the node cannot return yet is a gap: stop before it.
      if (sig.err === null && tx === null) break;
      const decoded: ObservedTransfer[] = [];
      if (tx) {
        for (const w of watches) {
          for (const t of extractTransfersInto(tx, w.ata, w.programId)) {
            decoded.push({
              txHash: sig.signature,
              index: t.index,
              blockNumber: BigInt(tx.slot),
              blockHash: '',
              token: w.mint,
              from: t.from,
              to: o.owner,
              amount: t.amount,
            });
          }
        }
        if (decoded.length) slotsNeeded.add(tx.slot);
      }
      found.push({ sig, tx, decoded });
    }

    // The transaction response has no block hash (recentBlockhash is the *referenced* block, not the
    // including one), so ask for each slot's block once: this is what getBlockHash() returns later for reorg checks.
    const hashes = new Map<number, string | null>();
    await Promise.all([...slotsNeeded].map(async (slot) => hashes.set(slot, await getBlockHash(BigInt(slot)))));

    const transfers: ObservedTransfer[] = [];
    let cursor = o.until;
    let cursorSlot: number | null = null;
    let processed = 0;
    for (const f of found) {
      if (f.decoded.length) {
        const hash = hashes.get(f.tx!.slot) ?? null;
        if (hash === null) break; // block not served yet: retry from here next poll
        for (const t of f.decoded) transfers.push({ ...t, blockHash: hash });
      }
      cursor = f.sig.signature;
      cursorSlot = f.sig.slot;
      processed++;
    }
    if (cursor !== null && cursorSlot !== null) rememberCursorSlot(o.owner, cursor, cursorSlot);
    return { transfers, cursor, complete: processed === entries.length };
  }

  async function pollDeposits(deposits: PolledDeposit[]): Promise<AccountPollResult> {
    const owners = new Map<string, OwnerPoll>();
    const invalid: { owner: string; error: unknown }[] = [];
    for (const d of deposits) {
      let owner: string;
      try {
        owner = solanaDriver.normalizeAddress(d.owner);
      } catch (error) {
        invalid.push({ owner: d.owner, error });
        continue;
      }
      const until = d.untilSignature ?? null;
      let o = owners.get(owner);
      if (!o) {
        o = { owner, until, tokens: [], unread: new Set(), seen: d.seen, recheck: d.recheck === true };
        owners.set(owner, o);
      } else {
        // Entries of one owner should carry the one cursor and snapshot we returned; if they disagree,
        // rescan the owner's history (safe: payments are inserted idempotently).
        if (o.until !== until) o.until = null;
        if (o.seen !== d.seen) o.seen = o.seen === undefined || d.seen === undefined ? undefined : null;
        o.recheck ||= d.recheck === true;
      }
      if (!o.tokens.some((t) => t.address === d.token.address)) o.tokens.push(d.token);
      if (d.readAccount === false) o.unread.add(d.token.address);
    }

    const polls = await Promise.all(
      [...owners.values()].map((o) =>
        tokenAccounts(o).then(
          (watches) => ({ o, watches, error: null as unknown }),
          (error: unknown) => ({ o, watches: [] as TokenAccountWatch[], error }),
        ),
      ),
    );
    // One batched read of every snapshot-mode account, then histories only where something changed.
    const reads = await readAccounts(
      polls.flatMap(({ o, watches, error }) => (error === null && o.seen !== undefined ? readable(o, watches).map((w) => w.ata) : [])),
    );
    const results = await Promise.all(
      polls.map(({ o, watches, error }) =>
        error !== null
          ? { o, r: null, error }
          : pollOwner(o, watches, reads).then(
              (r) => ({ o, r, error: null as unknown }),
              (e: unknown) => ({ o, r: null, error: e }),
            ),
      ),
    );

    const transfers: ObservedTransfer[] = [];
    const cursors: Record<string, string | null> = {};
    const seen: Record<string, string> = {};
    const failures: unknown[] = [];
    for (const { owner, error } of invalid) {
      failures.push(error);
      options.onDepositError?.(owner, error);
    }
    for (const { o, r, error } of results) {
      if (r) {
        transfers.push(...r.transfers);
        cursors[o.owner] = r.cursor;
        if (r.seen !== undefined) seen[o.owner] = r.seen;
      } else {
        cursors[o.owner] = o.until;
        failures.push(error);
        options.onDepositError?.(o.owner, error);
      }
    }
    // Nothing at all succeeded (typically every endpoint down): surface the typed error to the job.
    if (failures.length > 0 && failures.length === invalid.length + owners.size) throw failures[0];
    transfers.sort((a, b) => (a.blockNumber === b.blockNumber ? 0 : a.blockNumber < b.blockNumber ? -1 : 1));
    return { transfers, cursors, seen };
  }

  /**
   * Each deposit owner's balance at its associated token account of the mint (0 while that account,
   * or the mint, does not exist), read with getMultipleAccounts at `confirmed` (100 accounts per call): the latest
   * state, since Solana RPC cannot read an account at a past slot (`balances.atBlock` false).
   */
  async function tokenBalances(queries: BalanceQuery[], _at: bigint | null, concurrency: number): Promise<bigint[]> {
    // A registry mint that does not exist on this cluster (another cluster's address) is held by nobody: 0.
    const programs = new Map<string, string | null>();
    for (const mint of new Set(queries.map((q) => q.token.address))) programs.set(mint, await mintProgramOrNull(mint));
    const out: bigint[] = queries.map(() => 0n);
    const atas = queries.map((q) => {
      const program = programs.get(q.token.address);
      return program ? associatedTokenAddress(q.owner, q.token.address, program) : null;
    });
    const readable = queries.flatMap((_, i) => (atas[i] ? [i] : []));
    const chunks: number[][] = [];
    for (let i = 0; i < readable.length; i += ACCOUNTS_PER_CALL) chunks.push(readable.slice(i, i + ACCOUNTS_PER_CALL));
    await mapLimit(chunks, concurrency, async (idx) => {
      const infos = await pool.call('getMultipleAccounts', (c) =>
        c.getMultipleAccountsInfo(
          idx.map((i) => new PublicKey(atas[i]!)),
          'confirmed',
        ),
      );
      idx.forEach((i, k) => (out[i] = tokenAccountAmount(infos[k] ?? null, atas[i]!, queries[i]!.token.address, queries[i]!.owner)));
    });
    return out;
  }

  /** Lamports of each owner (getMultipleAccounts at `confirmed`, 100 per call; an account that does not exist holds 0). */
  async function nativeBalances(owners: string[], _at: bigint | null, concurrency: number): Promise<bigint[]> {
    const chunks: string[][] = [];
    for (let i = 0; i < owners.length; i += ACCOUNTS_PER_CALL) chunks.push(owners.slice(i, i + ACCOUNTS_PER_CALL));
    const out = await mapLimit(chunks, concurrency, async (c) => {
      const infos = await pool.call('getMultipleAccounts', (conn) =>
        conn.getMultipleAccountsInfo(
          c.map((o) => new PublicKey(o)),
          'confirmed',
        ),
      );
      return c.map((_, k) => BigInt(infos[k]?.lamports ?? 0));
    });
    return out.flat();
  }

  const pollNative = createSolanaNativeWatch({
    pool,
    nativeBalances: (owners) => nativeBalances(owners, null, options.concurrency ?? 8),
    listSignatures: (address, until) => listSignatures(address, until, null, undefined),
    getBlockHash,
    maxTxPerOwner,
  });

  return {
    network: config.network,
    family: 'solana',
    driver: solanaDriver,
    // Everything is read at `confirmed`, which a minority fork can still drop: wait for `finalized` too.
    finality: 'depth-and-chain-final',
    observation: { kind: 'account-poll', pollDeposits, pollNative },
    sweeps: createSolanaSweeps(pool, mintProgram),
    balances: { atBlock: false, tokenBalances, nativeBalances },
    identity: pool.gate,
    providerHealth: pool.health,
    pollDeposits,

    async getHead(): Promise<ChainHead> {
      const [latest, finalized] = await Promise.all([pool.head('getSlot', (c) => c.getSlot('confirmed')), pool.call('getSlot', (c) => c.getSlot('finalized'))]);
      // The two answers may come from different endpoints; finalized can never be ahead of latest.
      const l = BigInt(Math.max(latest, finalized));
      return { latest: l, finalized: BigInt(finalized) };
    },

    /**
     * Blockhash of the block produced in `slot` (at confirmed commitment), or null when the slot was
     * skipped, is not confirmed yet, or the node pruned it. Solana slots can be empty: a null here is
     * not by itself a reorg signal.
     */
    getBlockHash,

    /**
     * New slots over the providers' WebSocket (`slotSubscribe`), coalesced to one head per
     * `heads.minIntervalMs` (default 400 ms, a slot): a hint for the watcher to poll now.
     */
    ...(wsUrls.length
      ? {
          subscribeHeads(onHead: (head: { number: bigint }) => void, onState?: (state: 'open' | 'down') => void) {
            const sub = subscribeSlots({ ...options.heads, urls: wsUrls, onCall: config.onRpcCall, admit: checks.admit, still: checks.still }, onHead, onState);
            subscriptions.add(sub);
            return {
              async close() {
                subscriptions.delete(sub);
                await sub.close();
              },
            };
          },
        }
      : {}),

    async close() {
      // Connections hold no sockets between calls (no keep-alive agent); head subscriptions end here.
      const subs = [...subscriptions];
      subscriptions.clear();
      await Promise.all(subs.map((s) => s.close()));
    },
  };
}
