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

/** RPC-backed view of one network in one environment. Implementations retry, fail over and back off internally. */
export interface ChainAdapter {
  readonly network: Network;
  readonly family: ChainFamily;
  readonly driver: ChainFamilyDriver;
  getHead(): Promise<ChainHead>;
  /** Hash of block `n`, or null when the node does not have it (yet). */
  getBlockHash(n: bigint): Promise<string | null>;
  /**
   * EVM/TRON: all Transfer logs of `tokens` in blocks [from, to] whose recipient `isWatched` accepts.
   * The adapter chunks ranges itself (config `maxBlockRange`).
   */
  scanTransfers?(from: bigint, to: bigint, tokens: WatchedToken[], isWatched: (to: string) => boolean): Promise<ObservedTransfer[]>;
  /**
   * SOLANA: transfers into the token accounts of these deposit owners, newer than `untilSignature` per owner.
   * Returns transfers plus the newest signature seen per owner (the cursor to store).
   */
  pollDeposits?(
    deposits: { owner: string; token: WatchedToken; untilSignature?: string | null }[],
  ): Promise<{ transfers: ObservedTransfer[]; cursors: Record<string, string | null> }>;
  close?(): Promise<void>;
}
