import type { EntityManager } from '@mikro-orm/postgresql';
import type { Environment, Network } from '../../common/environment.js';
import { gasTankHealth, type GasTankHealth, type GasTankState } from '../sweeps/gas-tank.service.js';
import { watcherState, type WatcherHealthRow, type WatcherState } from './watcher-health.js';

/**
 * A merchant's view of one network: is the gateway following the chain (so payments are seen), and
 * can sweeps pay their fees (so money reaches the settlement wallet). Built from what `/readyz`
 * details and the operators' `gasTanks` show (`watcherState`, `gasTankHealth`), without any
 * infrastructure detail: no provider URL or host, no error text, no tank address or balance.
 *
 * - `watcher`: `following` (fresh), `lagging` (polling but behind the head for longer than
 *   WATCHER_LAG_S), `down` (no poll completed for WATCHER_STALL_S: stalled or every provider down),
 *   `unknown` (no watcher has reported on this network yet);
 * - providers `up`: on the expected chain and not demoted by their health score; `down`: the rest
 *   (refused for serving another chain, not verified or unreachable, demoted);
 * - `gasTank`: null when the network has no tank in this environment or it was never checked;
 * - `sweepsWaitingForGas`: this merchant's sweeps waiting (planned) while the tank is not `ok`; 0 when it is.
 */
export type MerchantWatcherState = 'following' | 'lagging' | 'down' | 'unknown';

export interface NetworkHealth {
  network: Network;
  watcher: MerchantWatcherState;
  /** The last block (slot) scanned; null before the first scan. */
  lastBlock: string | null;
  /** Blocks (slots) between the chain head and the last scanned one; null when either is unknown. */
  blocksBehind: number | null;
  lastPolledAt: Date | null;
  /** Seconds since the last completed poll, by the gateway's clock; null before the first. */
  secondsSincePoll: number | null;
  providersUp: number;
  providersDown: number;
  gasTank: GasTankHealth | null;
  sweepsWaitingForGas: number;
}

const MERCHANT_STATE: Record<WatcherState, MerchantWatcherState> = { fresh: 'following', lagging: 'lagging', stalled: 'down', provider_down: 'down' };

/** Pure: the merchant-facing health of each network of `environment` that has a watcher or a gas tank, in network order. */
export function networkHealth(
  environment: Environment,
  watchers: WatcherHealthRow[],
  tanks: GasTankState[],
  plannedSweeps: Partial<Record<Network, number>>,
  now: number,
  limits: { stallS: number; lagS: number },
): NetworkHealth[] {
  const byNetwork = new Map<Network, { watcher?: WatcherHealthRow; tank?: GasTankState }>();
  for (const w of watchers) if (w.environment === environment) byNetwork.set(w.network, { ...byNetwork.get(w.network), watcher: w });
  for (const t of tanks) if (t.environment === environment) byNetwork.set(t.network, { ...byNetwork.get(t.network), tank: t });
  return [...byNetwork.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([network, { watcher: w, tank }]) => {
      const up = w ? w.providers.filter((p) => p.state === 'ok' && p.health !== 'demoted').length : 0;
      const behind = w?.headBlock != null && w.scannedBlock != null ? BigInt(w.headBlock) - BigInt(w.scannedBlock) : null;
      const gas = tank && tank.checkedAt ? gasTankHealth(tank) : null;
      return {
        network,
        watcher: w ? MERCHANT_STATE[watcherState(w, now, limits)] : 'unknown',
        lastBlock: w?.scannedBlock ?? null,
        blocksBehind: behind === null ? null : Number(behind < 0n ? 0n : behind > 2_147_483_647n ? 2_147_483_647n : behind),
        lastPolledAt: w?.lastOkAt ?? null,
        secondsSincePoll: w?.lastOkAt ? Math.max(0, Math.floor((now - w.lastOkAt.getTime()) / 1000)) : null,
        providersUp: up,
        providersDown: w ? w.providers.length - up : 0,
        gasTank: gas,
        sweepsWaitingForGas: gas !== null && gas !== 'ok' ? (plannedSweeps[network] ?? 0) : 0,
      };
    });
}

/** The merchant's sweeps waiting for their gas (planned), per network of `environment`. */
export async function plannedSweepCounts(em: EntityManager, merchantId: string, environment: Environment): Promise<Partial<Record<Network, number>>> {
  const rows = await em.execute<{ network: Network; n: string }[]>(
    `select network, count(*) as n from sweeps where merchant_id = ? and environment = ? and status = 'planned' group by network`,
    [merchantId, environment],
  );
  return Object.fromEntries(rows.map((r) => [r.network, Number(r.n)]));
}
