import type { EntityManager } from '@mikro-orm/postgresql';
import { parseFunding } from '../refunds/refund.store.js';
import type { Logger } from 'pino';
import { NATIVE_TOKEN, pollEveryToken, type BalanceQuery, type ObservedTransfer } from '../../chains/chain-adapter.js';
import { nativeAsset } from '../../chains/registry.js';
import type { WatchedNetwork } from '../../chains/networks.js';
import { scannedBlock } from '../payments/chain-cursor.store.js';
import type { Environment, Network } from '../../common/environment.js';
import { formatDecimal } from '../../common/money.js';
import type { TokenService } from '../tokens/token.service.js';
import { TankLedger } from './tank-ledger.js';

/** One (address, token) whose on-chain balance differs from what the ledger says it holds. */
export interface ReconciliationMismatch {
  address: string;
  tokenAddress: string;
  tokenSymbol: string;
  /** Token units (decimal strings). */
  onChain: string;
  ledger: string;
  onChainBaseUnits: string;
  ledgerBaseUnits: string;
  /** Transactions the ledger holds for this address and token (payments and unattributed receipts). */
  txHashes: string[];
  /** Transfers into the address the watcher observed but could not record (`watcher_failures`). */
  failedTxHashes: string[];
  /**
   * Chains read at the latest state (TRON, SOLANA): transfers past the watcher's cursor, not recorded
   * yet, that the comparison allowed for (token units, and their transactions); "0" / [] at a block.
   */
  inFlight: string;
  inFlightTxHashes: string[];
}

/**
 * A deposit (address, token) whose balance the sweep engine looked at and did not move (`sweep_holds`):
 * not a mismatch (the ledger counts it as still at the address), listed so every unswept balance has
 * its reason in the report.
 */
export interface ReconciliationHeld {
  depositId: string;
  address: string;
  tokenAddress: string;
  tokenSymbol: string;
  /** Token units the engine read when it held the deposit. */
  balance: string;
  balanceBaseUnits: string;
  /** `below_minimum` (under the token's minimum), `fee_too_high` (the dust rule) or `native_dust` (native coin that would not pay for its transfer). */
  reason: string;
  /** Native base units the sweep would have cost. */
  fee: string;
  checkedAt: string;
}

export interface ReconciliationRun {
  id: string;
  environment: Environment;
  network: Network;
  /**
   * Block both sides were read at (EVM: the watcher's cursor); TRON/SOLANA: the head when the balance
   * reads began (they reflect a block between it and the head when they ended). Null when nothing was
   * scanned yet or on error.
   */
  atBlock: string | null;
  /** (address, token) pairs compared. */
  checked: number;
  mismatches: ReconciliationMismatch[];
  /** Deposits the sweep engine holds (dust, below the minimum), each with its reason. */
  held: ReconciliationHeld[];
  /** Why the run could not compare (no balance reads on this chain, RPC failure); null when it did. */
  error: string | null;
  startedAt: Date;
  finishedAt: Date;
}

/** Comparison key of an (address, token) pair under the chain's address rules. */
type PairKey = (owner: string, token: string) => string;

/** One token movement of an (address, token) pair the ledger holds or the watcher is about to record. */
export interface Movement {
  txHash: string;
  index: number;
  block: bigint;
  /** Base units (positive). */
  amount: bigint;
  /** `out`: a sweep's transfer out of the address; `in` (default): a receipt. */
  dir?: 'in' | 'out';
}

/** What the ledger holds for one (address, token): the sums up to the low block, and the movements after it. */
interface LedgerPair {
  /** Received up to `lo` (all rows when the read is at one block). */
  receivedUpToLo: bigint;
  /** Swept out by sweeps included up to `lo`. */
  sweptUpToLo: bigint;
  /** Rows in (lo, hi]: they count only if the balance was read after their block. */
  after: Movement[];
  /**
   * Sweeps whose transfer is signed and broadcast (`sending`) but not seen in a block by the engine
   * yet: the chain may already have moved them. Either is a state the chain can be in.
   */
  sending: bigint[];
  /** Every transaction the ledger holds for the pair (reported with a mismatch). */
  txHashes: string[];
}

const EMPTY_PAIR: LedgerPair = { receivedUpToLo: 0n, sweptUpToLo: 0n, after: [], sending: [], txHashes: [] };

