/**
 * Solana JSON-RPC facade: litesvm (in-process SVM) behind a loopback HTTP + WebSocket server that
 * unmodified `@solana/web3.js` 1.x `Connection` and `@solana/spl-token` talk to, with faults injectable
 * per method. What it models and what it does not (forks, commitment, blockhash expiry, fees, …):
 * docs/watchers.md "Local chains and harnesses → Solana facade".
 */
import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { LiteSVM } from 'litesvm';
import { WebSocketServer, type WebSocket } from 'ws';
import {
  ComputeBudgetProgram,
  Connection,
  Keypair,
  LAMPORTS_PER_SOL,
  PublicKey,
  SystemProgram,
  Transaction,
  VersionedMessage,
  VersionedTransaction,
  sendAndConfirmTransaction,
  type Signer,
  type TransactionInstruction,
} from '@solana/web3.js';
import {
  TOKEN_2022_PROGRAM_ID,
  TOKEN_PROGRAM_ID,
  createAssociatedTokenAccountIdempotent,
  createMint,
  getAssociatedTokenAddressSync,
  mintTo,
  transferChecked,
} from '@solana/spl-token';
import { encodeBase58 } from 'ethers';
import { base58ToBytes } from '../chains/solana/solana.transfers.js';

// ---------------------------------------------------------------------------------------------
// Types

type Commitment = 'processed' | 'confirmed' | 'finalized';
type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type SvmAddress = Parameters<LiteSVM['getAccount']>[0];
type SvmTransaction = Parameters<LiteSVM['sendTransaction']>[0];

interface Block {
  slot: number;
  blockhash: string;
  previousBlockhash: string;
  parentSlot: number;
  blockTime: number;
  blockHeight: number;
  signatures: string[];
}

interface TokenBalance {
  accountIndex: number;
  mint: string;
  owner: string;
  programId: string;
  uiTokenAmount: { amount: string; decimals: number; uiAmount: number | null; uiAmountString: string };
}

interface TxRecord {
  signature: string;
  slot: number;
  blockTime: number;
  wire: Uint8Array;
  version: 'legacy' | 0;
  message: Json;
  signatures: string[];
  err: Json;
  meta: Json;
}

export type FaultKind = 'http429' | 'http500' | 'rpcError' | 'hang';

export interface SolanaFacadeOptions {
  /** Slots between the confirmed and the finalized tip (default 32, like mainnet's ~32-slot root lag). */
  finalityLag?: number;
  /** Put each transaction in its own new slot (default true); false keeps adding to the current slot until `advanceSlots`. */
  slotPerTransaction?: boolean;
  /** First slot (default 1000). */
  startSlot?: number;
  /** Fee payer and mint authority of the helpers (default: a fresh keypair). */
  payer?: Keypair;
  /** Produce an empty slot this often, so "finalized" follows wall-clock time like a cluster (default: off). */
  slotIntervalMs?: number;
}

export interface SolanaFacade {
  /** HTTP JSON-RPC endpoint; WebSocket on the same port and on port+1 (web3.js's default ws URL). */
  url: string;
  wsUrl: string;
  /** A web3.js Connection to the facade at `confirmed` commitment. */
  connection: Connection;
  svm: LiteSVM;
  /** Funded fee payer and mint authority used by the helpers. */
  payer: Keypair;
  /** Method names received, in order (batch entries included). */
  calls: string[];
  slot(): number;
  finalizedSlot(): number;
  setFinalityLag(lag: number): void;
  /** Produces `n` empty slots (moves the finalized tip too). */
  advanceSlots(n: number): void;
  /** Moves the finalized tip to the current slot. */
  finalizeAll(): void;
  /**
   * A re-org (see the header): drops every slot above `slot` (which must not be below the finalized
   * tip) with its transactions, restoring the accounts they wrote; the next slots are new blocks.
   */
  rollback(slot: number): void;
  /** The next `times` requests for `method` ('*' = any) fail with `kind`. */
  injectFault(method: string, kind: FaultKind, times?: number): void;
  clearFaults(): void;
  /** Drops every request a `hang` fault holds (the client sees the connection close and may ask again). */
  releaseHangs(): void;
  /** Cuts every WebSocket connection at once, without a close frame (subscriptions end with them). */
  dropSockets(): void;
  /** On: WebSocket upgrades are refused (HTTP 503) while the HTTP API still answers; off: accepted again. */
  setSocketsRefused(on: boolean): void;
  /** Live `slotSubscribe` subscriptions. */
  slotSubscribers(): number;
  /** A fresh keypair with `sol` SOL, funded through requestAirdrop. */
  fundedKeypair(sol?: number): Promise<Keypair>;
  /** A "USDC"-like mint (6 decimals, payer is mint authority) under the classic Token program unless told otherwise. */
  createUsdcMint(opts?: { decimals?: number; programId?: PublicKey; keypair?: Keypair }): Promise<PublicKey>;
  /** Creates (idempotently) the ATA of (owner, mint). */
  createAta(owner: PublicKey, mint: PublicKey): Promise<PublicKey>;
  /** Mints `amount` base units to the owner's ATA (creating it). */
  mintTo(owner: PublicKey, mint: PublicKey, amount: bigint): Promise<PublicKey>;
  /**
   * The customer pays `amount` base units to `toOwner` with spl-token `transferChecked` into the
   * owner's ATA (created first if missing, paid by the customer, in a separate transaction). Returns the transfer signature.
   */
  transfer(from: Keypair, toOwner: PublicKey, mint: PublicKey, amount: bigint): Promise<string>;
  /** Signs and sends instructions (fee payer = first signer) and waits for `confirmed`. */
  send(instructions: TransactionInstruction[], signers: Signer[], opts?: { skipPreflight?: boolean }): Promise<string>;
  stop(): Promise<void>;
}

class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: Json,
  ) {
    super(message);
  }
}

// ---------------------------------------------------------------------------------------------
// litesvm error → RPC TransactionError JSON

