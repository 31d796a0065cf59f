import { Connection, Keypair, PublicKey, SystemProgram, Transaction, sendAndConfirmTransaction } from '@solana/web3.js';
import {
  TOKEN_PROGRAM_ID,
  createAssociatedTokenAccountIdempotentInstruction,
  createTransferCheckedInstruction,
  getAssociatedTokenAddressSync,
} from '@solana/spl-token';
import type { TransferWallet, TransferWalletOptions } from '../chain-adapter.js';

/** A SOLANA hot wallet (ed25519 seed, hex) that sends and waits for `confirmed` (`TransferWallet`). */
export function openSolanaWallet(o: TransferWalletOptions): TransferWallet {
  const connection = new Connection(o.rpcUrl, { commitment: 'confirmed', confirmTransactionInitialTimeout: o.timeoutMs });
  const payer = Keypair.fromSeed(Buffer.from(o.key.replace(/^0x/, ''), 'hex'));
  const send = (tx: Transaction) => sendAndConfirmTransaction(connection, tx, [payer], { commitment: 'confirmed' });
  return {
    address: payer.publicKey.toBase58(),
    nativeBalance: async () => BigInt(await connection.getBalance(payer.publicKey)),
    tokenBalance: async (t) => {
      const ata = getAssociatedTokenAddressSync(new PublicKey(t.address), payer.publicKey);
      if (!(await connection.getAccountInfo(ata))) return 0n;
      return BigInt((await connection.getTokenAccountBalance(ata)).value.amount);
    },
    sendNative: (to, amount) =>
      send(new Transaction().add(SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: new PublicKey(to), lamports: amount }))),
    sendToken: (t, to, amount) => {
      const mint = new PublicKey(t.address);
      const owner = new PublicKey(to);
      const source = getAssociatedTokenAddressSync(mint, payer.publicKey);
      const dest = getAssociatedTokenAddressSync(mint, owner, true);
      // the sender pays the recipient's token-account rent, so a fresh wallet can receive at once
      return send(
        new Transaction().add(
          createAssociatedTokenAccountIdempotentInstruction(payer.publicKey, dest, owner, mint, TOKEN_PROGRAM_ID),
          createTransferCheckedInstruction(source, mint, dest, payer.publicKey, amount, t.decimals, [], TOKEN_PROGRAM_ID),
        ),
      );
    },
  };
}