/**
 * THE ledger formula, in one place: what an (address, token) holds = received − swept − fees.
 * `received`: payments and unattributed receipts not orphaned; `swept`: the amounts of sweeps whose
 * transfer is in a block (sent, confirmed); `fees`: fees paid from the address in the token itself —
 * 0 on every network we support (ETHEREUM/BINANCE batch sweeps and SOLANA are paid by the gas tank,
 * TRON deposits pay in TRX), so token pairs pass 0. Every reconciliation path (at a block, or fenced
 * at the latest state) applies this formula and no other.
 */
export function ledgerHolds(received: bigint, swept = 0n, fees = 0n): bigint {
  return received - swept - fees;
}

/** The sums a subset of `amounts` can take (every subset up to 8 amounts; beyond, the prefixes in order). */
function subsetSums(amounts: bigint[]): bigint[] {
  if (amounts.length > 8) return amounts.reduce<bigint[]>((acc, a) => [...acc, acc.at(-1)! + a], [0n]);
  return amounts.reduce<bigint[]>((acc, a) => [...acc, ...acc.map((s) => s + a)], [0n]);
}

/**
 * Whether `onChain` is what the ledger (plus the watcher's in-flight transfers) says the pair held at
 * some block B in [lo, hi]: the balance was read at one unknown block of that range (`lo` = `hi` where
 * the chain reads at a block). Movements are counted up to B; B only needs trying at `lo` and at each
 * movement's block in the range, where the expected sum changes. `sending`: sweeps broadcast but not
 * yet seen in a block by the engine, each of which may or may not have left the address.
 */
export function balanceMatches(
  onChain: bigint,
  receivedUpToLo: bigint,
  after: Movement[],
  lo: bigint,
  hi: bigint,
  sweptUpToLo = 0n,
  sending: bigint[] = [],
): boolean {
  const inRange = after.filter((m) => m.block > lo && m.block <= hi);
  const candidates = [lo, ...new Set(inRange.map((m) => m.block))];
  const maybeGone = subsetSums(sending);
  const sum = (b: bigint, dir: 'in' | 'out') => inRange.filter((m) => m.block <= b && (m.dir ?? 'in') === dir).reduce((s, m) => s + m.amount, 0n);
  return candidates.some((b) => {
    const held = ledgerHolds(receivedUpToLo + sum(b, 'in'), sweptUpToLo + sum(b, 'out'), 0n);
    return maybeGone.some((gone) => held - gone === onChain);
  });
}

/** In-flight scans longer than this many blocks fail the run (the watcher is far behind: reconcile later). */
const MAX_IN_FLIGHT_BLOCKS = 5_000n;

/**
 * Compares, per network, every deposit address's on-chain token balances with what the ledger says
 * it holds (`ledgerHolds`: received − swept − fees; received = payments not orphaned + unattributed
 * receipts). Every address of the chain family is read for every active token of the network, which
 * also covers another token, and an address of another network of the family.
 *
 * Where the chain reads balances at a block (EVM), both sides are taken at the watcher's cursor block,
 * so transfers the scan has not reached yet are not mismatches. Where it cannot (TRON, SOLANA), the
 * balances are read at the latest state between two head reads `lo` ≤ B ≤ `hi`, and the ledger is
 * completed with the transfers the watcher has not recorded yet ("in flight": observed past its
 * cursor up to `hi`, with its own filters: watched addresses, registry tokens, amount > 0, not from the
 * address itself). A pair matches when the balance equals that total at some block of [lo, hi], so a
 * transfer landing during the read is never a mismatch, while a transfer the watcher skipped (behind its
 * cursor, not in the ledger) or a ledger row the chain does not back always is.
 *
 * Each run is stored in `reconciliation_runs` (the operators' record, read by the GraphQL
 * `reconciliation` query), each mismatch logged at error level, and the counts exported as gauges.
 */
export class ReconciliationService {
  /** The gas tanks' side of the books (`tank-ledger.ts`): also what the CLI opens and records refills with. */
  readonly tanks = new TankLedger();

  constructor(
    private readonly tokens: TokenService,
    private readonly log: Logger,
    private readonly concurrency: number,
    /** How long after its order's expiry a deposit address stays watched (late window + closed-deposit retention). */
    private readonly watchRetentionS: number,
    /** Observability hook (metrics): each run that could compare its network, with its counts. */
    private readonly onCompared?: (r: { environment: Environment; network: Network; mismatches: number; checked: number }) => void,
  ) {}

