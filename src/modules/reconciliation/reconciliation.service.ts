import type { EntityManager } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import type { BalanceQuery } from '../../chains/chain-adapter.js';
import type { WatchedNetwork } from '../../chains/networks.js';
import type { Environment, Network } from '../../common/environment.js';
import { gauge } from '../../common/metrics.js';
import { formatDecimal } from '../../common/money.js';
import type { TokenService } from '../tokens/token.service.js';

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
}

export interface ReconciliationRun {
  id: string;
  environment: Environment;
  network: Network;
  /** Block both sides were read at (the watcher's cursor); null when nothing was scanned yet or on error. */
  atBlock: string | null;
  /** (address, token) pairs compared. */
  checked: number;
  mismatches: ReconciliationMismatch[];
  /** Why the run could not compare (no balance reads on this chain, RPC failure); null when it did. */
  error: string | null;
  startedAt: Date;
  finishedAt: Date;
}

/** Comparison key of an (address, token) pair under the chain's address rules. */
type PairKey = (owner: string, token: string) => string;

const mismatchGauge = gauge('gateway_reconciliation_mismatches', 'Deposit (address, token) pairs whose on-chain balance differs from the ledger at the last reconciliation');
const checkedGauge = gauge('gateway_reconciliation_checked', 'Deposit (address, token) pairs compared at the last reconciliation');

/**
 * Compares, per network, every deposit address's on-chain token balances with what the ledger says
 * it holds: received (payments not reorganised away, and unattributed receipts) − swept − fees (no
 * sweeps exist yet, so received). Both sides are taken at the watcher's cursor block where the chain
 * can read balances at a block (EVM), so transfers the scan has not reached yet are not mismatches.
 * Every address of the chain family is read for every active token of the network, which also covers
 * another token, and an address of another network of the family. Each run is stored in
 * `reconciliation_runs` (the operators' record, read by the GraphQL `reconciliation` query), each
 * mismatch logged at error level, and the counts exported as gauges.
 */
export class ReconciliationService {
  constructor(
    private readonly tokens: TokenService,
    private readonly log: Logger,
    private readonly concurrency: number,
  ) {}

  async reconcile(em: EntityManager, target: WatchedNetwork): Promise<ReconciliationRun> {
    const { environment, network, adapter } = target;
    const startedAt = new Date();
    let atBlock: bigint | null = null;
    let checked = 0;
    let mismatches: ReconciliationMismatch[] = [];
    let error: string | null = null;
    try {
      if (!adapter.balances) throw new Error(`balance reads are not implemented for ${network} yet`);
      const [cursor] = await em.execute<{ block_number: string }[]>('select block_number from chain_cursors where environment = ? and network = ?', [environment, network]);
      if (cursor) {
        atBlock = BigInt(cursor.block_number);
        const at = adapter.balances.atBlock ? atBlock : null;
        const tokens = await this.tokens.listActive(em, environment, network);
        const addresses = await em.execute<{ address: string }[]>('select distinct address from deposits where environment = ? and family = ? order by address', [environment, adapter.family]);
        const queries: BalanceQuery[] = addresses.flatMap((a) => tokens.map((t) => ({ owner: a.address, token: { address: t.address, decimals: t.decimals, symbol: t.symbol } })));
        const balances = await adapter.balances.tokenBalances(queries, at, this.concurrency);
        const key = (owner: string, token: string) => `${adapter.driver.addressKey(owner)}|${adapter.driver.addressKey(token)}`;
        const ledger = await this.ledger(em, environment, network, at, key);
        const failures = await this.failures(em, environment, network, key);
        checked = queries.length;
        mismatches = queries.flatMap((q, i) => {
          const k = key(q.owner, q.token.address);
          const held = ledger.get(k) ?? { amount: 0n, txHashes: [] };
          const onChain = balances[i]!;
          if (onChain === held.amount) return [];
          return [
            {
              address: q.owner,
              tokenAddress: q.token.address,
              tokenSymbol: q.token.symbol,
              onChain: formatDecimal(onChain, q.token.decimals),
              ledger: formatDecimal(held.amount, q.token.decimals),
              onChainBaseUnits: onChain.toString(),
              ledgerBaseUnits: held.amount.toString(),
              txHashes: held.txHashes,
              failedTxHashes: failures.get(k) ?? [],
            },
          ];
        });
      }
    } catch (err) {
      error = err instanceof Error ? err.message : String(err);
    }
    const [row] = await em.execute<{ id: string; finished_at: string }[]>(
      `insert into reconciliation_runs (environment, network, at_block, checked, mismatches, error, started_at) values (?, ?, ?, ?, ?::jsonb, ?, ?) returning id, finished_at`,
      [environment, network, atBlock?.toString() ?? null, checked, JSON.stringify(mismatches), error, startedAt],
    );
    const labels = { environment, network };
    if (!error) {
      mismatchGauge.set(labels, mismatches.length);
      checkedGauge.set(labels, checked);
    }
    for (const m of mismatches) this.log.error({ environment, network, ...m }, 'reconciliation: on-chain balance differs from the ledger');
    if (error) this.log.warn({ environment, network, err: error }, 'reconciliation could not compare this network');
    return { id: row!.id, environment, network, atBlock: atBlock?.toString() ?? null, checked, mismatches, error, startedAt, finishedAt: new Date(row!.finished_at) };
  }