const TX_ERRORS = [
  'AccountInUse',
  'AccountLoadedTwice',
  'AccountNotFound',
  'ProgramAccountNotFound',
  'InsufficientFundsForFee',
  'InvalidAccountForFee',
  'AlreadyProcessed',
  'BlockhashNotFound',
  'CallChainTooDeep',
  'MissingSignatureForFee',
  'InvalidAccountIndex',
  'SignatureFailure',
  'InvalidProgramForExecution',
  'SanitizeFailure',
  'ClusterMaintenance',
  'AccountBorrowOutstanding',
  'WouldExceedMaxBlockCostLimit',
  'UnsupportedVersion',
  'InvalidWritableAccount',
  'WouldExceedMaxAccountCostLimit',
  'WouldExceedAccountDataBlockLimit',
  'TooManyAccountLocks',
  'AddressLookupTableNotFound',
  'InvalidAddressLookupTableOwner',
  'InvalidAddressLookupTableData',
  'InvalidAddressLookupTableIndex',
  'InvalidRentPayingAccount',
  'WouldExceedMaxVoteCostLimit',
  'WouldExceedAccountDataTotalLimit',
  'MaxLoadedAccountsDataSizeExceeded',
  'ResanitizationNeeded',
  'InvalidLoadedAccountsDataSizeLimit',
  'UnbalancedTransaction',
  'ProgramCacheHitMaxLimit',
  'CommitCancelled',
];
const IX_ERRORS = [
  'GenericError',
  'InvalidArgument',
  'InvalidInstructionData',
  'InvalidAccountData',
  'AccountDataTooSmall',
  'InsufficientFunds',
  'IncorrectProgramId',
  'MissingRequiredSignature',
  'AccountAlreadyInitialized',
  'UninitializedAccount',
  'UnbalancedInstruction',
  'ModifiedProgramId',
  'ExternalAccountLamportSpend',
  'ExternalAccountDataModified',
  'ReadonlyLamportChange',
  'ReadonlyDataModified',
  'DuplicateAccountIndex',
  'ExecutableModified',
  'RentEpochModified',
  'NotEnoughAccountKeys',
  'AccountDataSizeChanged',
  'AccountNotExecutable',
  'AccountBorrowFailed',
  'AccountBorrowOutstanding',
  'DuplicateAccountOutOfSync',
  'InvalidError',
  'ExecutableDataModified',
  'ExecutableLamportChange',
  'ExecutableAccountNotRentExempt',
  'UnsupportedProgramId',
  'CallDepth',
  'MissingAccount',
  'ReentrancyNotAllowed',
  'MaxSeedLengthExceeded',
  'InvalidSeeds',
  'InvalidRealloc',
  'ComputationalBudgetExceeded',
  'PrivilegeEscalation',
  'ProgramEnvironmentSetupFailure',
  'ProgramFailedToComplete',
  'ProgramFailedToCompile',
  'Immutable',
  'IncorrectAuthority',
  'AccountNotRentExempt',
  'InvalidAccountOwner',
  'ArithmeticOverflow',
  'UnsupportedSysvar',
  'IllegalOwner',
  'MaxAccountsDataAllocationsExceeded',
  'MaxAccountsExceeded',
  'MaxInstructionTraceLengthExceeded',
  'BuiltinProgramsMustConsumeComputeUnits',
  'BorshIoError',
];

/** Converts a litesvm error to the RPC JSON shape; `landed` = the transaction is committed (fee charged) despite failing. */
function convertTxError(err: unknown): { json: Json; landed: boolean } {
  if (typeof err === 'number') return { json: TX_ERRORS[err] ?? `Unknown(${err})`, landed: false };
  const e = err as { constructor: { name: string }; index?: number; accountIndex?: number; err?: () => unknown };
  switch (e.constructor.name) {
    case 'TransactionErrorInstructionError': {
      const inner = e.err!();
      let ix: Json;
      if (typeof inner === 'number') ix = IX_ERRORS[inner] ?? `Unknown(${inner})`;
      else if (inner && typeof inner === 'object' && 'code' in inner) ix = { Custom: (inner as { code: number }).code };
      else if (inner && typeof inner === 'object' && 'msg' in inner) ix = { BorshIoError: (inner as { msg: string }).msg };
      else ix = String(inner);
      return { json: { InstructionError: [e.index!, ix] }, landed: true };
    }
    case 'TransactionErrorDuplicateInstruction':
      return { json: { DuplicateInstruction: e.index! }, landed: false };
    case 'TransactionErrorInsufficientFundsForRent':
      return { json: { InsufficientFundsForRent: { account_index: e.accountIndex! } }, landed: true };
    case 'TransactionErrorProgramExecutionTemporarilyRestricted':
      return { json: { ProgramExecutionTemporarilyRestricted: { account_index: e.accountIndex! } }, landed: true };
    default:
      return { json: String(err), landed: false };
  }
}

// ---------------------------------------------------------------------------------------------
// The facade

const TOKEN_PROGRAMS = new Set([TOKEN_PROGRAM_ID.toBase58(), TOKEN_2022_PROGRAM_ID.toBase58()]);
const LAMPORTS_PER_SIGNATURE = 5000;
const MAX_PROCESSING_AGE = 150;
/** litesvm's default transaction history capacity (its duplicate-signature check). */
const LITESVM_HISTORY = 10_000n;

function syntheticBlockhash(slot: number, parent: string): string {
  return new PublicKey(createHash('sha256').update(`facade-block:${slot}:${parent}`).digest()).toBase58();
}

function uiAmount(amount: bigint, decimals: number) {
  const s = amount.toString().padStart(decimals + 1, '0');
  const str = decimals === 0 ? s : `${s.slice(0, -decimals)}.${s.slice(-decimals)}`.replace(/\.?0+$/, '');
  return { amount: amount.toString(), decimals, uiAmount: Number(str), uiAmountString: str };
}

