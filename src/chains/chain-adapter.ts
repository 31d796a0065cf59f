import type { Network, WalletType } from '../common/environment.js';
import type { ChainIdentityCapability, WrongChainError } from './chain-identity.js';
import type { ProviderFailureReason, ProviderHealthStatus } from './provider-health.js';

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
  /**
   * The head block's own hash and its parent's, when the head read tells them (EVM): a watcher whose
   * cursor is the parent needs no other read to know the new block continues its chain, and one
   * whose cursor is the head with this hash knows nothing changed.
   */
  tip?: { hash: string; parentHash: string };
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
  /**
   * Optional: a deriver of many keys of one seed (the path's shared parent node computed once, so a
   * batch pays one child derivation per key); the same keys as `derivePrivateKey`.
   */
  privateKeyDeriver?(seed: Uint8Array): (index: number) => Uint8Array;
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
  /**
   * Checks an address a merchant types as its settlement wallet, strictly (the family's own rules:
   * checksum, encoding, curve; and its null/burn addresses): the canonical form, or why it is refused,
   * in words for the merchant. Registry checks (deposit, token, gas tank addresses) are the caller's.
   */
  checkSettlementAddress(address: string): SettlementAddressCheck;
}

/** A settlement address typed by a merchant: accepted in canonical form, or refused with the reason. */
export type SettlementAddressCheck = { ok: true; address: string } | { ok: false; reason: string };

/** Per-network RPC settings, from config. */
export interface ChainNetworkConfig {
  network: Network;
  rpcUrls: string[];
  /** WebSocket URLs for push (`subscribeHeads`), tried in order; absent or empty: no push, the watcher polls. */
  wsUrls?: string[];
  /** EVM chain id (EVM only). */
  chainId?: number;
  /** Blocks a payment must be buried under before it counts (EVM); TRON/SOLANA use chain finality. */
  confirmations: number;
  /** Largest block span per log query (real providers cap eth_getLogs). */
  maxBlockRange: number;
  /** Per-RPC-call timeout. */
  timeoutMs: number;
  /**
   * The chain's genesis hash: a provider serving another genesis is refused (production: the
   * mainnet's). Absent: providers are not refused for their genesis (sandbox: a restarted dev chain
   * is a new chain the watcher follows); an EVM provider with another `chainId` is refused either way.
   */
  genesisHash?: string;
  /** How often a verified provider's chain identity is checked again (default 30 s). */
  identityRecheckMs?: number;
  /**
   * Every RPC call goes only to providers verified on the expected chain (the watchers' adapters).
   * False or absent: calls are not gated; `identity.current()` still probes (tools, one-adapter tests).
   */
  verifyIdentity?: boolean;
  /** Called once each time a provider is refused for serving another chain (metrics, alarm). */
  onWrongChain?: (error: WrongChainError) => void;
  /** Called for every request sent to a provider (the RPC budget in metrics): host only, and the method (each item of a batch counts). */
  onRpcCall?: (call: { provider: string; method: string }) => void;
  /** Called on every failed provider attempt (metrics, logs): host only, with why (`reason`). */
  onProviderFailure?: (failure: { provider: string; reason: ProviderFailureReason; consecutiveFailures: number }) => void;
  /** EVM sweeps: the Disperse contract funding many deposits in one transaction; absent → one top-up transaction per deposit. */
  disperseAddress?: string;
  /** EVM sweeps: the EIP-7702 Sweeper deployed for this network's gas tank; set → batch sweeping (`SweepCapability.batch`). */
  sweeperAddress?: string;
  /** EVM sweeps: most deposits per batch sweep transaction (default 100). */
  sweepBatchMax?: number;
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
  /**
   * What the owner's accounts looked like at the last full listing (an opaque string the poll
   * returned in `seen`; null: never listed). When given, the poll reads the accounts first and
   * lists the history only of owners whose accounts changed; when absent, every owner is listed.
   */
  seen?: string | null;
  /** List this owner's history even if its accounts look unchanged (money of ours left it since `seen`). */
  recheck?: boolean;
  /**
   * With `seen`: false leaves this token's account unread this poll (it is still listed whenever
   * the owner is). The watcher reads the deposit's own token every poll and the others less often.
   */
  readAccount?: boolean;
}