  /** The newest run per network of `environment` (operators' query). */
  async latest(em: EntityManager, environment: Environment): Promise<ReconciliationRun[]> {
    const rows = await em.execute<{ id: string; environment: Environment; network: Network; at_block: string | null; checked: number; mismatches: ReconciliationMismatch[]; error: string | null; started_at: string; finished_at: string }[]>(
      `select distinct on (network) id, environment, network, at_block::text as at_block, checked, mismatches, error, started_at, finished_at
       from reconciliation_runs where environment = ? order by network, finished_at desc`,
      [environment],
    );
    return rows.map((r) => ({ id: r.id, environment: r.environment, network: r.network, atBlock: r.at_block, checked: r.checked, mismatches: r.mismatches, error: r.error, startedAt: new Date(r.started_at), finishedAt: new Date(r.finished_at) }));
  }

  /** What the ledger says each (address, token) received on this network, up to block `at`. */
  private async ledger(em: EntityManager, environment: Environment, network: Network, at: bigint | null, key: PairKey): Promise<Map<string, { amount: bigint; txHashes: string[] }>> {
    const rows = await em.execute<{ to_address: string; token_address: string; amount: string; tx_hashes: string[] }[]>(
      `select r.to_address, t.address as token_address, sum(r.amount)::text as amount, array_agg(distinct r.tx_hash order by r.tx_hash) as tx_hashes
       from (select to_address, token_id, amount, tx_hash, block_number from payments where environment = ? and network = ? and status <> 'orphaned'
             union all
             select to_address, token_id, amount, tx_hash, block_number from unattributed_receipts where environment = ? and network = ? and status <> 'orphaned') r
       join tokens t on t.id = r.token_id
       where ?::bigint is null or r.block_number <= ?::bigint
       group by r.to_address, t.address`,
      [environment, network, environment, network, at?.toString() ?? null, at?.toString() ?? null],
    );
    const out = new Map<string, { amount: bigint; txHashes: string[] }>();
    for (const r of rows) {
      const k = key(r.to_address, r.token_address);
      const prev = out.get(k);
      out.set(k, { amount: (prev?.amount ?? 0n) + BigInt(r.amount), txHashes: [...(prev?.txHashes ?? []), ...r.tx_hashes] });
    }
    return out;
  }

  private async failures(em: EntityManager, environment: Environment, network: Network, key: PairKey): Promise<Map<string, string[]>> {
    const rows = await em.execute<{ to_address: string; token_address: string; tx_hashes: string[] }[]>(
      `select to_address, token_address, array_agg(distinct tx_hash order by tx_hash) as tx_hashes from watcher_failures where environment = ? and network = ? group by to_address, token_address`,
      [environment, network],
    );
    return new Map(rows.map((r) => [key(r.to_address, r.token_address), r.tx_hashes]));
  }
}
