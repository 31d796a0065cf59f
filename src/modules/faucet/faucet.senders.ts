/**
 * Chain senders of the sandbox faucet, one per chain family (keyed like the chain adapters), each
 * signing with the faucet wallet's key from config. Sends are serialised per network: one key, one
 * nonce sequence (EVM), one fee payer (SOLANA).
 */
import { Connection, Keypair, LAMPORTS_PER_SOL, PublicKey, SystemProgram, Transaction, sendAndConfirmTransaction } from '@solana/web3.js';
import { TOKEN_PROGRAM_ID, createAssociatedTokenAccountIdempotentInstruction, createTransferCheckedInstruction, getAssociatedTokenAddressSync } from '@solana/spl-token';
import { Contract, JsonRpcProvider, Wallet } from 'ethers';
import { TronWeb } from 'tronweb';
import type { ChainFamily } from '../../chains/chain-adapter.js';

export interface FaucetToken {
  address: string;
  decimals: number;
}

/** One faucet wallet on one network. Amounts are base units. */
export interface FaucetSender {
  /** The faucet wallet's address on this network (for operators topping it up). */
  readonly address: string;
  nativeBalance(): Promise<bigint>;
  tokenBalance(token: FaucetToken): Promise<bigint>;
  /** Sends and waits until the transfer is in a block; throws when it fails on chain. Returns the tx hash / id / signature. */
  sendNative(to: string, amount: bigint): Promise<string>;
  sendToken(token: FaucetToken, to: string, amount: bigint): Promise<string>;
}

export interface FaucetKeys {
  secp256k1Evm: string;
  secp256k1Tron: string;
  solanaSeedHex: string;
}

export interface SenderOptions {
  rpcUrl: string;
  keys: FaucetKeys;
  /** How long to wait for a transfer to land. */
  timeoutMs: number;
}

const ERC20 = ['function transfer(address to, uint256 value) returns (bool)', 'function balanceOf(address owner) view returns (uint256)'];

function evmSender(o: SenderOptions): FaucetSender {
  const provider = new JsonRpcProvider(o.rpcUrl, undefined, { cacheTimeout: -1, pollingInterval: 250 });
  const wallet = new Wallet(o.keys.secp256k1Evm, provider);
  const landed = async (tx: { hash: string; wait: (c: number, t: number) => Promise<{ status: number | null } | null> }) => {
    const r = await tx.wait(1, o.timeoutMs);
    if (r?.status !== 1) throw new Error(`transaction ${tx.hash} failed on chain`);
    return tx.hash;
  };
  return {
    address: wallet.address,
    nativeBalance: () => provider.getBalance(wallet.address),
    tokenBalance: async (t) => (await new Contract(t.address, ERC20, provider).getFunction('balanceOf')(wallet.address)) as bigint,
    sendNative: async (to, amount) => landed(await wallet.sendTransaction({ to, value: amount })),
    sendToken: async (t, to, amount) => landed(await new Contract(t.address, ERC20, wallet).getFunction('transfer')(to, amount)),
  };
}

