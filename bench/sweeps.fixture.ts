import type { EntityManager } from '@mikro-orm/postgresql';
import type { Network } from '../src/common/environment.js';
import type { SweepEngine } from '../src/modules/sweeps/sweep.engine.js';
import type { Orm } from '../src/db/orm.js';

type Conn = ReturnType<EntityManager['getConnection']>;

/** Paid deposits of one network, as the watcher leaves them: order, quote, settled deposit, confirmed payment (bulk SQL). */
export interface PaidDeposits {
  merchantId: string;
  walletId: string;
  network: Network;
  family: 'evm' | 'tron' | 'solana';
  walletType: 'METAMASK' | 'TRUSTWALLET' | 'PHANTOM';
  tokenId: string;
  decimals: number;
  /** Deposit addresses, derived at `firstIndex`, `firstIndex + 1`, … of the merchant's wallet. */
  addresses: string[];
  firstIndex: number;
  amount: bigint;
  payer: string;
  /** Unique per batch of rows (row ids and order numbers derive from it). */
  tag: string;
}

export async function seedPaidDeposits(c: Conn, p: PaidDeposits): Promise<void> {
  const n = p.addresses.length;
  const id = (kind: string) => `md5('${p.tag}-${kind}' || i)::uuid`;
  const addr = `(?::text[])[i + 1]`;
  const addrs = `{${p.addresses.join(',')}}`;
  const amount = p.amount.toString();
  await c.execute(
    `insert into orders (id, merchant_id, environment, order_no, amount, status, expires_at, paid_at)
     select ${id('o')}, ?, 'sandbox', ? || '-' || i, 162500, 'Success', now() + interval '1 day', now() from generate_series(0, ? - 1) i`,
    [p.merchantId, p.tag, n],
  );
  await c.execute(
    `insert into quotes (id, order_id, token_id, network, decimals, rate_source, crypto_rate, amount_idr, amount_crypto, fee_percent, fee_included,
                         fee_amount_idr, fee_amount_crypto, total_idr, total_crypto, merchant_receives_idr, merchant_receives_crypto)
     select ${id('q')}, ${id('o')}, ?, ?, ?, 'fallback', '16250', 162500, ?::numeric, '0', true, 0, 0, 162500, ?::numeric, 162500, ?::numeric
     from generate_series(0, ? - 1) i`,
    [p.tokenId, p.network, p.decimals, amount, amount, amount, n],
  );
  await c.execute(
    `insert into deposits (id, order_id, token_id, quote_id, wallet_id, environment, network, family, derivation_index, address, wallet_type,
                           unique_code, unique_code_amount, total_amount, total_amount_fiat, expires_at, status, amount_received)
     select ${id('d')}, ${id('o')}, ?, ${id('q')}, ?, 'sandbox', ?, ?, ? + i, ${addr}, ?,
            i % 999 + 1, 0, ?::numeric, 162500, now() + interval '1 day', 'settled', ?::numeric
     from generate_series(0, ? - 1) i`,
    [p.tokenId, p.walletId, p.network, p.family, p.firstIndex, addrs, p.walletType, amount, amount, n],
  );
  await c.execute(
    `insert into payments (id, environment, network, tx_hash, log_index, block_number, block_hash, token_id, deposit_id, order_id, from_address, to_address, amount, status, confirmed_at)
     select ${id('p')}, 'sandbox', ?, ? || '-' || i, 0, 1, '0x00', ?, ${id('d')}, ${id('o')}, ?, ${addr}, ?::numeric, 'confirmed', now()
     from generate_series(0, ? - 1) i`,
    [p.network, p.tag, p.tokenId, p.payer, addrs, amount, n],
  );
}

export async function tokenId(c: Conn, network: Network, address: string): Promise<string> {
  const [t] = await c.execute<{ id: string }[]>(
    `select id from tokens where environment = 'sandbox' and network = ? and address = ? order by profile limit 1`,
    [network, address],
  );
  if (!t) throw new Error(`no sandbox ${network} token ${address}`);
  return t.id;
}

export const confirmedSweeps = async (c: Conn, network: Network): Promise<number> =>
  (await c.execute<{ n: number }[]>(`select count(*)::int as n from sweeps where network = ? and status = 'confirmed'`, [network]))[0]!.n;

