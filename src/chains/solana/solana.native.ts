import type { ConfirmedSignatureInfo, VersionedTransactionResponse } from '@solana/web3.js';
import { NATIVE_TOKEN, type ObservedTransfer } from '../chain-adapter.js';
import type { SolanaRpcPool } from './solana.rpc.js';

export interface SolanaNativeWatchDeps {
  pool: SolanaRpcPool;
  /** Lamports of each owner, read in batches (getMultipleAccounts, 100 per call). */
  nativeBalances(owners: string[]): Promise<bigint[]>;
  /** Signatures touching `address` newer than `until` (newest first). */
  listSignatures(address: string, until: string | null): Promise<ConfirmedSignatureInfo[]>;
  getBlockHash(slot: bigint): Promise<string | null>;
  /** Transactions fetched per owner per poll (the rest next poll). */
  maxTxPerOwner: number;
}

/** Owners remembered at most (past this the memo starts over: each owner holding SOL is listed once more). */
const MAX_REMEMBERED = 200_000;

/**
 * SOL sent to deposit owners, without a call per open deposit on every poll.
 *
 * A deposit's owner address holds no SOL of its own: the gas tank pays every fee (fee payer) and
 * tokens live in associated token accounts. So the lamports of every polled owner are read in
 * batches (getMultipleAccounts, 100 owners per call), and only an owner whose balance is positive
 * and differs from the last poll's is listed (getSignaturesForAddress since its native cursor) and
 * its new transactions read. A transfer in is the owner's balance rising in a successful
 * transaction it did not pay for (post − pre; any instruction, CPI included); one movement per
 * transaction, index -1 like every chain's native coin. Money leaving (a sweep) is not a receipt.
 *
 * Balances and cursors live in memory: after a restart each owner holding SOL is listed once from
 * the start of its history (receipts are recorded idempotently, so seeing one again is harmless).
 */
export function createSolanaNativeWatch(deps: SolanaNativeWatchDeps): (owners: string[]) => Promise<ObservedTransfer[]> {
  const seen = new Map<string, { lamports: bigint; cursor: string | null }>();
  const remember = (owner: string, state: { lamports: bigint; cursor: string | null }) => {
    if (seen.size >= MAX_REMEMBERED && !seen.has(owner)) seen.clear();
    seen.set(owner, state);
  };

  async function incoming(owner: string, until: string | null): Promise<{ transfers: ObservedTransfer[]; cursor: string | null; complete: boolean }> {
    const all = (await deps.listSignatures(owner, until)).reverse(); // oldest first
    const entries = all.slice(0, deps.maxTxPerOwner);
    const transfers: ObservedTransfer[] = [];
    let cursor = until;
    for (const sig of entries) {
      if (sig.err === null) {
        const tx = await deps.pool.call('getTransaction', (c) =>
          c.getTransaction(sig.signature, { commitment: 'confirmed', maxSupportedTransactionVersion: 0 }),
        );
        if (!tx) return { transfers, cursor, complete: false }; // not served yet: from here next poll
        const t = receivedIn(tx, owner);
        if (t) {
          const blockHash = await deps.getBlockHash(BigInt(tx.slot));
          if (blockHash === null) return { transfers, cursor, complete: false };
          transfers.push({
            txHash: sig.signature,
            index: -1,
            blockNumber: BigInt(tx.slot),
            blockHash,
            token: NATIVE_TOKEN,
            from: t.from,
            to: owner,
            amount: t.amount,
          });
        }
      }
      cursor = sig.signature;
    }
    return { transfers, cursor, complete: all.length === entries.length };
  }

  return async (owners) => {
    const unique = [...new Set(owners)];
    if (!unique.length) return [];
    const lamports = await deps.nativeBalances(unique);
    const out: ObservedTransfer[] = [];
    await Promise.all(
      unique.map(async (owner, i) => {
        const now = lamports[i]!;
        const last = seen.get(owner);
        if (now === 0n || last?.lamports === now) {
          if (!last || last.lamports !== now) remember(owner, { lamports: now, cursor: last?.cursor ?? null });
          return;
        }
        const r = await incoming(owner, last?.cursor ?? null);
        out.push(...r.transfers);
        // the balance is remembered only once every transaction up to it was read
        remember(owner, { lamports: r.complete ? now : (last?.lamports ?? -1n), cursor: r.cursor });
      }),
    );
    return out.sort((a, b) => (a.blockNumber === b.blockNumber ? 0 : a.blockNumber < b.blockNumber ? -1 : 1));
  };
}

/** SOL `owner` received in `tx`: its balance rise, when the transaction succeeded and it was not the fee payer; the fee payer is named as the sender. */
export function receivedIn(tx: VersionedTransactionResponse, owner: string): { from: string; amount: bigint } | null {
  const meta = tx.meta;
  if (!meta || meta.err) return null;
  const keys = tx.transaction.message.getAccountKeys({ accountKeysFromLookups: meta.loadedAddresses }).keySegments().flat();
  const at = keys.findIndex((k) => k.toBase58() === owner);
  if (at <= 0) return null; // absent, or the fee payer (it paid, it did not receive)
  const amount = BigInt(meta.postBalances[at] ?? 0) - BigInt(meta.preBalances[at] ?? 0);
  return amount > 0n ? { from: keys[0]!.toBase58(), amount } : null;
}
