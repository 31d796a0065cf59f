import type { VersionedTransactionResponse } from '@solana/web3.js';
import { concat, decodeBase58, getBytes, toBeArray } from 'ethers';

/**
 * Decoding of SPL token transfers from a `getTransaction` (json encoding) response.
 *
 * Why instructions and not pre/post token balances: balances give one net delta per account per
 * transaction, which merges two payments in one transaction and hides a payment when tokens also
 * leave the account in the same transaction; they also carry no instruction index, which the
 * payment identity (network, txHash, index) needs. Instructions give one record per transfer with
 * its own amount and a stable index. Balances are still used for what instructions lack: the
 * owner of the source token account.
 *
 * Index numbering (unique inside a transaction):
 *   - top-level instruction i           → index = i                     (0 … 999)
 *   - inner instruction j under outer i → index = (i + 1) · 1000 + j    (e.g. outer 2, inner 3 → 3003)
 * A transaction holds well under 1000 top-level instructions (1232-byte packet), so both ranges never
 * overlap, and the common case (a top-level transfer) keeps its plain instruction index.
 */

/** SPL Token / Token-2022 instruction tags that move tokens between accounts. */
const IX_TRANSFER = 3;
const IX_TRANSFER_CHECKED = 12;
/** Token-2022 TransferFeeExtension (26) / TransferCheckedWithFee (1). */
const IX_TRANSFER_FEE_EXTENSION = 26;
const IX_TRANSFER_CHECKED_WITH_FEE = 1;

export interface DecodedTransfer {
  index: number;
  amount: bigint;
  /** Source token account. */
  source: string;
  /** Owner of the source token account when the transaction's token balances name it, else the source token account. */
  from: string;
}

/**
 * Base58 text → bytes, with ethers' decoder. It returns a number, which cannot carry leading zero
 * bytes: base58 writes each as a leading '1', so they are put back (instruction data starting with
 * tag 0 would otherwise lose a byte and shift into another instruction's layout).
 */
export function base58ToBytes(text: string): Uint8Array {
  const zeros = /^1*/.exec(text)![0].length;
  const value = decodeBase58(text);
  return getBytes(concat([new Uint8Array(zeros), value === 0n ? new Uint8Array(0) : toBeArray(value)]));
}

function readU64(data: Uint8Array, offset: number): bigint | null {
  if (data.length < offset + 8) return null;
  return Buffer.from(data.buffer, data.byteOffset, data.byteLength).readBigUInt64LE(offset);
}

/** Account positions of source and destination, and the amount the destination receives, for a token-moving instruction; else null. */
function decodeTokenInstruction(data: Uint8Array): { src: number; dst: number; amount: bigint } | null {
  switch (data[0]) {
    case IX_TRANSFER: {
      const amount = readU64(data, 1);
      return amount === null ? null : { src: 0, dst: 1, amount };
    }
    case IX_TRANSFER_CHECKED: {
      const amount = readU64(data, 1);
      return amount === null ? null : { src: 0, dst: 2, amount };
    }
    case IX_TRANSFER_FEE_EXTENSION: {
      if (data[1] !== IX_TRANSFER_CHECKED_WITH_FEE) return null;
      const amount = readU64(data, 2);
      const fee = readU64(data, 11);
      // The fee is withheld in the destination account: what the deposit can spend is amount − fee.
      return amount === null || fee === null || fee > amount ? null : { src: 0, dst: 2, amount: amount - fee };
    }
    default:
      return null;
  }
}

/**
 * All successful SPL transfers into `tokenAccount` executed by `tokenProgramId` (top-level and inner
 * instructions). A failed transaction yields nothing: the runtime rolled its transfers back.
 */
export function extractTransfersInto(tx: VersionedTransactionResponse, tokenAccount: string, tokenProgramId: string): DecodedTransfer[] {
  const meta = tx.meta;
  if (!meta || meta.err !== null) return [];
  const keys = tx.transaction.message.getAccountKeys({ accountKeysFromLookups: meta.loadedAddresses ?? undefined });
  const keyAt = (i: number): string | undefined => keys.get(i)?.toBase58();

  const ownerOf = new Map<number, string>();
  for (const b of [...(meta.preTokenBalances ?? []), ...(meta.postTokenBalances ?? [])]) {
    if (b.owner) ownerOf.set(b.accountIndex, b.owner);
  }

  const out: DecodedTransfer[] = [];
  const consider = (index: number, programIdIndex: number, accounts: readonly number[], data: Uint8Array) => {
    // Only the token program can move token balances; other programs' look-alike data is ignored.
    if (keyAt(programIdIndex) !== tokenProgramId) return;
    const d = decodeTokenInstruction(data);
    if (!d) return;
    const srcIdx = accounts[d.src];
    const dstIdx = accounts[d.dst];
    if (srcIdx === undefined || dstIdx === undefined) return;
    if (keyAt(dstIdx) !== tokenAccount) return;
    const source = keyAt(srcIdx);
    // A self-transfer moves nothing into the deposit.
    if (!source || source === tokenAccount || d.amount === 0n) return;
    out.push({ index, amount: d.amount, source, from: ownerOf.get(srcIdx) ?? source });
  };

  tx.transaction.message.compiledInstructions.forEach((ix, i) => {
    consider(i, ix.programIdIndex, ix.accountKeyIndexes, ix.data);
  });
  for (const group of meta.innerInstructions ?? []) {
    group.instructions.forEach((ix, j) => {
      let data: Uint8Array;
      try {
        data = base58ToBytes(ix.data);
      } catch {
        return;
      }
      consider((group.index + 1) * 1000 + j, ix.programIdIndex, ix.accounts, data);
    });
  }
  return out.sort((a, b) => a.index - b.index);
}