  async reconcile(em: EntityManager, target: WatchedNetwork): Promise<ReconciliationRun> {
    const { environment, network, adapter } = target;
    const startedAt = new Date();
    let atBlock: bigint | null = null;
    let checked = 0;
    let mismatches: ReconciliationMismatch[] = [];
    let held: ReconciliationHeld[] = [];
    let error: string | null = null;
    let caught: unknown = null;
    try {
      const balances = adapter.balances;
      if (!balances) throw new Error(`balance reads are not implemented for ${network} yet`);
      const cursor = await scannedBlock(em, environment, network);
      // A log-scanning watcher that has not scanned anything yet: nothing to compare against.
      if (cursor !== null || adapter.observation.kind === 'account-poll') {
        const tokens = await this.tokens.listActive(em, environment, network);
        const addresses = await em.execute<{ address: string }[]>(
          'select distinct address from deposits where environment = ? and family = ? order by address',
          [environment, adapter.family],
        );
        const queries: BalanceQuery[] = addresses.flatMap((a) =>
          tokens.map((t) => ({ owner: a.address, token: { address: t.address, decimals: t.decimals, symbol: t.symbol } })),
        );
        const key: PairKey = (owner, token) => `${adapter.driver.addressKey(owner)}|${adapter.driver.addressKey(token)}`;
        let lo: bigint;
        let hi: bigint;
        let onChain: bigint[];
        let inFlight: Map<string, Movement[]> = new Map();
        const owners = addresses.map((a) => a.address);
        // The gas tank's native balance is read with the deposits' (same block or fence), last.
        const tank = await this.tanks.address(em, environment, network);
        const nativeOwners = tank ? [...owners, tank] : owners;
        let nativeOnChain: bigint[];
        if (balances.atBlock && cursor !== null) {
          lo = hi = cursor;
          onChain = await balances.tokenBalances(queries, cursor, this.concurrency);
          nativeOnChain = await balances.nativeBalances(nativeOwners, cursor, this.concurrency);
        } else {
          // Latest state, fenced by the head before and after the reads; then what the watcher has
          // not recorded yet, from its cursor(s) read now (the ledger is read after them).
          lo = (await adapter.getHead()).latest;
          onChain = await balances.tokenBalances(queries, null, this.concurrency);
          nativeOnChain = await balances.nativeBalances(nativeOwners, null, this.concurrency);
          hi = (await adapter.getHead()).latest;
          inFlight = await this.inFlight(em, target, tokens, hi, key);
        }
        atBlock = lo;
        const ledger = await this.ledger(em, environment, network, lo, hi, key);
        const recorded = await this.recordedKeys(em, environment, network, [...inFlight.values()].flat());
        const failures = await this.failures(em, environment, network, key);
        checked = queries.length;
        mismatches = queries.flatMap((q, i) => {
          const k = key(q.owner, q.token.address);
          const pair = ledger.get(k) ?? EMPTY_PAIR;
          // In-flight transfers the ledger already holds (recorded since the cursor was read) count once.
          const pending = (inFlight.get(k) ?? []).filter((m) => !recorded.has(`${m.txHash}|${m.index}`));
          const baseline = pair.receivedUpToLo + pending.filter((m) => m.block <= lo).reduce((s, m) => s + m.amount, 0n);
          const amount = onChain[i]!;
          if (balanceMatches(amount, baseline, [...pair.after, ...pending], lo, hi, pair.sweptUpToLo, pair.sending)) return [];
          const afterSum = (dir: 'in' | 'out') => pair.after.filter((m) => (m.dir ?? 'in') === dir).reduce((s, m) => s + m.amount, 0n);
          const ledgerAmount = ledgerHolds(pair.receivedUpToLo + afterSum('in'), pair.sweptUpToLo + afterSum('out'), 0n);
          const pendingAmount = pending.reduce((s, m) => s + m.amount, 0n);
          return [
            {
              address: q.owner,
              tokenAddress: q.token.address,
              tokenSymbol: q.token.symbol,
              onChain: formatDecimal(amount, q.token.decimals),
              ledger: formatDecimal(ledgerAmount, q.token.decimals),
              onChainBaseUnits: amount.toString(),
              ledgerBaseUnits: ledgerAmount.toString(),
              txHashes: pair.txHashes,
              failedTxHashes: failures.get(k) ?? [],
              inFlight: formatDecimal(pendingAmount, q.token.decimals),
              inFlightTxHashes: [...new Set(pending.map((m) => m.txHash))],
            },
          ];
        });
        const native = await this.nativeMismatches(em, target, owners, nativeOnChain.slice(0, owners.length), lo, hi);
        checked += native.checked;
        mismatches = [...mismatches, ...native.mismatches];
        if (tank) {
          // The tank: on chain = funded − spent (compared once its ledger is opened, with nothing in flight).
          const book = await this.tanks.book(em, target, tank, lo, hi);
          const tankOnChain = nativeOnChain[owners.length]!;
          if (book.funded !== null && !book.inFlight) {
            checked++;
            if (!balanceMatches(tankOnChain, book.funded, book.after, lo, hi, book.spentUpToLo))
              mismatches.push(this.tanks.mismatch(network, book, tankOnChain));
          }
        }
        held = await this.held(em, environment, network);
      }
    } catch (err) {
      error = err instanceof Error ? err.message : String(err);
      caught = err;
    }
    const [row] = await em.execute<{ id: string; finished_at: string }[]>(
      `insert into reconciliation_runs (environment, network, at_block, checked, mismatches, held, error, started_at) values (?, ?, ?, ?, ?::jsonb, ?::jsonb, ?, ?) returning id, finished_at`,
      [environment, network, atBlock?.toString() ?? null, checked, JSON.stringify(mismatches), JSON.stringify(held), error, startedAt],
    );
    if (!error) this.onCompared?.({ environment, network, mismatches: mismatches.length, checked });
    for (const m of mismatches) this.log.error({ environment, network, ...m }, 'reconciliation: on-chain balance differs from the ledger');
    // The error object carries the RPC detail for the log (adapter errors keep it out of their message).
    if (error) this.log.warn({ environment, network, err: caught }, 'reconciliation could not compare this network');
    return {
      id: row!.id,
      environment,
      network,
      atBlock: atBlock?.toString() ?? null,
      checked,
      mismatches,
      held,
      error,
      startedAt,
      finishedAt: new Date(row!.finished_at),
    };
  }

