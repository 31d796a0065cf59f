import type { Network, WalletType } from '../common/environment.js';

/** Chain families: each lives in `src/chains/<family>/` and is the only place that knows its chain. */
export type ChainFamily = 'evm' | 'tron' | 'solana';

/** A token contract (EVM/TRON) or mint (SOLANA) the watcher should look at. */
export interface WatchedToken {
  /** Canonical address as stored in the token registry (EVM checksum, TRON base58, Solana base58). */
  address: string;
  decimals: number;
  symbol: string;
}

/** One token transfer seen on chain, before any business meaning is attached to it. */
export interface ObservedTransfer {
  txHash: string;
  /** Log index (EVM/TRON) or instruction index (SOLANA) inside the transaction: (network, txHash, index) is unique. */
  index: number;
  blockNumber: bigint;
  /** Block hash (EVM/TRON) or blockhash of the slot (SOLANA), used for reorg checks. */
  blockHash: string;
  /** Token address, canonical form (same as WatchedToken.address). */
  token: string;
  from: string;
  /** Deposit address (canonical form; for SOLANA the deposit owner, not the token account). */
  to: string;
  amount: bigint;
}

export interface ChainHead {
  /** Newest block/slot. */
  latest: bigint;
  /** Newest block the chain itself considers final (EVM `finalized` tag when available, TRON solidified, SOLANA finalized). */
  finalized: bigint;
}

/** Params to build a wallet payment URI (QR content). */
export interface PaymentRequest {
  token: WatchedToken;
  to: string;
  amount: bigint;
  /** EVM chain id (from config) — ignored by non-EVM families. */
  chainId?: number;
  label?: string;
  reference?: string;
}

/** Pure, offline per-family functions: address derivation, validation and wallet URIs. */
export interface ChainFamilyDriver {
  readonly family: ChainFamily;
  /** BIP-32/SLIP-10 path of deposit index `i`. */
  derivationPath(index: number): string;
  /** Derives the deposit address at `index` from a BIP-39 seed (64 bytes). */
  deriveAddress(seed: Uint8Array, index: number): string;
  /** Derives the private key (hex, or 64-byte secret for Solana) — for sweeps and tests only. */
  derivePrivateKey(seed: Uint8Array, index: number): Uint8Array;
  isValidAddress(address: string): boolean;
  /** Returns the canonical form of a valid address (throws on invalid). */
  normalizeAddress(address: string): string;
  /**
   * Cheap comparison key of an address already known to be well formed (the watcher's in-memory
   * match runs it per log): EVM hex compares case-insensitively, base58 does not.
   */
  addressKey(address: string): string;
  /**
   * Address the watcher observes for a deposit of `token` when it is not the deposit address itself
   * (SOLANA: the owner's associated token account, since a transfer into an existing one does not
   * mention the owner); null when the deposit address is watched directly.
   */
  watchAddress(owner: string, token: string): string | null;
  /**
   * QR content for `wallet` (EIP-681, a wallet deep link, or a Solana Pay URL). Throws
   * `DomainError('WALLET_NETWORK_MISMATCH')` for wallet/network pairs that cannot work.
   */
  paymentUri(wallet: WalletType, network: Network, req: PaymentRequest): string;
}

/** Per-network RPC settings, from config. */
export interface ChainNetworkConfig {
  network: Network;
  rpcUrls: string[];
  /** EVM chain id (EVM only). */
  chainId?: number;
  /** Blocks a payment must be buried under before it counts (EVM); TRON/SOLANA use chain finality. */
  confirmations: number;
  /** Largest block span per log query (real providers cap eth_getLogs). */
  maxBlockRange: number;
  /** Per-RPC-call timeout. */
  timeoutMs: number;
}

/**
 * When a recorded transfer counts, given the head and the network's confirmation depth:
 * - `depth`: buried under `confirmations` blocks (EVM: the finalized tag lags far behind a checkout);
 * - `depth-and-chain-final`: that, and at or below the chain's own final block (TRON solidified,
 *   SOLANA finalized), since those chains say themselves when a block can no longer change.
 */
export type FinalityRule = 'depth' | 'depth-and-chain-final';

/** Whether a transfer in block `block` counts under `rule` (pure: the watcher's confirmation check). */
export function isFinal(rule: FinalityRule, block: bigint, head: ChainHead, confirmations: number): boolean {
  const deep = head.latest - block + 1n >= BigInt(confirmations);
  return rule === 'depth' ? deep : deep && block <= head.finalized;
}