class FacadeChain {
  readonly svm: LiteSVM;
  readonly blocks = new Map<number, Block>();
  /** blockhash → block height, for the recent-blockhash check. */
  readonly heightByHash = new Map<string, number>();
  readonly txs = new Map<string, TxRecord>();
  /** address → signatures, oldest first. */
  readonly byAddress = new Map<string, string[]>();
  readonly startSlot: number;
  current: number;
  finalityLag: number;
  readonly slotPerTransaction: boolean;
  private readonly mintDecimals = new Map<string, number>();
  /** signature → the writable accounts of that transaction as they were before it (for `rollback`; kept above the finalized tip only). */
  private readonly undo = new Map<string, Parameters<LiteSVM['setAccount']>[0][]>();
  /** Slots below this one have no undo records left. */
  private undoFloor: number;
  /** Rollbacks so far: part of the next blocks' hash seed, so a replacement block never repeats a dropped one's hash. */
  private forks = 0;
  onSlot: () => void = () => {};

  constructor(opts: SolanaFacadeOptions) {
    // Blockhash check off: the facade's blockhashes are synthetic (see header), so litesvm cannot know them.
    this.svm = new LiteSVM().withLamports(10n ** 18n).withBlockhashCheck(false);
    this.startSlot = opts.startSlot ?? 1000;
    this.finalityLag = opts.finalityLag ?? 32;
    this.slotPerTransaction = opts.slotPerTransaction ?? true;
    this.current = this.startSlot;
    this.undoFloor = this.startSlot;
    this.svm.warpToSlot(BigInt(this.startSlot));
    this.blocks.set(this.startSlot, {
      slot: this.startSlot,
      blockhash: syntheticBlockhash(this.startSlot, ''),
      previousBlockhash: syntheticBlockhash(this.startSlot - 1, ''),
      parentSlot: this.startSlot - 1,
      blockTime: Math.floor(Date.now() / 1000),
      blockHeight: 0,
      signatures: [],
    });
    this.heightByHash.set(this.blocks.get(this.startSlot)!.blockhash, 0);
  }

  /** Whether a transaction with this recent blockhash could still land in the next block. */
  blockhashValid(blockhash: string): boolean {
    const h = this.heightByHash.get(blockhash);
    return h !== undefined && this.head.blockHeight + 1 <= h + MAX_PROCESSING_AGE;
  }

  get head(): Block {
    return this.blocks.get(this.current)!;
  }

  finalizedSlot(): number {
    return Math.max(this.startSlot, this.current - this.finalityLag);
  }

  slotAt(commitment: Commitment | undefined): number {
    return commitment === 'finalized' || commitment === undefined ? this.finalizedSlot() : this.current;
  }

  newSlot(): void {
    const parent = this.head;
    const slot = parent.slot + 1;
    this.blocks.set(slot, {
      slot,
      blockhash: syntheticBlockhash(slot, this.forks ? `${parent.blockhash}/fork${this.forks}` : parent.blockhash),
      previousBlockhash: parent.blockhash,
      parentSlot: parent.slot,
      blockTime: Math.floor(Date.now() / 1000),
      blockHeight: parent.blockHeight + 1,
      signatures: [],
    });
    this.heightByHash.set(this.blocks.get(slot)!.blockhash, parent.blockHeight + 1);
    this.current = slot;
    this.svm.warpToSlot(BigInt(slot));
  }

  advance(n: number): void {
    for (let i = 0; i < n; i++) this.newSlot();
    this.onSlot();
  }

  account(address: string) {
    const a = this.svm.getAccount(address as SvmAddress);
    // an account without lamports does not exist on Solana (what `rollback` restores a created one to)
    return a.exists && a.lamports > 0n ? a : null;
  }

  /** See SolanaFacade.rollback. */
  rollback(slot: number): void {
    // (a slot below undoFloor was finalized once, before the finality lag was raised)
    const floor = Math.max(this.finalizedSlot(), this.undoFloor - 1);
    if (slot < floor) throw new Error(`facade: slot ${slot} is below the finalized tip ${floor}; finalized slots are never rolled back`);
    if (slot >= this.current) return;
    for (let at = this.current; at > slot; at--) {
      const block = this.blocks.get(at);
      if (!block) continue;
      for (const signature of [...block.signatures].reverse()) {
        for (const account of this.undo.get(signature) ?? []) this.svm.setAccount(account);
        this.undo.delete(signature);
        const rec = this.txs.get(signature);
        this.txs.delete(signature);
        for (const k of new Set((rec?.message as { accountKeys?: string[] } | undefined)?.accountKeys ?? [])) {
          const list = this.byAddress.get(k);
          const i = list?.lastIndexOf(signature) ?? -1;
          if (i >= 0) list!.splice(i, 1);
        }
      }
      this.heightByHash.delete(block.blockhash);
      this.blocks.delete(at);
    }
    this.current = slot;
    this.forks++;
    this.svm.warpToSlot(BigInt(slot));
    // litesvm refuses a signature it has processed; emptying its history lets a dropped transaction
    // land again (the facade's own record, which keeps the surviving slots, still refuses duplicates)
    this.svm.withTransactionHistory(0n).withTransactionHistory(LITESVM_HISTORY);
  }

  private decimalsOf(mint: string): number {
    let d = this.mintDecimals.get(mint);
    if (d === undefined) {
      const m = this.account(mint);
      d = m && m.data.length >= 45 ? m.data[44]! : 0;
      this.mintDecimals.set(mint, d);
    }
    return d;
  }

  /** Mint/owner/amount of an initialized SPL token account, else null. */
  tokenAccount(address: string): { mint: string; owner: string; amount: bigint; programId: string } | null {
    const a = this.account(address);
    if (!a || !TOKEN_PROGRAMS.has(a.programAddress)) return null;
    const d = a.data;
    // 165 bytes = Account; Token-2022 accounts with extensions are longer and carry AccountType=2 at byte 165.
    if (d.length < 165 || (d.length > 165 && d[165] !== 2) || d[108] === 0) return null;
    return {
      mint: new PublicKey(d.subarray(0, 32)).toBase58(),
      owner: new PublicKey(d.subarray(32, 64)).toBase58(),
      amount: Buffer.from(d.buffer, d.byteOffset + 64, 8).readBigUInt64LE(0),
      programId: a.programAddress,
    };
  }

