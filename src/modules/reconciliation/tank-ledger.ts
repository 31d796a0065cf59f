import type { EntityManager } from '@mikro-orm/postgresql';
import { NATIVE_TOKEN } from '../../chains/chain-adapter.js';
import type { WatchedNetwork } from '../../chains/networks.js';
import { nativeAsset } from '../../chains/registry.js';
import type { Environment, Network } from '../../common/environment.js';
import { formatDecimal } from '../../common/money.js';
import type { Movement, ReconciliationMismatch } from './reconciliation.service.js';

/** What the books say of one gas tank, up to the block its balance was read at. */
export interface TankBook {
  address: string;
  /** Openings and refills recorded (`gas_tank_fundings`); null: the tank's ledger was never opened (not compared). */
  funded: bigint | null;
  /** What included transactions the tank paid for cost it (`sweep_txs.spent`, refunds' top-ups and `tank_spent`), up to `lo`. */
  spentUpToLo: bigint;
  /** The same in (lo, hi], one by one (counted only when the balance was read after their block). */
  after: Movement[];
  /** A transaction the tank pays for is signed or broadcast: its cost is not known yet (not compared). */
  inFlight: boolean;
}

/**
 * The gas tank's ledger against the chain: its balance = funded (the opening and every refill
 * recorded, `gas_tank_fundings`) − spent (everything each included transaction it paid for cost
 * it: fees, top-ups, activations, rent: sweeps' `sweep_txs.spent`, refunds' top-ups of their source
 * (each stored top-up's `spent`, in `refunds.funding_raw`), and refunds' transfers on fee-payer chains `refunds.tank_spent`). Read at
 * the same block or fence as the deposits. Not compared while the tank's ledger was never opened or
 * one of its transactions is in flight (a sweep's, a refund's top-up not seen in a block, a fee-payer
 * refund transfer not in a block).
 */
export class TankLedger {
  /** The tank's address on this network (`gas_tanks`), or null when the engine never looked at one. */
  async address(em: EntityManager, environment: Environment, network: Network): Promise<string | null> {
    const [row] = await em.execute<{ address: string }[]>(`select address from gas_tanks where environment = ? and network = ?`, [environment, network]);
    return row?.address ?? null;
  }

  async book(em: EntityManager, target: WatchedNetwork, address: string, lo: bigint, hi: bigint): Promise<TankBook> {
    const { environment, network } = target;
    const [f] = await em.execute<{ funded: string | null; opened: boolean }[]>(
      `select sum(amount)::text as funded, bool_or(kind = 'opening') as opened from gas_tank_fundings where environment = ? and network = ? and address = ?`,
      [environment, network, address],
    );
    const feePayer = target.adapter.sweeps?.gas === 'fee-payer';
    // Sweeps' transactions, refunds' top-ups of their source, and refunds' transfers the tank paid the fee of.
    const spent = await em.execute<{ tx_hash: string; block_number: string; spent: string }[]>(
      `select tx_hash, block_number::text, spent::text from sweep_txs
         where environment = ? and network = ? and state = 'included' and spent is not null and block_number <= ?::bigint
       union all
       select f.value->>'txHash', f.value->>'block', f.value->>'spent' from refunds r cross join lateral jsonb_array_elements(r.funding_raw::jsonb) f
         where r.environment = ? and r.network = ? and r.funding_raw is not null and f.value->>'spent' is not null and (f.value->>'block')::bigint <= ?::bigint
       union all
       select tx_hash, block_number::text, tank_spent::text from refunds
         where environment = ? and network = ? and tank_spent is not null and block_number <= ?::bigint`,
      [environment, network, hi.toString(), environment, network, hi.toString(), environment, network, hi.toString()],
    );
    const [flight] = await em.execute<{ n: number }[]>(
      `select (select count(*)::int from sweep_txs where environment = ? and network = ? and state in ('signed','broadcast') and (signer = ? or ?))
            + (select count(*)::int from refunds where environment = ? and network = ? and funding_raw is not null and funding_block_number is null)
            + (select count(*)::int from refunds where environment = ? and network = ? and ? and status = 'sending' and block_number is null) as n`,
      [environment, network, address, feePayer, environment, network, environment, network, feePayer],
    );
    return {
      address,
      funded: f?.opened ? BigInt(f.funded ?? '0') : null,
      spentUpToLo: spent.filter((s) => BigInt(s.block_number) <= lo).reduce((x, s) => x + BigInt(s.spent), 0n),
      after: spent
        .filter((s) => BigInt(s.block_number) > lo)
        .map((s) => ({ txHash: s.tx_hash, index: -1, block: BigInt(s.block_number), amount: BigInt(s.spent), dir: 'out' as const })),
      inFlight: (flight?.n ?? 0) > 0,
    };
  }