  /**
   * Refunds paid from deposits, in the deposits' native books: the gas tank's top-up of the deposit
   * (decoded from the stored top-up, counted at the block it was included in) in, and the fee the
   * deposit paid for its transfer out (topup chains only: a fee payer's fee is the tank's). A top-up
   * or transfer signed and not in a block yet leaves its deposit uncompared this run.
   */
  private async refundNative(
    em: EntityManager,
    target: WatchedNetwork,
    hi: bigint,
    rows: { address: string; dir: 'in' | 'out'; tx_hash: string; block_number: string; amount: string }[],
    skip: { address: string }[],
  ): Promise<void> {
    const { environment, network, adapter } = target;
    const refunds = await em.execute<
      {
        from_address: string;
        funding_raw: string | null;
        funding_block_number: string | null;
        tx_hash: string | null;
        raw_tx: string | null;
        block_number: string | null;
        fee_paid: string;
        status: string;
      }[]
    >(
      `select from_address, funding_raw, funding_block_number::text as funding_block_number, tx_hash, raw_tx, block_number::text as block_number, fee_paid::text as fee_paid, status
       from refunds where environment = ? and network = ? and source = 'deposit' and (funding_raw is not null or raw_tx is not null)`,
      [environment, network],
    );
    const coinSent = adapter.sweeps?.coinSent?.bind(adapter.sweeps);
    const depositPays = adapter.sweeps?.gas === 'topup';
    for (const r of refunds) {
      if (r.funding_raw) {
        if (r.funding_block_number === null) skip.push({ address: r.from_address });
        else {
          // each top-up at its own block (a further one may follow a short first one)
          for (const f of parseFunding(r.funding_raw)) {
            const block = f.block ?? BigInt(r.funding_block_number);
            if (block <= hi)
              for (const c of coinSent?.(f) ?? [])
                rows.push({ address: c.to, dir: 'in', tx_hash: f.txHash, block_number: block.toString(), amount: c.amount.toString() });
          }
        }
      }
      if (!r.raw_tx || !depositPays) continue;
      if (r.status === 'sending' && r.block_number === null) skip.push({ address: r.from_address });
      else if (r.block_number !== null && BigInt(r.block_number) <= hi && BigInt(r.fee_paid) > 0n)
        rows.push({ address: r.from_address, dir: 'out', tx_hash: r.tx_hash!, block_number: r.block_number, amount: r.fee_paid });
    }
  }