  private snapshot(keys: string[]): { lamports: number[]; tokens: TokenBalance[] } {
    const lamports: number[] = [];
    const tokens: TokenBalance[] = [];
    keys.forEach((k, i) => {
      lamports.push(Number(this.svm.getBalance(k as SvmAddress) ?? 0n));
      const t = this.tokenAccount(k);
      if (t) {
        tokens.push({ accountIndex: i, mint: t.mint, owner: t.owner, programId: t.programId, uiTokenAmount: uiAmount(t.amount, this.decimalsOf(t.mint)) });
      }
    });
    return { lamports, tokens };
  }

  /** Executes a wire transaction; returns its signature or throws an RpcError like a validator's sendTransaction. */
  execute(wire: Uint8Array, skipPreflight: boolean): string {
    let vtx: VersionedTransaction;
    try {
      vtx = VersionedTransaction.deserialize(wire);
    } catch (e) {
      throw new RpcError(-32602, `failed to deserialize transaction: ${(e as Error).message}`);
    }
    const msg = vtx.message;
    if (msg.version === 0 && msg.addressTableLookups.length > 0) {
      throw new RpcError(-32602, 'facade: address lookup tables are not supported');
    }
    const signature = encodeBase58(vtx.signatures[0]!);
    const keys = msg.staticAccountKeys.map((k) => k.toBase58());
    const signers: Record<string, Uint8Array> = {};
    for (let i = 0; i < msg.header.numRequiredSignatures; i++) signers[keys[i]!] = vtx.signatures[i]!;
    // litesvm takes a kit Transaction, which is just { messageBytes, signatures: { address → bytes } }.
    const ktx = Object.freeze({ messageBytes: msg.serialize(), signatures: Object.freeze(signers) }) as unknown as SvmTransaction;

    if (this.txs.has(signature)) {
      if (skipPreflight) return signature;
      throw new RpcError(-32002, 'Transaction simulation failed: This transaction has already been processed', {
        err: 'AlreadyProcessed',
        logs: [],
        accounts: null,
        unitsConsumed: 0,
        returnData: null,
      });
    }
    if (!this.blockhashValid(msg.recentBlockhash)) {
      // a validator drops these whether or not preflight runs; with preflight the RPC says why
      throw new RpcError(-32002, 'Transaction simulation failed: Blockhash not found', {
        err: 'BlockhashNotFound',
        logs: [],
        accounts: null,
        unitsConsumed: 0,
        returnData: null,
      });
    }
    if (!skipPreflight) {
      const sim = this.svm.simulateTransaction(ktx);
      if ('err' in sim) {
        const { json } = convertTxError(sim.err());
        const m = sim.meta();
        throw new RpcError(-32002, `Transaction simulation failed: ${JSON.stringify(json)}`, {
          err: json,
          logs: m.logs(),
          accounts: null,
          unitsConsumed: Number(m.computeUnitsConsumed()),
          returnData: null,
        });
      }
    }

    const pre = this.snapshot(keys);
    const undo = keys.flatMap((k, i) => {
      if (!msg.isAccountWritable(i)) return [];
      const a = this.svm.getAccount(k as SvmAddress);
      return [
        a.exists
          ? a
          : {
              address: k as SvmAddress,
              lamports: 0n as never,
              data: new Uint8Array(),
              programAddress: SystemProgram.programId.toBase58() as SvmAddress,
              executable: false,
              space: 0n,
            },
      ];
    }) as Parameters<LiteSVM['setAccount']>[0][];
    if (this.slotPerTransaction) this.newSlot();
    const result = this.svm.sendTransaction(ktx);
    const failed = 'err' in result;
    const meta = failed ? result.meta() : result;
    let errJson: Json = null;
    if (failed) {
      const { json, landed } = convertTxError(result.err());
      if (!landed) throw new RpcError(-32002, `Transaction failed: ${JSON.stringify(json)}`, { err: json, logs: meta.logs() });
      errJson = json;
    }
    const post = this.snapshot(keys);
    const block = this.head;

    const innerInstructions: Json[] = [];
    meta.innerInstructions().forEach((group, index) => {
      if (group.length === 0) return;
      innerInstructions.push({
        index,
        instructions: group.map((ii) => {
          const ci = ii.instruction();
          return { programIdIndex: ci.programIdIndex(), accounts: [...ci.accounts()], data: encodeBase58(ci.data()), stackHeight: ii.stackHeight() };
        }),
      });
    });

    const message: Json = {
      accountKeys: keys,
      header: { ...msg.header },
      recentBlockhash: msg.recentBlockhash,
      instructions: msg.compiledInstructions.map((ix) => ({
        programIdIndex: ix.programIdIndex,
        accounts: [...ix.accountKeyIndexes],
        data: encodeBase58(ix.data),
        stackHeight: null,
      })),
      ...(msg.version === 0 ? { addressTableLookups: [] } : {}),
    };
    const record: TxRecord = {
      signature,
      slot: block.slot,
      blockTime: block.blockTime,
      wire,
      version: msg.version === 0 ? 0 : 'legacy',
      message,
      signatures: vtx.signatures.map((s) => encodeBase58(s)),
      err: errJson,
      meta: {
        err: errJson,
        status: errJson === null ? { Ok: null } : { Err: errJson },
        fee: LAMPORTS_PER_SIGNATURE * msg.header.numRequiredSignatures,
        preBalances: pre.lamports,
        postBalances: post.lamports,
        innerInstructions,
        logMessages: meta.logs(),
        preTokenBalances: pre.tokens as unknown as Json,
        postTokenBalances: post.tokens as unknown as Json,
        rewards: [],
        loadedAddresses: { writable: [], readonly: [] },
        computeUnitsConsumed: Number(meta.computeUnitsConsumed()),
      },
    };
    this.txs.set(signature, record);
    this.undo.set(signature, undo);
    // finalized slots are never rolled back: their undo records can go
    for (const final = this.finalizedSlot(); this.undoFloor < final; this.undoFloor++) {
      for (const sig of this.blocks.get(this.undoFloor)?.signatures ?? []) this.undo.delete(sig);
    }
    block.signatures.push(signature);
    for (const k of new Set(keys)) {
      let list = this.byAddress.get(k);
      if (!list) this.byAddress.set(k, (list = []));
      list.push(signature);
    }
    this.onSlot();
    return signature;
  }