/** A deposit an account-polling chain is asked about, with the cursor returned for it last time. */
export interface PolledDeposit {
  owner: string;
  token: WatchedToken;
  untilSignature?: string | null;
}

/**
 * EVM/TRON: the chain has a log of token transfers to scan by block range, so one query covers every
 * deposit and the cost grows with the transfers on chain, not with the number of open orders.
 */
export interface LogScanObservation {
  readonly kind: 'log-scan';
  /** All Transfer logs of `tokens` in blocks [from, to] whose recipient `isWatched` accepts. The adapter chunks ranges itself (config `maxBlockRange`). */
  scanTransfers(from: bigint, to: bigint, tokens: WatchedToken[], isWatched: (to: string) => boolean): Promise<ObservedTransfer[]>;
}

/**
 * SOLANA: no ranged log of token transfers, so each deposit's token account is polled for new
 * signatures since its own cursor.
 */
export interface AccountPollObservation {
  readonly kind: 'account-poll';
  /** Transfers into the token accounts of these deposit owners, plus the newest signature seen per owner (the cursor to store). */
  pollDeposits(deposits: PolledDeposit[]): Promise<{ transfers: ObservedTransfer[]; cursors: Record<string, string | null> }>;
}

/** How the watcher learns about transfers on this chain. */
export type Observation = LogScanObservation | AccountPollObservation;

/** A token transfer out of a deposit address (sweeps), built before it is signed. */
export interface TransferIntent {
  token: WatchedToken;
  /** Deposit address the tokens leave (its key signs). */
  from: string;
  to: string;
  amount: bigint;
  /** Who pays the fee when it is not `from` (SOLANA gas tank co-signing); EVM/TRON top the deposit up first instead. */
  feePayer?: string;
}

/** A transaction signed and stored before broadcast: sweeps re-broadcast it after a crash, never rebuild it. */
export interface SignedTransfer {
  txHash: string;
  /** Raw signed transaction, as the chain's broadcast call takes it. */
  raw: string;
}

/**
 * Sending tokens out of deposit addresses, for the sweeps to come. Declared now so sweeps plug into
 * every adapter the same way; no adapter implements it yet (`transfers` is null everywhere), and the
 * sweep state machine (build → sign → store → broadcast → confirm) comes with the sweeps work.
 */
export interface TransferCapability {
  /** Unsigned transaction for `intent` (nonce/blockhash and fees fixed here, so a stored signature stays valid). */
  build(intent: TransferIntent): Promise<Uint8Array>;
  /** Signs a built transaction with the deposit's key (and the fee payer's, where one co-signs). */
  sign(unsigned: Uint8Array, keys: Uint8Array[]): Promise<SignedTransfer>;
  /** Broadcasts a stored signed transaction; idempotent (an already known transaction is not an error). */
  broadcast(signed: SignedTransfer): Promise<void>;
}

/** One token balance to read: `owner` is the deposit address (SOLANA: the owner, read at its associated token account). */
export interface BalanceQuery {
  owner: string;
  token: WatchedToken;
}

/**
 * Reading token balances of deposit addresses (the reconciliation). `atBlock`: whether the chain can
 * answer at a past block (EVM `eth_call` at a block tag), so the balance and the ledger cover exactly
 * the same blocks; where it cannot, balances are read at the latest state.
 */
export interface BalanceCapability {
  readonly atBlock: boolean;
  /** Balances in base units, in the order of `queries`; at most `concurrency` reads in flight. */
  tokenBalances(queries: BalanceQuery[], at: bigint | null, concurrency: number): Promise<bigint[]>;
}

/**
 * RPC-backed view of one network in one environment. Implementations retry, fail over and back off
 * internally. What differs between chains is declared here as capabilities (observation kind,
 * finality rule, address comparison through `driver`), so callers never branch on the family.
 */
export interface ChainAdapter {
  readonly network: Network;
  readonly family: ChainFamily;
  readonly driver: ChainFamilyDriver;
  readonly finality: FinalityRule;
  readonly observation: Observation;
  /** Outgoing transfers (sweeps); null until sweeps implement it for this chain. */
  readonly transfers: TransferCapability | null;
  /** Token balance reads (reconciliation); absent where the adapter does not implement them yet. */
  readonly balances?: BalanceCapability;
  getHead(): Promise<ChainHead>;
  /** Hash of block `n`, or null when the node does not have it (yet). */
  getBlockHash(n: bigint): Promise<string | null>;
  /** Releases connections; the adapter is not used afterwards. */
  close(): Promise<void>;
}