/** What an account poll found: transfers, the cursor per owner, and per owner whose accounts were verified this poll, the `seen` to store. */
export interface AccountPollResult {
  transfers: ObservedTransfer[];
  cursors: Record<string, string | null>;
  /** Only owners whose history is known complete up to their current accounts; an owner absent here keeps its old `seen` (and any recheck). */
  seen: Record<string, string>;
}

/**
 * What an account poll asks for: every deposit owner × every watched token, each with the owner's
 * cursor. Not only the deposit's own token: another watched token sent to the owner lands in another
 * account, and must be observed too (a `wrong_token` receipt), as a log scan of every token observes it.
 */
export function pollEveryToken(
  deposits: { owner: string; cursor: string | null; seen?: string | null; recheck?: boolean; reads?: (token: WatchedToken) => boolean }[],
  tokens: WatchedToken[],
): PolledDeposit[] {
  return deposits.flatMap((d) =>
    tokens.map((token) => ({
      owner: d.owner,
      token,
      untilSignature: d.cursor,
      ...(d.seen !== undefined ? { seen: d.seen, recheck: d.recheck === true, readAccount: d.reads?.(token) ?? true } : {}),
    })),
  );
}

/**
 * `ObservedTransfer.token` of a native coin transfer (ETH, BNB, TRX): not a token address of any
 * family. Its `index` is -1 (the transaction's own value; event logs start at 0).
 */
export const NATIVE_TOKEN = 'native';

/** Whether a transfer moves the network's native coin (a sweep of native coin) rather than a token. */
export const isNativeIntent = (intent: { token: { address: string } }): boolean => intent.token.address === NATIVE_TOKEN;

/**
 * EVM/TRON: the chain has a log of token transfers to scan by block range, so one query covers every
 * deposit and the cost grows with the transfers on chain, not with the number of open orders.
 */
export interface LogScanObservation {
  readonly kind: 'log-scan';
  /** All Transfer logs of `tokens` in blocks [from, to] whose recipient `isWatched` accepts. The adapter chunks ranges itself (config `maxBlockRange`). */
  scanTransfers(from: bigint, to: bigint, tokens: WatchedToken[], isWatched: (to: string) => boolean): Promise<ObservedTransfer[]>;
  /**
   * Native coin sent by a transaction's own value in blocks [from, to] to a recipient `isWatched`
   * accepts, successful transactions only (`token` = `NATIVE_TOKEN`, `index` -1): every transaction of
   * each block is read once (EVM: one `eth_getBlockByNumber` with transactions per block; TRON: the
   * block `scanTransfers` reads anyway), so the cost grows with the blocks, not with the deposits.
   * Coin moved by a contract's internal call (no transaction of its own) is not seen here: the
   * reconciliation's native balance check is what finds it.
   */
  scanNative?(from: bigint, to: bigint, isWatched: (to: string) => boolean): Promise<ObservedTransfer[]>;
  /**
   * One block read by its hash (`block` is the head tip the watcher checked against its cursor): the
   * Transfer logs of `tokens` and the native coin transfers to recipients `isWatched` accepts, both
   * exactly of that block (logs asked by block hash, so they cannot straddle a reorg). A node that
   * does not know the hash fails the call with `BlockUnavailableError` (any other failure, a rate
   * limit or a timeout, is thrown as it is). Absent: the watcher scans one-block ranges.
   */
  scanBlock?(
    block: { number: bigint; hash: string },
    tokens: WatchedToken[],
    isWatched: (to: string) => boolean,
    /** Awaited after the block is read and before `isWatched` is asked (the watcher reads a pushed block while it loads its watch set). */
    ready?: Promise<unknown>,
  ): Promise<{ transfers: ObservedTransfer[]; native: ObservedTransfer[] }>;
}