  /** The newest run per network of `environment` (operators' query). */
  async latest(em: EntityManager, environment: Environment): Promise<ReconciliationRun[]> {
    const rows = await em.execute<
      {
        id: string;
        environment: Environment;
        network: Network;
        at_block: string | null;
        checked: number;
        mismatches: ReconciliationMismatch[];
        held: ReconciliationHeld[];
        error: string | null;
        started_at: string;
        finished_at: string;
      }[]
    >(
      `select distinct on (network) id, environment, network, at_block::text as at_block, checked, mismatches, held, error, started_at, finished_at
       from reconciliation_runs where environment = ? order by network, finished_at desc`,
      [environment],
    );
    // Runs stored before in-flight transfers were reported have no such fields: none were allowed for.
    return rows.map((r) => ({
      id: r.id,
      environment: r.environment,
      network: r.network,
      atBlock: r.at_block,
      checked: r.checked,
      mismatches: r.mismatches.map((m) => ({ ...m, inFlight: m.inFlight ?? '0', inFlightTxHashes: m.inFlight ? m.inFlightTxHashes : [] })),
      held: r.held,
      error: r.error,
      startedAt: new Date(r.started_at),
      finishedAt: new Date(r.finished_at),
    }));
  }

  /**
   * What the ledger says per (address, token) on this network: received and swept up to block `lo`,
   * the rows in (lo, hi] one by one (receipts in, sweeps out), and the sweeps broadcast but not seen in
   * a block yet. Rows after `hi` are newer than every balance read: left out. A sweep's outflow is its
   * `amount` (the deposit's whole balance as signed) at the block of its transfer; a failed sweep moved
   * nothing (a reverted transfer moves no token).
   */
  private async ledger(em: EntityManager, environment: Environment, network: Network, lo: bigint, hi: bigint, key: PairKey): Promise<Map<string, LedgerPair>> {
    type Row = {
      to_address: string;
      token_address: string;
      dir: 'in' | 'out';
      up_to_lo: string;
      after: { tx_hash: string; log_index: number; block_number: string; amount: string }[] | null;
      sending: string[] | null;
      tx_hashes: string[];
    };
    const rows = await em.execute<Row[]>(
      `select r.to_address, t.address as token_address, r.dir,
              coalesce(sum(r.amount) filter (where not r.sending and r.block_number <= ?::bigint), 0)::text as up_to_lo,
              jsonb_agg(jsonb_build_object('tx_hash', r.tx_hash, 'log_index', r.log_index, 'block_number', r.block_number::text, 'amount', r.amount::text)) filter (where not r.sending and r.block_number > ?::bigint) as after,
              array_agg(r.amount::text) filter (where r.sending) as sending,
              array_agg(distinct r.tx_hash order by r.tx_hash) filter (where r.tx_hash is not null) as tx_hashes
       from (select to_address, token_id, amount, tx_hash, log_index, block_number, 'in' as dir, false as sending from payments where environment = ? and network = ? and status <> 'orphaned'
             union all
             select to_address, token_id, amount, tx_hash, log_index, block_number, 'in', false from unattributed_receipts where environment = ? and network = ? and status <> 'orphaned'
             union all
             select d.address, s.token_id, s.amount, s.tx_hash, -1, s.block_number, 'out', s.status = 'sending'
             from sweeps s join deposits d on d.id = s.deposit_id
             where s.environment = ? and s.network = ? and s.amount is not null
               and (s.status = 'sending' or (s.status in ('sent','confirmed') and s.block_number is not null))
             union all
             -- refunds paid from the deposit: out at the block of their transfer, or in flight while signed and not in a block
             select f.from_address, f.token_id, f.sent_amount, f.tx_hash, -1, f.block_number, 'out', f.block_number is null
             from refunds f
             where f.environment = ? and f.network = ? and f.source = 'deposit' and f.raw_tx is not null and f.sent_amount is not null and f.status in ('sending','confirmed')) r
       join tokens t on t.id = r.token_id
       where r.sending or r.block_number <= ?::bigint
       group by r.to_address, t.address, r.dir`,
      [lo.toString(), lo.toString(), environment, network, environment, network, environment, network, environment, network, hi.toString()],
    );
    const out = new Map<string, LedgerPair>();
    for (const r of rows) {
      const k = key(r.to_address, r.token_address);
      const prev = out.get(k) ?? EMPTY_PAIR;
      const upToLo = BigInt(r.up_to_lo);
      out.set(k, {
        receivedUpToLo: prev.receivedUpToLo + (r.dir === 'in' ? upToLo : 0n),
        sweptUpToLo: prev.sweptUpToLo + (r.dir === 'out' ? upToLo : 0n),
        after: [
          ...prev.after,
          ...(r.after ?? []).map((m) => ({ txHash: m.tx_hash, index: m.log_index, block: BigInt(m.block_number), amount: BigInt(m.amount), dir: r.dir })),
        ],
        sending: [...prev.sending, ...(r.sending ?? []).map(BigInt)],
        txHashes: [...new Set([...prev.txHashes, ...(r.tx_hashes ?? [])])].sort(),
      });
    }
    return out;
  }