function tronSender(o: SenderOptions): FaucetSender {
  const privateKey = o.keys.secp256k1Tron.replace(/^0x/, '');
  const tron = new TronWeb({ fullHost: o.rpcUrl, privateKey });
  const address = tron.address.fromPrivateKey(privateKey) as string;
  const landed = async (txid: string) => {
    const deadline = Date.now() + o.timeoutMs;
    for (;;) {
      // the unconfirmed (full-node) view: a block is enough here, solidification is the watcher's business
      const info = (await tron.trx.getUnconfirmedTransactionInfo(txid)) as { blockNumber?: number; receipt?: { result?: string } };
      if (info?.blockNumber !== undefined) {
        if (info.receipt?.result && info.receipt.result !== 'SUCCESS') throw new Error(`transaction ${txid} failed on chain: ${info.receipt.result}`);
        return txid;
      }
      if (Date.now() > deadline) throw new Error(`transaction ${txid} not in a block within ${o.timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 250));
    }
  };
  const broadcast = async (tx: unknown) => {
    const signed = await tron.trx.sign(tx as never, privateKey);
    const res = (await tron.trx.sendRawTransaction(signed as never)) as { result?: boolean; txid?: string; code?: string; message?: string };
    if (!res.result || !res.txid) throw new Error(`broadcast refused: ${res.code ?? 'error'} ${res.message ? Buffer.from(res.message, 'hex').toString('utf8') : ''}`.trim());
    return landed(res.txid);
  };
  const trigger = async (token: string, selector: string, params: { type: string; value: unknown }[], constant: boolean) =>
    constant
      ? tron.transactionBuilder.triggerConstantContract(token, selector, {}, params, address)
      : tron.transactionBuilder.triggerSmartContract(token, selector, { feeLimit: 100_000_000 }, params, address);
  return {
    address,
    nativeBalance: async () => BigInt(await tron.trx.getBalance(address)),
    tokenBalance: async (t) => {
      const res = (await trigger(t.address, 'balanceOf(address)', [{ type: 'address', value: address }], true)) as { constant_result?: string[] };
      return BigInt(`0x${res.constant_result?.[0] || '0'}`);
    },
    sendNative: async (to, amount) => broadcast(await tron.transactionBuilder.sendTrx(to, Number(amount), address)),
    sendToken: async (t, to, amount) => {
      const built = (await trigger(t.address, 'transfer(address,uint256)', [
        { type: 'address', value: to },
        { type: 'uint256', value: amount.toString() },
      ], false)) as { transaction: unknown };
      return broadcast(built.transaction);
    },
  };
}

function solanaSender(o: SenderOptions): FaucetSender {
  const connection = new Connection(o.rpcUrl, { commitment: 'confirmed', confirmTransactionInitialTimeout: o.timeoutMs });
  const payer = Keypair.fromSeed(Buffer.from(o.keys.solanaSeedHex, 'hex'));
  const send = (tx: Transaction) => sendAndConfirmTransaction(connection, tx, [payer], { commitment: 'confirmed' });
  return {
    address: payer.publicKey.toBase58(),
    nativeBalance: async () => BigInt(await connection.getBalance(payer.publicKey)),
    tokenBalance: async (t) => {
      const ata = getAssociatedTokenAddressSync(new PublicKey(t.address), payer.publicKey);
      if (!(await connection.getAccountInfo(ata))) return 0n;
      return BigInt((await connection.getTokenAccountBalance(ata)).value.amount);
    },
    sendNative: (to, amount) => send(new Transaction().add(SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: new PublicKey(to), lamports: amount }))),
    sendToken: (t, to, amount) => {
      const mint = new PublicKey(t.address);
      const owner = new PublicKey(to);
      const source = getAssociatedTokenAddressSync(mint, payer.publicKey);
      const dest = getAssociatedTokenAddressSync(mint, owner, true);
      // the faucet pays the recipient's token-account rent, so a fresh wallet can receive at once
      return send(
        new Transaction().add(
          createAssociatedTokenAccountIdempotentInstruction(payer.publicKey, dest, owner, mint, TOKEN_PROGRAM_ID),
          createTransferCheckedInstruction(source, mint, dest, payer.publicKey, amount, t.decimals, [], TOKEN_PROGRAM_ID),
        ),
      );
    },
  };
}

export const FAUCET_SENDERS: Record<ChainFamily, (o: SenderOptions) => FaucetSender> = { evm: evmSender, tron: tronSender, solana: solanaSender };

/** 1 SOL in lamports; exported for the native-amount table. */
export const LAMPORTS = BigInt(LAMPORTS_PER_SOL);

/** Serialises calls per key: one faucet wallet must not race itself (nonces, fee payer). */
export function serialised(sender: FaucetSender): FaucetSender {
  let tail: Promise<unknown> = Promise.resolve();
  const queue = <T>(fn: () => Promise<T>): Promise<T> => {
    const run = tail.then(fn, fn);
    tail = run.catch(() => undefined);
    return run;
  };
  return {
    address: sender.address,
    nativeBalance: () => sender.nativeBalance(),
    tokenBalance: (t) => sender.tokenBalance(t),
    sendNative: (to, amount) => queue(() => sender.sendNative(to, amount)),
    sendToken: (t, to, amount) => queue(() => sender.sendToken(t, to, amount)),
  };
}