/**
 * The node does not know the block asked by hash (a hash pushed over a socket that its RPC node has
 * not seen, or a block replaced since): unlike a rate limit or a timeout, asking again now is useless.
 */
export class BlockUnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BlockUnavailableError';
  }
}

/**
 * SOLANA: no ranged log of token transfers, so each deposit's token account is polled for new
 * signatures since its own cursor.
 */
export interface AccountPollObservation {
  readonly kind: 'account-poll';
  /** Transfers into the token accounts of these deposit owners, plus the newest signature seen per owner (the cursor to store). */
  pollDeposits(deposits: PolledDeposit[]): Promise<AccountPollResult>;
  /**
   * Optional: native coin sent to these deposit owners since the last call (`token` = `NATIVE_TOKEN`,
   * `index` -1), with RPC calls per poll that grow with the owners whose native balance changed,
   * not with every open deposit (SOLANA: balances read 100 owners per call, only changed ones listed).
   */
  pollNative?(owners: string[]): Promise<ObservedTransfer[]>;
}

/** How the watcher learns about transfers on this chain. */
export type Observation = LogScanObservation | AccountPollObservation;

/** A token transfer out of a deposit address (sweeps). */
export interface TransferIntent {
  /** The token moved; `NATIVE_TOKEN` as its address: the network's native coin (`isNativeIntent`). */
  token: WatchedToken;
  /** Deposit address the tokens leave (its key signs). */
  from: string;
  /** The merchant's settlement address. */
  to: string;
  /** Base units; the sweep sends the deposit's whole balance as read from the chain at send time. */
  amount: bigint;
}

/** A transaction signed and stored before broadcast: sweeps re-broadcast it after a crash, never rebuild it. */
export interface SignedTx {
  txHash: string;
  /** Raw signed transaction, as the chain's broadcast call takes it (hex for EVM/TRON JSON, base64 for SOLANA). */
  raw: string;
  /**
   * Sender-side ordering the caller must remember: EVM nonce of the signer; null where the chain has
   * none (TRON reference block + expiration, SOLANA recent blockhash).
   */
  nonce: bigint | null;
  /**
   * After this height (EVM: never, null; TRON: expiration time in ms; SOLANA: last valid block height),
   * a transaction not yet included can never be: it is then safe to sign a new one for the same funds.
   */
  expiresAt: bigint | null;
}

/** Where a broadcast transaction stands, as the chain says now. */
export type TxState =
  /** In a block: `success` false means it ran and reverted (EVM/TRON) or failed (SOLANA), fee still paid. */
  | {
      state: 'included';
      blockNumber: bigint;
      blockHash: string;
      success: boolean;
      feePaid: bigint;
      /**
       * Everything the signer's native balance lost in this transaction: the fee, the coin it sent
       * (EVM `value`, TRON TRX transfer amount) and the rent of accounts it created (SOLANA: the
       * settlement token account the fee payer opens). What a gas tank really spent on a sweep; absent
       * → `feePaid`.
       */
      signerSpent?: bigint;
      /**
       * Chain resources the transaction consumed besides `feePaid`, for the sweep's record (TRON:
       * `energy` and `bandwidth` units; SOLANA: `computeUnits`); absent where the chain reports none.
       */
      resourceUsage?: Record<string, bigint>;
    }
  /** Known to the node, not in a block yet. */
  | { state: 'pending' }
  /**
   * Can never be included: expired (TRON/SOLANA past `expiresAt`), or its EVM nonce was consumed by
   * another transaction (a fee-bumped replacement landed). Safe to sign anew.
   */
  | { state: 'dead' }
  /** Not seen by the node (dropped, or never arrived): re-broadcast the stored raw transaction. */
  | { state: 'unknown' };

