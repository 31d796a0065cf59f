import type { EntityManager } from '@mikro-orm/postgresql';
import type { Environment, Network } from '../../common/environment.js';

/**
 * Reads of `chain_cursors` (raw SQL, docs/decisions/0001-hot-path-sql.md): the newest block or slot
 * each watcher has scanned and committed. The watcher itself (chain-watcher.ts) is the only writer.
 */

/** The scanned block of one network, or null before its watcher stored one. */
export async function scannedBlock(em: EntityManager, environment: Environment, network: Network): Promise<bigint | null> {
  const [c] = await em.execute<{ block_number: string }[]>('select block_number::text from chain_cursors where environment = ? and network = ?', [
    environment,
    network,
  ]);
  return c ? BigInt(c.block_number) : null;
}

/** The scanned block of every network of an environment that has a cursor. */
export async function scannedBlocks(em: EntityManager, environment: Environment): Promise<Map<Network, bigint>> {
  const rows = await em.execute<{ network: Network; block_number: string }[]>(`select network, block_number::text from chain_cursors where environment = ?`, [
    environment,
  ]);
  return new Map(rows.map((r) => [r.network, BigInt(r.block_number)]));
}