  visible(rec: TxRecord, commitment: Commitment | undefined): boolean {
    return rec.slot <= this.slotAt(commitment);
  }

  status(rec: TxRecord): { slot: number; confirmations: number | null; err: Json; status: Json; confirmationStatus: Commitment } {
    const finalized = rec.slot <= this.finalizedSlot();
    return {
      slot: rec.slot,
      confirmations: finalized ? null : this.current - rec.slot,
      err: rec.err,
      status: rec.err === null ? { Ok: null } : { Err: rec.err },
      confirmationStatus: finalized ? 'finalized' : 'confirmed',
    };
  }
}

// ---------------------------------------------------------------------------------------------
// JSON-RPC methods

type Cfg = { commitment?: Commitment; encoding?: string; [k: string]: unknown };

function cfgOf(v: unknown): Cfg {
  if (typeof v === 'string') return { commitment: v as Commitment };
  return (v && typeof v === 'object' ? v : {}) as Cfg;
}

function pubkeyParam(v: unknown): string {
  if (typeof v !== 'string') throw new RpcError(-32602, 'Invalid params: expected a base58 public key');
  try {
    return new PublicKey(v).toBase58();
  } catch {
    throw new RpcError(-32602, `Invalid param: ${v} is not a valid public key`);
  }
}