/**
 * A node refused a signed transaction (not a transport failure): `reason` is the chain's own code
 * (TRON `TRANSACTION_EXPIRATION_ERROR`, `BANDWITH_ERROR`…, SOLANA the simulation's error), and
 * `expired` says it can never be accepted again (sign a new one once `txState` says `dead`).
 */
export class TxRejectedError extends Error {
  constructor(
    readonly reason: string,
    message: string,
    readonly expired = false,
  ) {
    super(message);
    this.name = 'TxRejectedError';
  }
}

/** Native coin one deposit needs before its sweep ('topup' gas model only). */
export interface GasNeed {
  address: string;
  /** Wei / sun to send (the caller already subtracted what the address holds). */
  amount: bigint;
}

/** Options of one signing; the caller owns nonces (allocated in the database, one writer per signer). */
export interface SignOptions {
  /** EVM: the signer's nonce to use (a replacement reuses the stuck transaction's nonce). */
  nonce?: bigint;
  /** Fee multiplier in percent over the current network fee (EVM replacement bumps: 100, 125, 150…). */
  feeBumpPercent?: number;
}

/**
 * Sending tokens out of deposit addresses (sweeps). What differs per chain is declared here; the
 * sweep state machine (`src/modules/sweeps/`) never branches on the family:
 * - gas `topup`: the gas tank first sends the deposit what one token transfer costs (EVM: one disperse
 *   transaction funds many deposits; TRON: energy delegated from the tank's stake, else TRX to burn),
 *   then the deposit's key signs the token transfer;
 * - gas `fee-payer`: the gas tank signs the sweep as its fee payer (SOLANA); deposits hold no SOL.
 */
export interface SweepCapability {
  readonly gas: 'topup' | 'fee-payer';
  /** Native balance (wei, sun, lamports) of any address. */
  nativeBalance(address: string): Promise<bigint>;
  /**
   * Native units the sender of one token transfer from `from` to `to` pays at current prices (EVM gas
   * limit × fee; TRON energy priced in TRX, or 0 once energy is delegated; SOLANA fee plus the rent of
   * the destination's token account when it does not exist yet). The top-up amount and the dust rule.
   */
  quoteTransferFee(intent: TransferIntent): Promise<bigint>;
  /**
   * Optional: what the sweep would cost in native units once the tank's resources are counted, for
   * the dust rule (`quoteTransferFee` when absent). TRON: energy the tank can delegate from its stake
   * is lent, not burnt, so only the bandwidth burn is left when its free stake covers the transfer.
   */
  dustFee?(intent: TransferIntent, tank: string): Promise<bigint>;
  /**
   * `topup` only: signs the tank's funding transaction(s) for `needs` with the tank's key (an empty
   * list for `fee-payer`). TRON: per deposit, a TRX transfer that activates an account that does not
   * exist yet, then a `delegateresource` of enough staked ENERGY for one TRC-20 transfer when the
   * tank's stake allows it (`amount` is then read as the burn price of that energy), else a TRX
   * transfer of `amount` that the transfer burns for energy. Broadcast them in order.
   */
  signFunding(tankKey: Uint8Array, needs: GasNeed[], options: SignOptions): Promise<SignedTx[]>;
  /**
   * Optional, for gas models that lend rather than give: after the sweeps of `addresses` are
   * confirmed, the tank's transactions that take the loan back (TRON: `undelegateresource` of
   * whatever ENERGY the tank still delegates to each address, read from the chain, so calling it
   * again after a crash signs only what is still outstanding). Empty list when nothing is lent.
   */
  signReclaim?(tankKey: Uint8Array, addresses: string[], options: SignOptions): Promise<SignedTx[]>;
  /**
   * Optional, operator only (CLI `gas-tank stake`): locks `amount` of the tank's native coin for fee
   * resources it can then lend (TRON: Stake 2.0 `freezebalancev2` for ENERGY, in sun).
   */
  signStake?(tankKey: Uint8Array, amount: bigint, options: SignOptions): Promise<SignedTx>;
  /**
   * Optional, for the reconciliation's native ledger: the native coin a stored transaction sends, to
   * whom, decoded from its raw form (no RPC): EVM the `value` to `to`, or each recipient of a Disperse
   * call; TRON a `TransferContract`'s amount. Empty for anything else. What reached the recipients if
   * the transaction succeeded.
   */
  coinSent?(tx: Pick<SignedTx, 'raw'>): { to: string; amount: bigint }[];
  /** Signs the token transfer with the deposit's key (and the tank's as fee payer for `fee-payer`). */
  signTransfer(intent: TransferIntent, keys: { deposit: Uint8Array; tank?: Uint8Array }, options: SignOptions): Promise<SignedTx>;
  /**
   * Broadcasts a stored transaction; idempotent (a transaction the node already knows is not an
   * error). Throws `TxRejectedError` when the node refuses it for good (expired, bad signature, no
   * funds), RPC errors when no node could be asked.
   */
  broadcast(tx: SignedTx): Promise<void>;
  /** Where `tx` stands now (its nonce/expiry let the adapter tell `dead` from `unknown`). */
  txState(tx: SignedTx, from: string): Promise<TxState>;
  /**
   * Optional, preferred where present: the gas tank sweeps many deposits in ONE transaction it pays
   * for, with no top-up at all (EVM: EIP-7702, the deposits delegate to a sweeper contract that only
   * the tank may drive). Absent → top-up (`signFunding`) then one `signTransfer` per deposit.
   */
  readonly batch?: BatchSweepCapability;
}

