import type { EntityManager } from '@mikro-orm/postgresql';
import type { ProviderStatus } from '../../chains/chain-identity.js';
import type { Environment, Network } from '../../common/environment.js';
import type { WatcherHealthSnapshot } from './chain-watcher.js';

/**
 * A watcher's health as `/readyz` details show it:
 * - `fresh`: polling, and everything up to the chain head scanned within `lagS`;
 * - `lagging`: polling, but not caught up with the head for longer than `lagS` (a long catch-up, a slow provider);
 * - `stalled`: no poll completed for `stallS` and none failed since (a node that stopped answering
 *   mid-call, a worker gone);
 * - `provider_down`: no poll completed for `stallS` and the last one failed (every provider
 *   unreachable, rate-limited or refused for serving another chain: see `providers`).
 */
export type WatcherState = 'fresh' | 'lagging' | 'stalled' | 'provider_down';

/**
 * One provider of a watcher as `/readyz` shows it (host only): its chain identity (`state`: `ok`,
 * `refused` for another chain, `unknown`) and its health score (src/chains/provider-health.ts):
 * `healthy` or `demoted` (skipped until `retryAt`), the recent error rate (0–1), latency, head and how
 * many blocks (slots) it lags behind the best head its watcher's providers reported.
 */
export interface WatcherProvider extends ProviderStatus {
  health?: 'healthy' | 'demoted';
  rank?: number;
  errorRate?: number;
  latencyMs?: number | null;
  head?: string | null;
  lagBlocks?: string | null;
  lastFailure?: string | null;
  retryAt?: number | null;
}

export interface WatcherHealthRow {
  environment: Environment;
  network: Network;
  headBlock: string | null;
  scannedBlock: string | null;
  lastOkAt: Date | null;
  lastErrorAt: Date | null;
  lastError: string | null;
  caughtUpAt: Date | null;
  startedAt: Date;
  chainId: string | null;
  genesisHash: string | null;
  providers: WatcherProvider[];
  updatedAt: Date;
}

/** Pure: the state of one watcher at `now` (ms). */
export function watcherState(
  h: Pick<WatcherHealthRow, 'lastOkAt' | 'lastErrorAt' | 'caughtUpAt' | 'startedAt'>,
  now: number,
  limits: { stallS: number; lagS: number },
): WatcherState {
  const okAt = h.lastOkAt?.getTime() ?? null;
  const since = okAt ?? h.startedAt.getTime();
  if (now - since > limits.stallS * 1000) {
    const failing = h.lastErrorAt !== null && (okAt === null || h.lastErrorAt.getTime() > okAt);
    return failing ? 'provider_down' : 'stalled';
  }
  if (now - (h.caughtUpAt?.getTime() ?? h.startedAt.getTime()) > limits.lagS * 1000) return 'lagging';
  return 'fresh';
}

const ts = (ms: number | null) => (ms === null ? null : new Date(ms));

/** Writes a watcher's snapshot (the worker, after its polls); one row per (environment, network). */
export async function saveWatcherHealth(em: EntityManager, h: WatcherHealthSnapshot): Promise<void> {
  await em.execute(
    `insert into watcher_health (environment, network, head_block, scanned_block, last_ok_at, last_error_at, last_error, caught_up_at, started_at, chain_id, genesis_hash, providers, updated_at)
     values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?::jsonb, now())
     on conflict (environment, network) do update set head_block = excluded.head_block, scanned_block = excluded.scanned_block, last_ok_at = excluded.last_ok_at,
       last_error_at = excluded.last_error_at, last_error = excluded.last_error, caught_up_at = excluded.caught_up_at, started_at = excluded.started_at,
       chain_id = excluded.chain_id, genesis_hash = excluded.genesis_hash, providers = excluded.providers, updated_at = now()`,
    [
      h.environment,
      h.network,
      h.headBlock?.toString() ?? null,
      h.scannedBlock?.toString() ?? null,
      ts(h.lastOkAt),
      ts(h.lastErrorAt),
      h.lastError?.slice(0, 500) ?? null,
      ts(h.caughtUpAt),
      new Date(h.startedAt),
      h.identity?.chainId ?? null,
      h.identity?.genesis ?? null,
      JSON.stringify(h.providers),
    ],
  );
}

/** Every watcher's stored health (`/readyz`). */
export async function readWatcherHealth(em: EntityManager): Promise<WatcherHealthRow[]> {
  const rows = await em.execute<
    {
      environment: Environment;
      network: Network;
      head_block: string | null;
      scanned_block: string | null;
      last_ok_at: Date | null;
      last_error_at: Date | null;
      last_error: string | null;
      caught_up_at: Date | null;
      started_at: Date;
      chain_id: string | null;
      genesis_hash: string | null;
      providers: WatcherProvider[];
      updated_at: Date;
    }[]
  >(`select * from watcher_health order by environment, network`);
  const d = (v: Date | string | null) => (v === null ? null : new Date(v));
  return rows.map((r) => ({
    environment: r.environment,
    network: r.network,
    headBlock: r.head_block === null ? null : String(r.head_block),
    scannedBlock: r.scanned_block === null ? null : String(r.scanned_block),
    lastOkAt: d(r.last_ok_at),
    lastErrorAt: d(r.last_error_at),
    lastError: r.last_error,
    caughtUpAt: d(r.caught_up_at),
    startedAt: new Date(r.started_at),
    chainId: r.chain_id,
    genesisHash: r.genesis_hash,
    providers: Array.isArray(r.providers) ? r.providers : [],
    updatedAt: new Date(r.updated_at),
  }));
}
