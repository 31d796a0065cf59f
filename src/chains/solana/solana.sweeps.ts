import { Keypair, PublicKey, SendTransactionError, SystemProgram, Transaction, type Connection } from '@solana/web3.js';
import { ACCOUNT_SIZE, createAssociatedTokenAccountIdempotentInstruction, createTransferCheckedInstruction, TOKEN_2022_PROGRAM_ID } from '@solana/spl-token';
import { encodeBase58 } from 'ethers';

import { isNativeIntent, TxRejectedError, type SignedTx, type SweepCapability, type TransferIntent, type TxState } from '../chain-adapter.js';
import { associatedTokenAddress } from './solana.driver.js';
import type { SolanaRpcPool } from './solana.rpc.js';

/**
 * SOLANA sweeps (`gas: 'fee-payer'`): the gas tank signs each sweep as its fee payer, so deposits
 * never hold SOL. One legacy transaction per sweep:
 *  1. `createAssociatedTokenAccountIdempotent` of the settlement wallet's token account, paid by the
 *     tank (a no-op when it exists; the rent is spent only the first time);
 *  2. `transferChecked` of the amount from the deposit's token account, the deposit owner signing.
 *
 * Native coin (SOL sent to the deposit's own address) leaves in one `SystemProgram.transfer` of its
 * whole balance, the tank again the fee payer (the deposit's system account may go to zero).
 *
 * The deposit's token account is left open on purpose: the customer's wallet paid its rent, a later
 * payment to the same deposit then lands without the payer creating it again, and closing it in the
 * sweep would make the whole sweep fail whenever a payment arrives between the balance read and the
 * send (CloseAccount refuses a non-zero balance).
 *
 * `expiresAt` is the blockhash's last valid block height: past it (at `confirmed`), a signature the
 * node does not know can never land, so `txState` says `dead`.
 */

/** Token-2022 accounts made by the ATA program carry the ImmutableOwner extension (165 + 1 + 4 bytes). */
const TOKEN_2022_ATA_SIZE = ACCOUNT_SIZE + 5;

/** A tank/deposit secret: 64-byte Solana secret key, or the 32-byte ed25519 seed it starts with. */
export function solanaKeypair(secret: Uint8Array): Keypair {
  if (secret.length === 64) return Keypair.fromSecretKey(secret);
  if (secret.length === 32) return Keypair.fromSeed(secret);
  throw new Error(`a Solana key is 32 or 64 bytes, not ${secret.length}`);
}