/** One deposit of a batch sweep: the transfer, and the deposit's key (it signs an authorization offline, never a transaction). */
export interface BatchSweepItem {
  intent: TransferIntent;
  depositKey: Uint8Array;
}

/** Sweeping many deposits in one tank-paid transaction (see `SweepCapability.batch`). */
export interface BatchSweepCapability {
  /** Most items one transaction may carry (config); the caller splits larger sets. */
  readonly maxBatch: number;
  /**
   * Signs the tank's transaction moving each item's `intent.amount` of `intent.token` from
   * `intent.from` to `intent.to`; all or nothing (one failing item reverts the whole transaction).
   * Nonce and fee bump as for `signTransfer` (the nonce is the tank's). Broadcast, `txState` (with the
   * tank's address as `from`) and replacement work as for any `SignedTx`.
   */
  signBatchSweep(tankKey: Uint8Array, items: BatchSweepItem[], options: SignOptions): Promise<SignedTx>;
}

/**
 * Thrown by `signTransfer` when the deposit holds less native coin than the transaction needs at the
 * fee it must carry (the base fee rose since the top-up, or a fee bump was asked for): top it up by
 * `needed - balance` and sign again. Nothing was signed.
 */
export class SweepGasShortError extends Error {
  override readonly name = 'SweepGasShortError';
  readonly code = 'SWEEP_GAS_SHORT';
  constructor(
    readonly address: string,
    readonly needed: bigint,
    readonly balance: bigint,
  ) {
    super(`${address} holds ${balance} native units, the transfer needs ${needed}: top up ${needed - balance}`);
  }
}

/**
 * A hot wallet on one network that sends and waits until the transfer is in a block (one block, the
 * node's view: finality is the watcher's business): the sandbox faucet and `dev pay`. Sweeps do not
 * use it (they sign offline and store before broadcasting, `SweepCapability`). Amounts are base units;
 * the token is a contract (EVM, TRON) or mint (SOLANA).
 */