  /** The mismatch of a tank whose balance is not what its book says (the caller decides with `balanceMatches`). */
  mismatch(network: Network, book: TankBook, onChain: bigint): ReconciliationMismatch {
    const { symbol, decimals } = nativeAsset(network);
    const ledger = (book.funded ?? 0n) - book.spentUpToLo - book.after.reduce((x, m) => x + m.amount, 0n);
    return {
      address: book.address,
      tokenAddress: NATIVE_TOKEN,
      tokenSymbol: symbol,
      onChain: formatDecimal(onChain, decimals),
      ledger: formatDecimal(ledger, decimals),
      onChainBaseUnits: onChain.toString(),
      ledgerBaseUnits: ledger.toString(),
      txHashes: book.after.map((m) => m.txHash),
      failedTxHashes: [],
      inFlight: '0',
      inFlightTxHashes: [],
    };
  }

  /**
   * Opens the tank's ledger: its balance on chain now, plus what it has spent so far, as the
   * `opening` funding (so that funded − spent is the balance read). Refused while one of its
   * transactions is in flight or one was included while the balance was read (try again).
   */
  async open(em: EntityManager, target: WatchedNetwork): Promise<{ address: string; balance: bigint; opening: bigint }> {
    const { environment, network, adapter } = target;
    const address = await this.address(em, environment, network);
    if (!address) throw new Error(`${environment}:${network} has no gas tank recorded yet (start the worker once)`);
    if (!adapter.balances) throw new Error(`${network}: the adapter reads no balances`);
    const lo = (await adapter.getHead()).latest;
    const [balance] = await adapter.balances.nativeBalances([address], null, 1);
    const hi = (await adapter.getHead()).latest;
    const book = await this.book(em, target, address, lo, hi);
    if (book.inFlight || book.after.length) throw new Error(`a transaction of the ${network} gas tank is in flight: open its ledger again in a moment`);
    const opening = balance! + book.spentUpToLo;
    await em.execute(`insert into gas_tank_fundings (environment, network, address, kind, amount, note) values (?, ?, ?, 'opening', ?, ?)`, [
      environment,
      network,
      address,
      opening.toString(),
      `balance ${balance} + spent ${book.spentUpToLo} at block ${lo}`,
    ]);
    return { address, balance: balance!, opening };
  }

  /** Records coin an operator sent to the tank (negative: took out), so the reconciliation expects it. */
  async refill(em: EntityManager, environment: Environment, network: Network, amount: bigint, txHash: string | null, note: string | null): Promise<void> {
    if (amount === 0n) throw new Error('a refill of 0 records nothing');
    const address = await this.address(em, environment, network);
    if (!address) throw new Error(`${environment}:${network} has no gas tank recorded yet`);
    await em.execute(`insert into gas_tank_fundings (environment, network, address, kind, amount, tx_hash, note) values (?, ?, ?, 'refill', ?, ?, ?)`, [
      environment,
      network,
      address,
      amount.toString(),
      txHash,
      note,
    ]);
  }
}