  /**
   * Native coin of every deposit address of the family on this network: on chain = native received
   * (`native_coin` receipts not orphaned) + gas top-ups received − native coin swept out (native
   * sweeps in a block: their `amount`) − fees the address paid itself (its own included transfers,
   * failed ones too: `fee_paid`). Counted up to the block the balances were read at, like
   * the tokens (rows in (lo, hi] one by one; native transfers the watcher has not recorded yet are
   * allowed for). Top-ups are what each funding transaction sent to each address, decoded from the
   * stored transaction (`SweepCapability.coinSent`: a plain send, a Disperse call, a TRON
   * `TransferContract`). Not compared, and not counted as checked: an address with a transaction of
   * its own or a top-up still in flight (its fee or amount is not known yet).
   */
  private async nativeMismatches(
    em: EntityManager,
    target: WatchedNetwork,
    owners: string[],
    onChain: bigint[],
    lo: bigint,
    hi: bigint,
  ): Promise<{ checked: number; mismatches: ReconciliationMismatch[] }> {
    const { environment, network, adapter } = target;
    const k = (a: string) => adapter.driver.addressKey(a);
    type Row = { address: string; dir: 'in' | 'out'; tx_hash: string; block_number: string; amount: string };
    const rows = await em.execute<Row[]>(
      `select to_address as address, 'in' as dir, tx_hash, block_number::text as block_number, amount::text as amount
         from unattributed_receipts where environment = ? and network = ? and reason = 'native_coin' and status <> 'orphaned' and block_number <= ?::bigint
       union all
       select signer, 'out', tx_hash, block_number::text, fee_paid::text
         from sweep_txs where environment = ? and network = ? and kind = 'transfer' and state = 'included' and spent is null and fee_paid > 0 and block_number <= ?::bigint
       union all
       select d.address, 'out', s.tx_hash, s.block_number::text, s.amount::text
         from sweeps s join deposits d on d.id = s.deposit_id
         where s.environment = ? and s.network = ? and s.token_id is null and s.status in ('sent','confirmed') and s.block_number <= ?::bigint`,
      [environment, network, hi.toString(), environment, network, hi.toString(), environment, network, hi.toString()],
    );
    // Top-ups: what each funding transaction of the tank sent to each deposit, decoded from the stored transaction.
    const funding = await em.execute<{ tx_hash: string; raw: string; state: string; success: boolean | null; block_number: string | null }[]>(
      `select tx_hash, raw, state, success, block_number::text as block_number from sweep_txs
       where environment = ? and network = ? and kind = 'funding' and (state in ('signed','broadcast') or (state = 'included' and block_number <= ?::bigint))`,
      [environment, network, hi.toString()],
    );
    const coinSent = adapter.sweeps?.coinSent?.bind(adapter.sweeps);
    const skip: { address: string }[] = await em.execute<{ address: string }[]>(
      `select signer as address from sweep_txs where environment = ? and network = ? and kind = 'transfer' and state in ('signed','broadcast')`,
      [environment, network],
    );
    await this.refundNative(em, target, hi, rows, skip);
    for (const f of funding) {
      for (const c of coinSent?.(f) ?? []) {
        // in flight: the amount may or may not have arrived yet
        if (f.state !== 'included') skip.push({ address: c.to });
        else if (f.success) rows.push({ address: c.to, dir: 'in', tx_hash: f.tx_hash, block_number: f.block_number!, amount: c.amount.toString() });
      }
    }
    const skipped = new Set(skip.map((r) => k(r.address)));
    // What the watcher will record but has not yet (log scans past their cursor), like the tokens' in-flight transfers.
    const pending = new Map<string, Movement[]>();
    const observation = adapter.observation;
    if (lo !== hi && observation.kind === 'log-scan' && observation.scanNative) {
      const cursor = (await scannedBlock(em, environment, network)) ?? hi;
      const mine = new Set(owners.map(k));
      const seen = cursor < hi ? await observation.scanNative(cursor + 1n, hi, (to) => mine.has(k(to))) : [];
      const recorded = await this.recordedKeys(
        em,
        environment,
        network,
        seen.map((t) => ({ txHash: t.txHash, index: t.index, block: t.blockNumber, amount: t.amount })),
      );
      const ours = new Set(rows.map((r) => r.tx_hash.toLowerCase()));
      const live = await em.execute<{ tx_hash: string }[]>(`select tx_hash from sweep_txs where environment = ? and network = ?`, [environment, network]);
      for (const l of live) ours.add(l.tx_hash.toLowerCase());
      for (const t of seen) {
        if (recorded.has(`${t.txHash}|${t.index}`) || ours.has(t.txHash.toLowerCase()) || k(t.from) === k(t.to)) continue;
        pending.set(k(t.to), [...(pending.get(k(t.to)) ?? []), { txHash: t.txHash, index: t.index, block: t.blockNumber, amount: t.amount }]);
      }
    }
    const byAddress = new Map<string, Row[]>();
    for (const r of rows) byAddress.set(k(r.address), [...(byAddress.get(k(r.address)) ?? []), r]);
    const { symbol, decimals } = nativeAsset(network);
    let checked = 0;
    const mismatches: ReconciliationMismatch[] = [];
    owners.forEach((owner, i) => {
      const a = k(owner);
      if (skipped.has(a)) return;
      checked++;
      const mine = byAddress.get(a) ?? [];
      const movements: Movement[] = [
        ...mine.map((r) => ({ txHash: r.tx_hash, index: -1, block: BigInt(r.block_number), amount: BigInt(r.amount), dir: r.dir })),
        ...(pending.get(a) ?? []),
      ];
      const upTo = (dir: 'in' | 'out') => movements.filter((m) => m.block <= lo && (m.dir ?? 'in') === dir).reduce((x, m) => x + m.amount, 0n);
      const after = movements.filter((m) => m.block > lo);
      const amount = onChain[i]!;
      if (balanceMatches(amount, upTo('in'), after, lo, hi, upTo('out'))) return;
      const total = (dir: 'in' | 'out') => movements.filter((m) => (m.dir ?? 'in') === dir).reduce((x, m) => x + m.amount, 0n);
      const ledgerAmount = ledgerHolds(total('in'), 0n, total('out'));
      const inFlightAmount = (pending.get(a) ?? []).reduce((x, m) => x + m.amount, 0n);
      mismatches.push({
        address: owner,
        tokenAddress: NATIVE_TOKEN,
        tokenSymbol: symbol,
        onChain: formatDecimal(amount, decimals),
        ledger: formatDecimal(ledgerAmount, decimals),
        onChainBaseUnits: amount.toString(),
        ledgerBaseUnits: ledgerAmount.toString(),
        txHashes: [...new Set(mine.map((r) => r.tx_hash))].sort(),
        failedTxHashes: [],
        inFlight: formatDecimal(inFlightAmount, decimals),
        inFlightTxHashes: [...new Set((pending.get(a) ?? []).map((m) => m.txHash))],
      });
    });
    return { checked, mismatches };
  }