export interface TransferWallet {
  /** The wallet's address on this network (for operators topping it up). */
  readonly address: string;
  nativeBalance(): Promise<bigint>;
  tokenBalance(token: { address: string; decimals: number }): Promise<bigint>;
  /** Sends and waits until the transfer is in a block; throws when it fails on chain. Returns the tx hash / id / signature. */
  sendNative(to: string, amount: bigint): Promise<string>;
  /** As `sendNative`; SOLANA also creates the recipient's token account (the wallet pays its rent). */
  sendToken(token: { address: string; decimals: number }, to: string, amount: bigint): Promise<string>;
}

export interface TransferWalletOptions {
  rpcUrl: string;
  /** secp256k1 private key as hex (EVM, TRON) or ed25519 seed as hex (SOLANA). */
  key: string;
  /** How long to wait for a transfer to land. */
  timeoutMs: number;
}

/** One token balance to read: `owner` is the deposit address (SOLANA: the owner, read at its associated token account). */
export interface BalanceQuery {
  owner: string;
  token: WatchedToken;
}

/**
 * Reading token balances of deposit addresses (the reconciliation). `atBlock`: whether the chain can
 * answer at a past block (EVM `eth_call` at a block tag), so the balance and the ledger cover exactly
 * the same blocks. Where it cannot (TRON `triggerconstantcontract`, SOLANA account reads), `at` is
 * ignored and balances are read at the latest state; the caller fences the reads between two
 * `getHead()` calls and allows for transfers the watcher has not recorded yet. An account or token
 * that does not exist on chain holds 0.
 */
export interface BalanceCapability {
  readonly atBlock: boolean;
  /** Balances in base units, in the order of `queries`; at most `concurrency` reads in flight. */
  tokenBalances(queries: BalanceQuery[], at: bigint | null, concurrency: number): Promise<bigint[]>;
  /** Native coin balances (wei, sun, lamports) of `owners`, in their order, read as `tokenBalances` reads (at `at` where `atBlock`). */
  nativeBalances(owners: string[], at: bigint | null, concurrency: number): Promise<bigint[]>;
}

/** What an address is, where the chain can tell (refund claims refuse contracts). */
export interface AccountCapability {
  /** Whether code lives at the address (EVM `eth_getCode`). */
  isContract(address: string): Promise<boolean>;
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
  /** Outgoing transfers (sweeps); null where the adapter does not implement them. */
  readonly sweeps: SweepCapability | null;
  /** Token balance reads (reconciliation): every family implements them (EVM at a block; TRON and SOLANA at the latest state). */
  readonly balances?: BalanceCapability;
  /** Optional: account facts (contract or not); absent where the chain cannot tell (TRON, SOLANA: refund claims skip the check). */
  readonly accounts?: AccountCapability;
  /** Which chain the providers serve; providers on another chain are refused (see `ProviderGate`). */
  readonly identity: ChainIdentityCapability;
  /** How the adapter scores its providers (src/chains/provider-health.ts): host only. */
  readonly providerHealth: { snapshot(): ProviderHealthStatus[] };
  getHead(): Promise<ChainHead>;
  /**
   * Optional push: calls `onHead` whenever the provider announces a new block or slot (EVM
   * `eth_subscribe("newHeads")`, SOLANA `slotSubscribe`/account subscriptions over the provider's
   * WebSocket). A hint only: the watcher then runs its normal poll at once, so a dropped socket costs
   * latency, never a payment (polling stays the fallback and the catch-up). The adapter reconnects
   * with backoff and reports its state through `onState`; `close()` ends the subscription. Absent
   * (TRON's HTTP API, a provider without WebSocket): the watcher polls at the network's cadence.
   */
  subscribeHeads?(
    onHead: (head: { number: bigint; hash?: string; parentHash?: string }) => void,
    onState?: (state: 'open' | 'down') => void,
  ): { close(): Promise<void> };
  /** Hash of block `n`, or null when the node does not have it (yet). */
  getBlockHash(n: bigint): Promise<string | null>;
  /** Releases connections; the adapter is not used afterwards. */
  close(): Promise<void>;
}