function createMethods(chain: FacadeChain, faucet: Keypair) {
  let airdrops = 0;
  const ctx = (commitment?: Commitment) => ({ apiVersion: '2.2.0', slot: chain.slotAt(commitment ?? 'finalized') });
  const accountJson = (address: string, cfg: Cfg): Json => {
    const a = chain.account(address);
    if (!a) return null;
    const encoding = cfg.encoding ?? 'base64';
    if (encoding !== 'base64' && encoding !== 'base58') throw new RpcError(-32602, `facade: encoding ${encoding} not supported`);
    let data: Uint8Array = a.data;
    const slice = cfg.dataSlice as { offset: number; length: number } | undefined;
    if (slice) data = data.subarray(slice.offset, slice.offset + slice.length);
    return {
      data: [encoding === 'base64' ? Buffer.from(data).toString('base64') : encodeBase58(data), encoding],
      executable: a.executable,
      lamports: Number(a.lamports),
      owner: a.programAddress,
      rentEpoch: 0,
      space: data.length,
    };
  };

  const methods: Record<string, (params: unknown[]) => Json> = {
    getHealth: () => 'ok',
    getVersion: () => ({ 'solana-core': '2.2.0-litesvm-facade', 'feature-set': 0 }),
    getGenesisHash: () => chain.blocks.get(chain.startSlot)!.blockhash,
    getSlot: (p) => chain.slotAt(cfgOf(p[0]).commitment),
    getBlockHeight: (p) => chain.blocks.get(chain.slotAt(cfgOf(p[0]).commitment))!.blockHeight,
    getEpochInfo: (p) => {
      const slot = chain.slotAt(cfgOf(p[0]).commitment);
      return {
        absoluteSlot: slot,
        blockHeight: chain.blocks.get(slot)!.blockHeight,
        epoch: Math.floor(slot / 432000),
        slotIndex: slot % 432000,
        slotsInEpoch: 432000,
        transactionCount: chain.txs.size,
      };
    },
    getLatestBlockhash: (p) => {
      // Always the newest block, whatever the commitment: slots here advance only with transactions,
      // and web3.js waits for a *new* finalized blockhash before re-sending an identical transaction.
      const c = cfgOf(p[0]).commitment;
      const b = chain.head;
      return { context: ctx(c), value: { blockhash: b.blockhash, lastValidBlockHeight: b.blockHeight + MAX_PROCESSING_AGE } };
    },
    isBlockhashValid: (p) => ({ context: ctx(cfgOf(p[1]).commitment), value: chain.blockhashValid(String(p[0])) }),
    getMinimumBalanceForRentExemption: (p) => Number(chain.svm.minimumBalanceForRentExemption(BigInt(Number(p[0] ?? 0)))),
    getFeeForMessage: (p) => {
      let message: ReturnType<typeof VersionedMessage.deserialize>;
      try {
        message = VersionedMessage.deserialize(Buffer.from(String(p[0]), 'base64'));
      } catch (e) {
        throw new RpcError(-32602, `invalid message: ${(e as Error).message}`);
      }
      // null for a blockhash the cluster no longer accepts, as a validator answers
      const value = chain.blockhashValid(message.recentBlockhash) ? LAMPORTS_PER_SIGNATURE * message.header.numRequiredSignatures : null;
      return { context: ctx(cfgOf(p[1]).commitment), value };
    },
    getRecentPrioritizationFees: () => [],
    getBalance: (p) => {
      const c = cfgOf(p[1]).commitment;
      return { context: ctx(c), value: Number(chain.svm.getBalance(pubkeyParam(p[0]) as SvmAddress) ?? 0n) };
    },
    getAccountInfo: (p) => {
      const cfg = cfgOf(p[1]);
      return { context: ctx(cfg.commitment), value: accountJson(pubkeyParam(p[0]), cfg) };
    },
    getMultipleAccounts: (p) => {
      const cfg = cfgOf(p[1]);
      return { context: ctx(cfg.commitment), value: ((p[0] as unknown[]) ?? []).map((k) => accountJson(pubkeyParam(k), cfg)) };
    },
    getTokenAccountBalance: (p) => {
      const t = chain.tokenAccount(pubkeyParam(p[0]));
      if (!t) throw new RpcError(-32602, 'Invalid param: could not find account');
      const mint = chain.account(t.mint);
      return { context: ctx(cfgOf(p[1]).commitment), value: uiAmount(t.amount, mint?.data[44] ?? 0) };
    },
    requestAirdrop: (p) => {
      const to = new PublicKey(pubkeyParam(p[0]));
      const lamports = Number(p[1]);
      const tx = new Transaction({ feePayer: faucet.publicKey, recentBlockhash: chain.head.blockhash });
      // A distinct compute-unit limit per airdrop keeps two equal airdrops in one slot from sharing a signature.
      tx.add(ComputeBudgetProgram.setComputeUnitLimit({ units: 200_000 + (airdrops++ % 1_000_000) }));
      tx.add(SystemProgram.transfer({ fromPubkey: faucet.publicKey, toPubkey: to, lamports }));
      tx.sign(faucet);
      return chain.execute(tx.serialize(), false);
    },
    sendTransaction: (p) => {
      const cfg = cfgOf(p[1]);
      const enc = cfg.encoding ?? 'base58';
      const wire = enc === 'base64' ? Buffer.from(String(p[0]), 'base64') : base58ToBytes(String(p[0]));
      return chain.execute(new Uint8Array(wire), cfg.skipPreflight === true);
    },
    simulateTransaction: () => {
      throw new RpcError(-32601, 'facade: simulateTransaction is not implemented');
    },
    getSignatureStatuses: (p) => {
      const sigs = (p[0] as string[]) ?? [];
      return {
        context: ctx('confirmed'),
        value: sigs.map((s) => {
          const rec = chain.txs.get(s);
          return rec ? chain.status(rec) : null;
        }),
      };
    },
    getSignaturesForAddress: (p) => {
      const address = pubkeyParam(p[0]);
      const cfg = cfgOf(p[1]);
      const commitment = cfg.commitment ?? 'finalized';
      if (commitment === 'processed') throw new RpcError(-32602, 'Method does not support commitment below `confirmed`');
      const limit = cfg.limit === undefined ? 1000 : Number(cfg.limit);
      if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new RpcError(-32602, 'Invalid limit; max 1000');
      const all = chain.byAddress.get(address) ?? [];
      const out: Json[] = [];
      let i = all.length - 1;
      if (typeof cfg.before === 'string') {
        const at = all.lastIndexOf(cfg.before);
        if (at < 0) return [];
        i = at - 1;
      }
      for (; i >= 0 && out.length < limit; i--) {
        const rec = chain.txs.get(all[i]!)!;
        if (rec.signature === cfg.until) break;
        if (!chain.visible(rec, commitment)) continue;
        out.push({
          signature: rec.signature,
          slot: rec.slot,
          err: rec.err,
          memo: null,
          blockTime: rec.blockTime,
          confirmationStatus: chain.status(rec).confirmationStatus,
        });
      }
      return out;
    },
    getTransaction: (p) => {
      const cfg = cfgOf(p[1]);
      const commitment = cfg.commitment ?? 'finalized';
      if (commitment === 'processed') throw new RpcError(-32602, 'Method does not support commitment below `confirmed`');
      const rec = chain.txs.get(String(p[0]));
      if (!rec || !chain.visible(rec, commitment)) return null;
      if (rec.version === 0 && cfg.maxSupportedTransactionVersion === undefined) {
        throw new RpcError(
          -32015,
          'Transaction version (0) is not supported by the requesting client. Please try the request again with the following configuration parameter: "maxSupportedTransactionVersion": 0',
        );
      }
      const encoding = cfg.encoding ?? 'json';
      let transaction: Json;
      if (encoding === 'json') transaction = { signatures: rec.signatures, message: rec.message };
      else if (encoding === 'base64') transaction = [Buffer.from(rec.wire).toString('base64'), 'base64'];
      else if (encoding === 'base58') transaction = [encodeBase58(rec.wire), 'base58'];
      else throw new RpcError(-32602, `facade: encoding ${encoding} not supported`);
      return {
        slot: rec.slot,
        blockTime: rec.blockTime,
        transaction,
        meta: rec.meta,
        ...(cfg.maxSupportedTransactionVersion !== undefined ? { version: rec.version } : {}),
      };
    },
    getBlock: (p) => {
      const slot = Number(p[0]);
      const cfg = cfgOf(p[1]);
      const commitment = cfg.commitment ?? 'finalized';
      if (commitment === 'processed') throw new RpcError(-32602, 'Method does not support commitment below `confirmed`');
      if (slot > chain.slotAt(commitment)) throw new RpcError(-32004, `Block not available for slot ${slot}`);
      const b = chain.blocks.get(slot);
      if (!b) throw new RpcError(-32009, `Slot ${slot} was skipped, or missing in long-term storage`);
      const details = (cfg.transactionDetails as string | undefined) ?? 'full';
      const base = {
        blockhash: b.blockhash,
        previousBlockhash: b.previousBlockhash,
        parentSlot: b.parentSlot,
        blockTime: b.blockTime,
        blockHeight: b.blockHeight,
      };
      const rewards: Record<string, Json> = cfg.rewards === false ? {} : { rewards: [] };
      if (details === 'none') return { ...base, ...rewards };
      if (details === 'signatures') return { ...base, ...rewards, signatures: b.signatures };
      throw new RpcError(-32602, `facade: getBlock transactionDetails=${details} not supported (use none or signatures)`);
    },
    getBlocks: (p) => {
      const start = Number(p[0]);
      const end = Math.min(Number(p[1] ?? chain.current), chain.slotAt(cfgOf(p[2]).commitment));
      const out: number[] = [];
      for (let s = Math.max(start, chain.startSlot); s <= end; s++) out.push(s);
      return out;
    },
  };
  return methods;
}

// ---------------------------------------------------------------------------------------------
// Servers