/**
 * Ticks the engine (the job's loop without Agenda) until `count` sweeps of the network are confirmed;
 * `between` runs after each tick (mine a block, advance slots) and `done` (optional) must also hold
 * (reclaims finished).
 */
export async function sweepUntilConfirmed(
  orm: Orm,
  engine: SweepEngine,
  network: Network,
  count: number,
  between: () => Promise<void> = async () => undefined,
  done: () => Promise<boolean> = async () => true,
): Promise<number> {
  const c = orm.em.getConnection();
  for (let ticks = 1; ; ticks++) {
    await engine.tick(orm.em.fork());
    const n = await confirmedSweeps(c, network);
    if (n >= count && (await settled(c, network)) && (await done())) return ticks;
    if (ticks > 2000) throw new Error(`${network}: only ${n} of ${count} sweeps confirmed after ${ticks} ticks`);
    await between();
  }
}

/** No transaction of the network is waiting to be seen in a block (the ledger has every one the chain has). */
const settled = async (c: Conn, network: Network): Promise<boolean> =>
  (
    await c.execute<{ n: number }[]>(
      `select count(*)::int as n from sweep_txs where environment = 'sandbox' and network = ? and state in ('signed','broadcast')`,
      [network],
    )
  )[0]!.n === 0;

/** The tank's ledger: what every included transaction it paid for cost it (`sweep_txs.spent`, base units), in total and in transactions. */
export interface Ledger {
  spent: bigint;
  /** The same by kind of transaction (funding, transfer, batch, reclaim). */
  byKind: Record<string, bigint>;
}

export async function tankLedger(c: Conn, network: Network): Promise<Ledger> {
  const rows = await c.execute<{ kind: string; s: string }[]>(
    `select kind, sum(spent)::text as s from sweep_txs where environment = 'sandbox' and network = ? and state = 'included' and spent is not null group by kind order by kind`,
    [network],
  );
  const byKind = Object.fromEntries(rows.map((r) => [r.kind, BigInt(r.s)]));
  return { spent: Object.values(byKind).reduce((a, b) => a + b, 0n), byKind };
}

/** What the ledger grew by between two reads. */
export function ledgerDelta(before: Ledger, after: Ledger): Ledger {
  const byKind = Object.fromEntries(
    Object.entries(after.byKind)
      .map(([k, v]) => [k, v - (before.byKind[k] ?? 0n)])
      .filter(([, v]) => v !== 0n),
  );
  return { spent: after.spent - before.spent, byKind };
}

/** One network's figure: the tank's native spend per swept deposit, from its ledger, cross-checked with its balance on chain. */
export interface TankSpend {
  network: Network;
  /** 'delegation' / 'burn' on TRON; absent elsewhere. */
  path?: string;
  deposits: number;
  seconds: number;
  ledger_per_deposit: string;
  chain_per_deposit: string;
  coin_per_deposit: string;
  coin: string;
  ledger_equals_chain: boolean;
  /** The ledger's figure split by the kind of transaction the tank paid for, per deposit (base units). */
  ledger_per_deposit_by_kind: Record<string, string>;
}

export function tankSpend(network: Network, deposits: number, seconds: number, ledger: Ledger, chain: bigint, path?: string): TankSpend {
  const [coin, decimals] = ({ ETHEREUM: ['ETH', 18], BINANCE: ['BNB', 18], TRON: ['TRX', 6], SOLANA: ['SOL', 9] } as const)[network];
  const per = ledger.spent / BigInt(deposits);
  const coinPer = Number(per) / 10 ** decimals;
  return {
    network,
    ...(path ? { path } : {}),
    deposits,
    seconds: Math.round(seconds * 10) / 10,
    ledger_per_deposit: per.toString(),
    chain_per_deposit: (chain / BigInt(deposits)).toString(),
    coin_per_deposit: coinPer.toPrecision(6),
    coin,
    ledger_equals_chain: ledger.spent === chain,
    ledger_per_deposit_by_kind: Object.fromEntries(Object.entries(ledger.byKind).map(([k, v]) => [k, (v / BigInt(deposits)).toString()])),
  };
}