export function createSolanaSweeps(pool: SolanaRpcPool, mintProgram: (mint: string) => Promise<string>): SweepCapability {
  const call = <T>(method: string, fn: (c: Connection) => Promise<T>) => pool.call(method, fn);

  function instructions(intent: TransferIntent, payer: PublicKey, programId: string) {
    const program = new PublicKey(programId);
    const mint = new PublicKey(intent.token.address);
    const owner = new PublicKey(intent.from);
    const to = new PublicKey(intent.to);
    const source = new PublicKey(associatedTokenAddress(owner, mint, program));
    const dest = new PublicKey(associatedTokenAddress(to, mint, program));
    return {
      dest,
      list: [
        createAssociatedTokenAccountIdempotentInstruction(payer, dest, to, mint, program),
        createTransferCheckedInstruction(source, mint, dest, owner, intent.amount, intent.token.decimals, [], program),
      ],
    };
  }

  async function build(intent: TransferIntent, payer: PublicKey) {
    if (isNativeIntent(intent)) {
      const latest = await call('getLatestBlockhash', (c) => c.getLatestBlockhash('confirmed'));
      const transfer = SystemProgram.transfer({ fromPubkey: new PublicKey(intent.from), toPubkey: new PublicKey(intent.to), lamports: intent.amount });
      const tx = new Transaction({ feePayer: payer, blockhash: latest.blockhash, lastValidBlockHeight: latest.lastValidBlockHeight }).add(transfer);
      return { tx, dest: new PublicKey(intent.to), programId: null, lastValidBlockHeight: latest.lastValidBlockHeight };
    }
    const programId = await mintProgram(intent.token.address);
    const { dest, list } = instructions(intent, payer, programId);
    const latest = await call('getLatestBlockhash', (c) => c.getLatestBlockhash('confirmed'));
    const tx = new Transaction({ feePayer: payer, blockhash: latest.blockhash, lastValidBlockHeight: latest.lastValidBlockHeight }).add(...list);
    return { tx, dest, programId, lastValidBlockHeight: latest.lastValidBlockHeight };
  }

  return {
    gas: 'fee-payer',

    async nativeBalance(address) {
      return BigInt(await call('getBalance', (c) => c.getBalance(new PublicKey(address), 'confirmed')));
    },

    async quoteTransferFee(intent) {
      // any key works as the fee payer of the quote: the fee depends on the signature count only
      const { tx, dest, programId } = await build(intent, Keypair.generate().publicKey);
      const [fee, destInfo] = await Promise.all([
        call('getFeeForMessage', (c) => c.getFeeForMessage(tx.compileMessage(), 'confirmed')),
        call('getAccountInfo', (c) => c.getAccountInfo(dest, 'confirmed')),
      ]);
      if (fee.value === null) throw new Error('the node no longer knows the blockhash it just gave');
      let rent = 0n;
      if (!destInfo && programId === null) {
        // native coin to an account that does not exist yet: less than its rent-exempt minimum cannot
        // open it (the transfer fails), so that minimum counts as the cost of the transfer
        rent = BigInt(await call('getMinimumBalanceForRentExemption', (c) => c.getMinimumBalanceForRentExemption(0, 'confirmed')));
      } else if (!destInfo && programId !== null) {
        const size = programId === TOKEN_2022_PROGRAM_ID.toBase58() ? TOKEN_2022_ATA_SIZE : ACCOUNT_SIZE;
        rent = BigInt(await call('getMinimumBalanceForRentExemption', (c) => c.getMinimumBalanceForRentExemption(size, 'confirmed')));
      }
      return BigInt(fee.value) + rent;
    },

    async signFunding() {
      return []; // fee-payer: deposits need no SOL
    },

    async signTransfer(intent, keys) {
      if (!keys.tank) throw new Error('SOLANA sweeps need the gas tank key (fee payer)');
      const tank = solanaKeypair(keys.tank);
      const deposit = solanaKeypair(keys.deposit);
      if (deposit.publicKey.toBase58() !== new PublicKey(intent.from).toBase58()) throw new Error('deposit key does not match the transfer source');
      const { tx, lastValidBlockHeight } = await build(intent, tank.publicKey);
      tx.sign(tank, deposit);
      return {
        txHash: encodeBase58(tx.signature!),
        raw: tx.serialize().toString('base64'),
        nonce: null,
        expiresAt: BigInt(lastValidBlockHeight),
      };
    },

    async broadcast(tx: SignedTx) {
      const wire = Buffer.from(tx.raw, 'base64');
      const outcome = await call('sendTransaction', async (c) => {
        try {
          await c.sendRawTransaction(wire, { skipPreflight: false, preflightCommitment: 'confirmed', maxRetries: 0 });
          return null;
        } catch (e) {
          // a refusal is an answer (not a reason to try another node): hand it out of the retry loop
          if (e instanceof SendTransactionError) return e;
          throw e;
        }
      });
      if (!outcome) return;
      const text = `${outcome.message} ${JSON.stringify((outcome as { transactionError?: unknown }).transactionError ?? '')}`;
      if (/AlreadyProcessed|already been processed/i.test(text)) return;
      const expired = /BlockhashNotFound|Blockhash not found/i.test(text);
      throw new TxRejectedError(expired ? 'BlockhashNotFound' : 'SimulationFailed', `SOLANA node refused ${tx.txHash}: ${outcome.message}`, expired);
    },

    async txState(tx): Promise<TxState> {
      // height first: if it was already past expiresAt, a signature unknown now can never land
      const height = BigInt(await call('getBlockHeight', (c) => c.getBlockHeight('confirmed')));
      const status = (await call('getSignatureStatuses', (c) => c.getSignatureStatuses([tx.txHash], { searchTransactionHistory: true }))).value[0];
      if (status && (status.confirmationStatus === 'confirmed' || status.confirmationStatus === 'finalized')) {
        const got = await call('getTransaction', (c) => c.getTransaction(tx.txHash, { commitment: 'confirmed', maxSupportedTransactionVersion: 0 }));
        if (!got) return { state: 'pending' };
        const block = await call('getBlock', (c) =>
          c.getBlock(got.slot, { commitment: 'confirmed', transactionDetails: 'none', rewards: false, maxSupportedTransactionVersion: 0 }),
        );
        if (!block) return { state: 'pending' };
        return {
          state: 'included',
          blockNumber: BigInt(got.slot),
          blockHash: block.blockhash,
          success: got.meta?.err === null || got.meta?.err === undefined,
          feePaid: BigInt(got.meta?.fee ?? 0),
          // The fee payer (account 0, the gas tank for a sweep) also paid the rent of the token accounts it opened.
          ...(got.meta?.preBalances?.length && got.meta.postBalances?.length
            ? { signerSpent: BigInt(got.meta.preBalances[0]!) - BigInt(got.meta.postBalances[0]!) }
            : {}),
          ...(got.meta?.computeUnitsConsumed !== undefined ? { resourceUsage: { computeUnits: BigInt(got.meta.computeUnitsConsumed) } } : {}),
        };
      }
      if (status) return { state: 'pending' };
      if (tx.expiresAt !== null && height > tx.expiresAt) return { state: 'dead' };
      return { state: 'unknown' };
    },
  };
}