  /** Deposits the sweep engine holds on this network, with the reason (`sweep_holds`). */
  private async held(em: EntityManager, environment: Environment, network: Network): Promise<ReconciliationHeld[]> {
    const native = nativeAsset(network);
    const rows = await em.execute<
      {
        deposit_id: string;
        address: string;
        token_address: string | null;
        symbol: string | null;
        decimals: number | null;
        balance: string;
        reason: string;
        fee: string;
        checked_at: Date;
      }[]
    >(
      `select h.deposit_id, d.address, t.address as token_address, t.symbol, t.decimals, h.balance::text as balance, h.reason, h.fee::text as fee, h.checked_at
       from sweep_holds h join deposits d on d.id = h.deposit_id left join tokens t on t.id = h.token_id
       where h.environment = ? and h.network = ? order by h.checked_at, h.deposit_id`,
      [environment, network],
    );
    return rows.map((r) => ({
      depositId: r.deposit_id,
      address: r.address,
      tokenAddress: r.token_address ?? NATIVE_TOKEN,
      tokenSymbol: r.symbol ?? native.symbol,
      balance: formatDecimal(BigInt(r.balance), r.decimals ?? native.decimals),
      balanceBaseUnits: r.balance,
      reason: r.reason,
      fee: r.fee,
      checkedAt: new Date(r.checked_at).toISOString(),
    }));
  }