async function listen(server: http.Server, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (e: Error) => reject(e);
    server.once('error', onError);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', onError);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

async function closeServer(server: http.Server): Promise<void> {
  if (!server.listening) return;
  await new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

export async function startSolanaFacade(opts: SolanaFacadeOptions = {}): Promise<SolanaFacade> {
  const chain = new FacadeChain(opts);
  const faucet = Keypair.generate();
  const seedFunds = (to: PublicKey, sol: bigint) => {
    const r = chain.svm.airdrop(to.toBase58() as SvmAddress, (sol * BigInt(LAMPORTS_PER_SOL)) as Parameters<LiteSVM['airdrop']>[1]);
    if (!r || 'err' in r) throw new Error(`facade: could not fund ${to.toBase58()}`);
  };
  seedFunds(faucet.publicKey, 1_000_000n);
  const methods = createMethods(chain, faucet);
  const calls: string[] = [];
  const faults: { method: string; kind: FaultKind; left: number }[] = [];
  const hanging = new Set<http.ServerResponse>();

  const takeFault = (method: string): FaultKind | null => {
    const f = faults.find((x) => x.left > 0 && (x.method === method || x.method === '*'));
    if (!f) return null;
    f.left--;
    return f.kind;
  };

  const runOne = (req: unknown): Json => {
    const r = req as { id?: Json; method?: unknown; params?: unknown };
    const id = r?.id ?? null;
    if (!r || typeof r.method !== 'string') return { jsonrpc: '2.0', id, error: { code: -32600, message: 'Invalid request' } };
    const fn = methods[r.method];
    if (!fn) return { jsonrpc: '2.0', id, error: { code: -32601, message: `Method not found: ${r.method}` } };
    try {
      const params = Array.isArray(r.params) ? r.params : [];
      return { jsonrpc: '2.0', id, result: fn(params) };
    } catch (e) {
      if (e instanceof RpcError) {
        return { jsonrpc: '2.0', id, error: { code: e.code, message: e.message, ...(e.data !== undefined ? { data: e.data } : {}) } };
      }
      return { jsonrpc: '2.0', id, error: { code: -32603, message: `Internal error: ${(e as Error).message}` } };
    }
  };

  const handleHttp = (req: http.IncomingMessage, res: http.ServerResponse) => {
    if (req.method !== 'POST') {
      res.writeHead(405).end();
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let body: unknown;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } }));
        return;
      }
      const list = Array.isArray(body) ? body : [body];
      const names = list.map((r) => String((r as { method?: unknown })?.method));
      calls.push(...names);
      for (const name of names) {
        const fault = takeFault(name);
        if (fault === 'hang') {
          hanging.add(res);
          res.on('close', () => hanging.delete(res));
          return;
        }
        if (fault === 'http429') {
          res.writeHead(429, { 'content-type': 'text/plain' }).end('Too many requests for a specific RPC call');
          return;
        }
        if (fault === 'http500') {
          res.writeHead(500, { 'content-type': 'text/plain' }).end('Internal Server Error');
          return;
        }
        if (fault === 'rpcError') {
          const id = (list[0] as { id?: Json })?.id ?? null;
          res
            .writeHead(200, { 'content-type': 'application/json' })
            .end(JSON.stringify({ jsonrpc: '2.0', id, error: { code: -32005, message: 'Node is unhealthy (injected)' } }));
          return;
        }
      }
      const out = list.map(runOne);
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(Array.isArray(body) ? out : out[0]));
    });
  };

  // --- WebSocket: signatureSubscribe (what sendAndConfirmTransaction needs) and slotSubscribe (a
  // watcher's head hint), on the validator's pubsub wire protocol.
  const wss = new WebSocketServer({ noServer: true });
  let nextSub = 1;
  const subs = new Map<number, { ws: WebSocket; signature: string; commitment: Commitment }>();
  const slotSubs = new Map<number, WebSocket>();
  let refuseSockets = false;
  const notifyReady = () => {
    for (const [id, s] of subs) {
      const rec = chain.txs.get(s.signature);
      if (!rec || !chain.visible(rec, s.commitment)) continue;
      subs.delete(id);
      s.ws.send(
        JSON.stringify({
          jsonrpc: '2.0',
          method: 'signatureNotification',
          params: { result: { context: { slot: rec.slot }, value: { err: rec.err } }, subscription: id },
        }),
      );
    }
  };
  /** One `slotNotification` per subscriber for the newest slot ({ parent, root, slot } as a validator sends). */
  const notifySlot = () => {
    const slot = chain.current;
    const parent = chain.blocks.get(slot)?.parentSlot ?? slot - 1;
    for (const [id, ws] of slotSubs) {
      if (ws.readyState !== ws.OPEN) continue;
      ws.send(
        JSON.stringify({ jsonrpc: '2.0', method: 'slotNotification', params: { result: { parent, root: chain.finalizedSlot(), slot }, subscription: id } }),
      );
    }
  };
  chain.onSlot = () => {
    notifyReady();
    notifySlot();
  };
  wss.on('connection', (ws) => {
    ws.on('message', (raw) => {
      let msg: { id?: Json; method?: string; params?: unknown[] };
      try {
        msg = JSON.parse(String(raw));
      } catch {
        return;
      }
      if (msg.id === undefined || msg.id === null) return; // notifications such as web3.js's 'ping'
      const reply = (body: Record<string, Json>) => ws.send(JSON.stringify({ jsonrpc: '2.0', id: msg.id!, ...body }));
      calls.push(`ws:${msg.method}`);
      if (msg.method === 'signatureSubscribe') {
        const id = nextSub++;
        subs.set(id, { ws, signature: String(msg.params?.[0]), commitment: cfgOf(msg.params?.[1]).commitment ?? 'finalized' });
        reply({ result: id });
        notifyReady();
      } else if (msg.method === 'signatureUnsubscribe') {
        subs.delete(Number(msg.params?.[0]));
        reply({ result: true });
      } else if (msg.method === 'slotSubscribe') {
        const id = nextSub++;
        slotSubs.set(id, ws);
        reply({ result: id });
      } else if (msg.method === 'slotUnsubscribe') {
        const id = Number(msg.params?.[0]);
        const known = slotSubs.get(id) === ws;
        if (known) slotSubs.delete(id);
        reply(known ? { result: true } : { error: { code: -32602, message: 'Invalid subscription id.' } });
      } else {
        reply({ error: { code: -32601, message: `facade: ${msg.method} is not supported over WebSocket` } });
      }
    });
    ws.on('close', () => {
      for (const [id, s] of subs) if (s.ws === ws) subs.delete(id);
      for (const [id, w] of slotSubs) if (w === ws) slotSubs.delete(id);
    });
  });

  // web3.js derives the ws URL as port+1 of the HTTP URL: serve both so `new Connection(url)` needs no wsEndpoint.
  let main!: http.Server;
  let side!: http.Server;
  let port = 0;
  for (let attempt = 0; ; attempt++) {
    main = http.createServer(handleHttp);
    side = http.createServer(handleHttp);
    port = await listen(main, 0);
    try {
      await listen(side, port + 1);
      break;
    } catch (e) {
      await closeServer(main);
      if (attempt >= 20) throw e;
    }
  }
  for (const s of [main, side]) {
    s.keepAliveTimeout = 1000;
    s.on('upgrade', (req, socket, head) => {
      // a provider whose WebSocket is down: the HTTP API still answers, the upgrade is refused
      if (refuseSockets) return void socket.end('HTTP/1.1 503 Service Unavailable\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
      wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req));
    });
  }

  const url = `http://127.0.0.1:${port}`;
  const connection = new Connection(url, { commitment: 'confirmed', disableRetryOnRateLimit: true });
  // Every send asks for a fresh blockhash, as a wallet does. web3.js otherwise reuses one for 30 s, and
  // here slots advance with every transaction: 150 of them in 30 s make it expire (BlockhashNotFound).
  (connection as unknown as { _disableBlockhashCaching: boolean })._disableBlockhashCaching = true;
  const payer = opts.payer ?? Keypair.generate();
  seedFunds(payer.publicKey, 1000n);
  const ticker = opts.slotIntervalMs ? setInterval(() => chain.advance(1), opts.slotIntervalMs) : undefined;
  ticker?.unref();
  const confirmOpts = { commitment: 'confirmed' as const, preflightCommitment: 'confirmed' as const };
  const decimalsCache = new Map<string, number>();

  const facade: SolanaFacade = {
    url,
    wsUrl: `ws://127.0.0.1:${port}`,
    connection,
    svm: chain.svm,
    payer,
    calls,
    slot: () => chain.current,
    finalizedSlot: () => chain.finalizedSlot(),
    setFinalityLag(lag) {
      chain.finalityLag = lag;
      notifyReady();
    },
    advanceSlots(n) {
      chain.advance(n);
      // web3.js caches a blockhash for 30 s; after a jump it may have expired here, so make the
      // helpers' own connection fetch a fresh one (other Connections keep their cache: see header)
      const info = (connection as unknown as { _blockhashInfo?: { latestBlockhash: unknown } })._blockhashInfo;
      if (info && n > 0) info.latestBlockhash = null;
    },
    finalizeAll() {
      chain.finalityLag = 0;
      notifyReady();
    },
    injectFault(method, kind, times = 1) {
      faults.push({ method, kind, left: times });
    },
    rollback(slot) {
      chain.rollback(slot);
    },
    releaseHangs() {
      for (const r of hanging) r.destroy();
    },
    clearFaults() {
      faults.length = 0;
    },
    dropSockets() {
      // no close frame: what a client sees when a proxy or the network cuts the connection
      for (const c of wss.clients) c.terminate();
    },
    setSocketsRefused(on) {
      refuseSockets = on;
    },
    slotSubscribers: () => slotSubs.size,
    async fundedKeypair(sol = 1) {
      const kp = Keypair.generate();
      const sig = await connection.requestAirdrop(kp.publicKey, sol * LAMPORTS_PER_SOL);
      const latest = await connection.getLatestBlockhash('confirmed');
      await connection.confirmTransaction({ signature: sig, ...latest }, 'confirmed');
      return kp;
    },
    async createUsdcMint(o = {}) {
      const decimals = o.decimals ?? 6;
      const mint = await createMint(
        connection,
        payer,
        payer.publicKey,
        null,
        decimals,
        o.keypair ?? Keypair.generate(),
        confirmOpts,
        o.programId ?? TOKEN_PROGRAM_ID,
      );
      decimalsCache.set(mint.toBase58(), decimals);
      return mint;
    },
    async createAta(owner, mint) {
      const programId = new PublicKey(chain.account(mint.toBase58())!.programAddress);
      return createAssociatedTokenAccountIdempotent(connection, payer, mint, owner, confirmOpts, programId);
    },
    async mintTo(owner, mint, amount) {
      const programId = new PublicKey(chain.account(mint.toBase58())!.programAddress);
      const ata = await facade.createAta(owner, mint);
      await mintTo(connection, payer, mint, ata, payer, amount, [], confirmOpts, programId);
      return ata;
    },
    async transfer(from, toOwner, mint, amount) {
      const programId = new PublicKey(chain.account(mint.toBase58())!.programAddress);
      const source = getAssociatedTokenAddressSync(mint, from.publicKey, false, programId);
      // Create the recipient's ATA only when missing (as wallets do), so the ATA's history holds just the transfers.
      const dest = getAssociatedTokenAddressSync(mint, toOwner, false, programId);
      if (!(await connection.getAccountInfo(dest, 'confirmed'))) {
        await createAssociatedTokenAccountIdempotent(connection, from, mint, toOwner, confirmOpts, programId);
      }
      const decimals = decimalsCache.get(mint.toBase58()) ?? chain.account(mint.toBase58())!.data[44]!;
      return transferChecked(connection, from, source, mint, dest, from, amount, decimals, [], confirmOpts, programId);
    },
    async send(instructions, signers, o = {}) {
      const tx = new Transaction().add(...instructions);
      return sendAndConfirmTransaction(connection, tx, signers, { ...confirmOpts, skipPreflight: o.skipPreflight ?? false });
    },
    async stop() {
      clearInterval(ticker);
      for (const c of wss.clients) c.close(1000);
      wss.close();
      for (const r of hanging) r.destroy();
      await Promise.all([closeServer(main), closeServer(side)]);
    },
  };
  return facade;
}