  /**
   * Transfers the watcher will record but has not yet, up to block `hi`, per (address, token): observed
   * past its cursor(s) with its own rules (the addresses it watches, registry tokens of the network,
   * amount > 0, not from the address itself). Log scans read (cursor, hi]; account polls ask every
   * watched deposit of the network since its own cursor.
   */
  private async inFlight(
    em: EntityManager,
    target: WatchedNetwork,
    tokens: { address: string; decimals: number; symbol: string }[],
    hi: bigint,
    key: PairKey,
  ): Promise<Map<string, Movement[]>> {
    const { environment, network, adapter } = target;
    const deposits = await em.execute<{ address: string; network: Network; token_address: string; cursor: string | null }[]>(
      `select d.address, d.network, t.address as token_address, d.cursor
       from deposits d join tokens t on t.id = d.token_id join orders o on o.id = d.order_id
       where d.environment = ? and d.family = ? and o.expires_at > now() - make_interval(secs => ?)`,
      [environment, adapter.family, this.watchRetentionS],
    );
    const watched = new Set(deposits.map((d) => adapter.driver.addressKey(d.address)));
    const registry = new Set(tokens.map((t) => adapter.driver.addressKey(t.address)));
    let observed: ObservedTransfer[];
    const observation = adapter.observation;
    if (observation.kind === 'log-scan') {
      const cursor = (await scannedBlock(em, environment, network)) ?? hi;
      if (hi - cursor > MAX_IN_FLIGHT_BLOCKS) throw new Error(`the watcher is ${hi - cursor} blocks behind the head: reconcile once it has caught up`);
      observed = cursor < hi ? await observation.scanTransfers(cursor + 1n, hi, tokens, (to) => watched.has(adapter.driver.addressKey(to))) : [];
    } else {
      // As the watcher polls: every watched token at every owner of the network.
      const polled = pollEveryToken(
        deposits.filter((d) => d.network === network).map((d) => ({ owner: d.address, cursor: d.cursor })),
        tokens,
      );
      observed = polled.length ? (await observation.pollDeposits(polled)).transfers : [];
    }
    const out = new Map<string, Movement[]>();
    for (const t of observed) {
      const to = adapter.driver.addressKey(t.to);
      if (
        t.amount <= 0n ||
        t.blockNumber > hi ||
        adapter.driver.addressKey(t.from) === to ||
        !watched.has(to) ||
        !registry.has(adapter.driver.addressKey(t.token))
      )
        continue;
      const k = key(t.to, t.token);
      out.set(k, [...(out.get(k) ?? []), { txHash: t.txHash, index: t.index, block: t.blockNumber, amount: t.amount }]);
    }
    return out;
  }

  /** (tx hash | index) of the given movements the ledger already holds (not orphaned). */
  private async recordedKeys(em: EntityManager, environment: Environment, network: Network, movements: Movement[]): Promise<Set<string>> {
    if (!movements.length) return new Set();
    const hashes = [...new Set(movements.map((m) => m.txHash))];
    const list = hashes.map(() => '?').join(',');
    const rows = await em.execute<{ tx_hash: string; log_index: number }[]>(
      `select tx_hash, log_index from payments where environment = ? and network = ? and status <> 'orphaned' and tx_hash in (${list})
       union select tx_hash, log_index from unattributed_receipts where environment = ? and network = ? and status <> 'orphaned' and tx_hash in (${list})`,
      [environment, network, ...hashes, environment, network, ...hashes],
    );
    return new Set(rows.map((r) => `${r.tx_hash}|${r.log_index}`));
  }

  private async failures(em: EntityManager, environment: Environment, network: Network, key: PairKey): Promise<Map<string, string[]>> {
    const rows = await em.execute<{ to_address: string; token_address: string; tx_hashes: string[] }[]>(
      `select to_address, token_address, array_agg(distinct tx_hash order by tx_hash) as tx_hashes from watcher_failures where environment = ? and network = ? group by to_address, token_address`,
      [environment, network],
    );
    return new Map(rows.map((r) => [key(r.to_address, r.token_address), r.tx_hashes]));
  }
}
