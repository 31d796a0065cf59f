import { getAddress, id } from 'ethers';
import {
  BlockUnavailableError,
  NATIVE_TOKEN,
  type BalanceQuery,
  type ChainAdapter,
  type ChainHead,
  type ChainNetworkConfig,
  type LogScanObservation,
  type ObservedTransfer,
  type WatchedToken,
} from '../chain-adapter.js';
import { evmDriver, isEvmNetwork } from './evm.driver.js';
import { BATCH_MAX, EvmRpcClient, EvmRpcError, hexToBigInt, toQuantity, type EvmRpcOptions } from './evm.rpc.js';
import { ProviderHealth } from '../provider-health.js';
import { createEvmSweeps, type EvmSweepCapability } from './evm.sweeps.js';
import { mapLimit } from '../../common/map-limit.js';
import { ProviderGate } from '../chain-identity.js';
import { pushChecks } from '../push-gate.js';
import { subscribeNewHeads } from './evm.heads.js';

/** keccak256("Transfer(address,address,uint256)"): ERC-20 and TRC-20 share it. */
export const TRANSFER_TOPIC = id('Transfer(address,address,uint256)');

/** Log fields as nodes return them from `eth_getLogs`. */
export interface RpcLog {
  address: string;
  topics: string[];
  data: string;
  blockNumber: string;
  blockHash: string;
  transactionHash: string;
  logIndex: string;
  removed?: boolean;
}

interface RpcBlock {
  number: string;
  hash: string;
}

/** A block with its transactions (`eth_getBlockByNumber(n, true)`): the fields the native scan reads. */
interface RpcFullBlock extends RpcBlock {
  transactions: { hash: string; from: string; to: string | null; value: string }[];
}

export interface EvmAdapterOptions {
  /** Overrides for the RPC client (tests: attempts, backoff, failure hook). */
  rpc?: Partial<Omit<EvmRpcOptions, 'urls' | 'timeoutMs'>>;
  /** Log queries in flight at once while scanning a long range. */
  scanConcurrency?: number;
}

export interface EvmAdapter extends ChainAdapter {
  readonly rpc: EvmRpcClient;
  /** Sweeps (top-up, transfer, and EIP-7702 batches where a Sweeper is configured), with the EVM fee helpers. */
  readonly sweeps: EvmSweepCapability;
  /** The log scan itself (also reachable as `observation.scanTransfers`), for tests and benchmarks. */
  scanTransfers: LogScanObservation['scanTransfers'];
  /** The native coin scan (also reachable as `observation.scanNative`). */
  scanNative: NonNullable<LogScanObservation['scanNative']>;
  /** One block by hash (also reachable as `observation.scanBlock`). */
  scanBlock: NonNullable<LogScanObservation['scanBlock']>;
}

// Providers word "range too large" in many ways; any of these means: ask for fewer blocks.
/** A provider this many blocks behind the best head another one reports is demoted (`behind`). */
export const EVM_MAX_LAG_BLOCKS = 3;

const RANGE_ERROR = /range|too many|more than|limit|exceed|too large|10000|response size/i;

/** Decodes one Transfer log, or null when it is not a standard ERC-20 Transfer we should count. */
export function decodeTransferLog(log: RpcLog): { tokenLower: string; to: string; fromTopic: string; amount: bigint } | null {
  // ERC-721 also emits Transfer(address,address,uint256) but with the id indexed (4 topics, empty data)
  if (log.removed || log.topics.length !== 3 || log.topics[0]?.toLowerCase() !== TRANSFER_TOPIC) return null;
  if (!/^0x[0-9a-fA-F]{64}$/.test(log.data)) return null;
  const toTopic = log.topics[2]!;
  const fromTopic = log.topics[1]!;
  return { tokenLower: log.address.toLowerCase(), to: getAddress(`0x${toTopic.slice(26)}`), fromTopic, amount: BigInt(log.data) };
}

/** `ChainAdapter` for ETHEREUM and BINANCE (and any other EVM chain) over raw JSON-RPC. */
export function createEvmAdapter(config: ChainNetworkConfig, options: EvmAdapterOptions = {}): EvmAdapter {
  if (!isEvmNetwork(config.network)) throw new Error(`createEvmAdapter: ${config.network} is not an EVM network`);
  if (!Number.isInteger(config.maxBlockRange) || config.maxBlockRange < 1) throw new Error(`maxBlockRange must be ≥ 1, got ${config.maxBlockRange}`);
  if (!Number.isInteger(config.confirmations) || config.confirmations < 0) throw new Error(`confirmations must be ≥ 0, got ${config.confirmations}`);

  // The gate probes one provider at a time through `rpc.callOn` (no failover, no gate).
  const gate: ProviderGate = new ProviderGate({
    network: config.network,
    urls: config.rpcUrls,
    chainId: config.chainId !== undefined ? String(config.chainId) : null,
    genesis: config.genesisHash ?? null,
    recheckMs: config.identityRecheckMs,
    onRefused: config.onWrongChain,
    enforce: config.verifyIdentity === true,
    probe: async (url) => {
      const [chainId, genesis] = await Promise.all([
        rpc.callOn<string>(url, 'eth_chainId', []),
        rpc.callOn<RpcBlock | null>(url, 'eth_getBlockByNumber', ['0x0', false]),
      ]);
      if (!genesis?.hash) throw new Error(`${config.network}: the provider has no genesis block`);
      return { chainId: hexToBigInt(chainId, 'eth_chainId').toString(), genesis: genesis.hash };
    },
  });
  // a few blocks of lag: more means the node serves a chain the others have left behind
  const health = new ProviderHealth({ urls: config.rpcUrls, maxLagBlocks: EVM_MAX_LAG_BLOCKS, onFailure: config.onProviderFailure });
  const rpc = new EvmRpcClient({ ...options.rpc, urls: config.rpcUrls, timeoutMs: config.timeoutMs, gate, health, onCall: config.onRpcCall });
  const maxRange = BigInt(config.maxBlockRange);
  const concurrency = Math.max(1, options.scanConcurrency ?? 3);

  /** The head block last read (`getHead`): `scanBlock` reads its transactions from it when it is the block asked. */
  let lastHead: (RpcFullBlock & { parentHash: string }) | null = null;

  const depthFinal = (latest: bigint): bigint => (latest > BigInt(config.confirmations) ? latest - BigInt(config.confirmations) : 0n);

  /**
   * One block by hash: its Transfer logs (`eth_getLogs` with `blockHash`, EIP-234: a node that does
   * not know the hash answers an error, never an empty list) and its native transfers (from the head
   * block `getHead` read when it is this one, else `eth_getBlockByHash` with transactions).
   */
  async function scanBlock(
    block: { number: bigint; hash: string },
    tokens: WatchedToken[],
    isWatched: (to: string) => boolean,
    ready?: Promise<unknown>,
  ): Promise<{ transfers: ObservedTransfer[]; native: ObservedTransfer[] }> {
    const canonicalToken = new Map<string, string>();
    for (const t of tokens) canonicalToken.set(t.address.toLowerCase(), t.address);
    const cached = lastHead?.hash === block.hash ? lastHead : null;
    const [logsRead, fullRead] = await Promise.allSettled([
      canonicalToken.size
        ? rpc.call<RpcLog[]>('eth_getLogs', [{ blockHash: block.hash, address: [...canonicalToken.keys()], topics: [TRANSFER_TOPIC] }])
        : Promise.resolve([]),
      cached ?? rpc.call<RpcFullBlock | null>('eth_getBlockByHash', [block.hash, true]),
    ]);
    // the node answered that it has no such block (whatever `eth_getLogs` said about it); a failed call is thrown as it is
    if (fullRead.status === 'fulfilled' && !fullRead.value)
      throw new BlockUnavailableError(`${config.network}: block ${block.hash} is not available from the node`);
    if (fullRead.status === 'rejected') throw fullRead.reason;
    if (logsRead.status === 'rejected') throw logsRead.reason;
    const [logs, full] = [logsRead.value, fullRead.value!];
    if (!Array.isArray(logs)) throw new Error(`${config.network}: eth_getLogs answered no list`);
    // logs of another block would mean the node ignored the hash filter: never recorded against this one
    for (const log of logs)
      if (log.blockHash.toLowerCase() !== block.hash.toLowerCase())
        throw new Error(`${config.network}: eth_getLogs by block hash answered logs of block ${log.blockHash}`);
    await ready;
    return { transfers: transfersOf(logs, canonicalToken, isWatched), native: await successful(nativeOf(full, isWatched)) };
  }

  async function getLogs(from: bigint, to: bigint, addresses: string[]): Promise<RpcLog[]> {
    try {
      return await rpc.getLogs<RpcLog>({ fromBlock: toQuantity(from), toBlock: toQuantity(to), address: addresses, topics: [TRANSFER_TOPIC] });
    } catch (err) {
      // the configured maxBlockRange can still return too many logs on a busy block span: bisect
      if (err instanceof EvmRpcError && to > from && RANGE_ERROR.test(err.message)) {
        const mid = from + (to - from) / 2n;
        return [...(await getLogs(from, mid, addresses)), ...(await getLogs(mid + 1n, to, addresses))];
      }
      throw err;
    }
  }

  /** The watched Transfer logs of `logs` as observed transfers (`canonicalToken`: lower-case address → configured spelling). */
  function transfersOf(logs: RpcLog[], canonicalToken: Map<string, string>, isWatched: (to: string) => boolean): ObservedTransfer[] {
    const found: ObservedTransfer[] = [];
    for (const log of logs) {
      const decoded = decodeTransferLog(log);
      if (!decoded || !isWatched(decoded.to)) continue;
      const token = canonicalToken.get(decoded.tokenLower);
      if (token === undefined) continue;
      found.push({
        txHash: log.transactionHash,
        index: Number(hexToBigInt(log.logIndex, 'logIndex')),
        blockNumber: hexToBigInt(log.blockNumber, 'blockNumber'),
        blockHash: log.blockHash,
        token,
        from: getAddress(`0x${decoded.fromTopic.slice(26)}`),
        to: decoded.to,
        amount: decoded.amount,
      });
    }
    return found;
  }

  async function scanTransfers(from: bigint, to: bigint, tokens: WatchedToken[], isWatched: (to: string) => boolean): Promise<ObservedTransfer[]> {
    if (from < 0n || to < from || tokens.length === 0) return [];
    const canonicalToken = new Map<string, string>();
    for (const t of tokens) canonicalToken.set(t.address.toLowerCase(), t.address);
    const addresses = [...canonicalToken.keys()];

    const spans: [bigint, bigint][] = [];
    for (let start = from; start <= to; start += maxRange) {
      const end = start + maxRange - 1n;
      spans.push([start, end < to ? end : to]);
    }

    const results: ObservedTransfer[][] = new Array<ObservedTransfer[]>(spans.length);
    let next = 0;
    let failed = false;
    const worker = async (): Promise<void> => {
      while (next < spans.length && !failed) {
        const i = next++;
        const [a, b] = spans[i]!;
        let logs: RpcLog[];
        try {
          logs = await getLogs(a, b, addresses);
        } catch (err) {
          failed = true;
          throw err;
        }
        results[i] = transfersOf(logs, canonicalToken, isWatched);
      }
    };
    // a failed span rejects the whole scan: the watcher keeps its cursor and retries later
    await Promise.all(Array.from({ length: Math.min(concurrency, spans.length) }, worker));
    return results.flat();
  }

  /**
   * Native coin sent by transactions' own value to watched addresses in [from, to]: each block read
   * once with its transactions (JSON-RPC batches of `BATCH_MAX` blocks, `concurrency` in flight), the
   * receipt fetched only for a matching transaction (a reverted one moved nothing: a deposit
   * delegated to the Sweeper runs code when it receives coin).
   */
  async function scanNative(from: bigint, to: bigint, isWatched: (to: string) => boolean): Promise<ObservedTransfer[]> {
    if (from < 0n) from = 0n;
    if (to < from) return [];
    const calls: { method: string; params: unknown[] }[] = [];
    for (let n = from; n <= to; n++) calls.push({ method: 'eth_getBlockByNumber', params: [toQuantity(n), true] });
    const batches: (typeof calls)[] = [];
    for (let i = 0; i < calls.length; i += BATCH_MAX) batches.push(calls.slice(i, i + BATCH_MAX));
    const blocks = (await mapLimit(batches, concurrency, (b) => rpc.batch<RpcFullBlock | null>(b))).flat();
    const found: ObservedTransfer[] = [];
    blocks.forEach((block, i) => {
      // a node that does not have a block of the range yet: the scan must not skip past it
      if (!block) throw new Error(`${config.network}: block ${from + BigInt(i)} is not available from the node yet`);
      found.push(...nativeOf(block, isWatched));
    });
    return successful(found);
  }

  /** Native coin sent by `block`'s transactions' own value to watched recipients (before the receipt check). */
  function nativeOf(block: RpcFullBlock, isWatched: (to: string) => boolean): ObservedTransfer[] {
    const found: ObservedTransfer[] = [];
    for (const tx of block.transactions) {
      if (!tx.to || hexToBigInt(tx.value, 'value') <= 0n) continue;
      const recipient = getAddress(tx.to);
      if (!isWatched(recipient)) continue;
      found.push({
        txHash: tx.hash,
        index: -1,
        blockNumber: hexToBigInt(block.number, 'blockNumber'),
        blockHash: block.hash,
        token: NATIVE_TOKEN,
        from: getAddress(tx.from),
        to: recipient,
        amount: hexToBigInt(tx.value, 'value'),
      });
    }
    return found;
  }

  /** The native transfers whose transaction succeeded (a receipt per matching transaction only). */
  async function successful(found: ObservedTransfer[]): Promise<ObservedTransfer[]> {
    const receipts = await mapLimit(found, concurrency, (t) =>
      rpc.call<{ status?: string; blockHash: string } | null>('eth_getTransactionReceipt', [t.txHash]),
    );
    return found.filter((t, i) => {
      const r = receipts[i];
      // no receipt yet, or one of another block (the chain moved during the scan): the tick fails and the range is read again
      if (!r || r.blockHash !== t.blockHash) throw new Error(`${config.network}: the receipt of ${t.txHash} does not match block ${t.blockNumber} yet`);
      return r.status !== '0x0';
    });
  }

  /**
   * ERC-20 `balanceOf(owner)` at block `at` (the watcher's cursor): JSON-RPC batches of `BATCH_MAX`
   * calls, at most `concurrency` batches in flight.
   */
  async function tokenBalances(queries: BalanceQuery[], at: bigint | null, concurrency: number): Promise<bigint[]> {
    const tag = at === null ? 'latest' : toQuantity(at);
    const calls = queries.map((q) => ({
      method: 'eth_call',
      params: [{ to: q.token.address, data: '0x70a08231' + q.owner.toLowerCase().replace(/^0x/, '').padStart(64, '0') }, tag],
    }));
    const batches: (typeof calls)[] = [];
    for (let i = 0; i < calls.length; i += BATCH_MAX) batches.push(calls.slice(i, i + BATCH_MAX));
    const results = await mapLimit(batches, concurrency, (b) => rpc.batch<string>(b));
    return results.flat().map((r) => hexToBigInt(r, 'balanceOf'));
  }

  /** `eth_getBalance` of each owner at block `at`, in JSON-RPC batches as `tokenBalances`. */
  async function nativeBalances(owners: string[], at: bigint | null, concurrency: number): Promise<bigint[]> {
    const tag = at === null ? 'latest' : toQuantity(at);
    const calls = owners.map((o) => ({ method: 'eth_getBalance', params: [getAddress(o), tag] }));
    const batches: (typeof calls)[] = [];
    for (let i = 0; i < calls.length; i += BATCH_MAX) batches.push(calls.slice(i, i + BATCH_MAX));
    const results = await mapLimit(batches, concurrency, (b) => rpc.batch<string>(b));
    return results.flat().map((r) => hexToBigInt(r, 'eth_getBalance'));
  }

  const adapter: EvmAdapter = {
    network: config.network,
    family: 'evm',
    driver: evmDriver,
    // The finalized tag lags ~15 min behind the head: far too slow for a checkout, so depth decides.
    finality: 'depth',
    observation: { kind: 'log-scan', scanTransfers, scanNative, scanBlock },
    sweeps: createEvmSweeps(rpc, {
      chainId: config.chainId,
      disperseAddress: config.disperseAddress,
      sweeperAddress: config.sweeperAddress,
      sweepBatchMax: config.sweepBatchMax,
    }),
    balances: { atBlock: true, tokenBalances, nativeBalances },
    // Code at the address: a contract (an EIP-7702 delegated account's code counts too; it may not accept tokens as a wallet would).
    accounts: { isContract: async (address: string) => ((await rpc.call<string>('eth_getCode', [getAddress(address), 'latest'])) ?? '0x') !== '0x' },
    identity: gate,
    providerHealth: health,
    rpc,
    scanTransfers,
    scanNative,
    scanBlock,
    subscribeHeads: config.wsUrls?.length
      ? (onHead, onState) =>
          subscribeNewHeads({
            network: config.network,
            urls: config.wsUrls!,
            onCall: config.onRpcCall,
            onHead,
            onState,
            // each socket's own chain is verified over it before it is subscribed (push-gate.ts)
            ...pushChecks(gate, config.rpcUrls, config.wsUrls!, (u) => u.replace(/^http/, 'ws'), 'socket'),
          })
      : undefined,

    /**
     * One call per provider asked: the head block with its transactions (`eth_getBlockByNumber
     * ("latest", true)`), kept for `scanBlock` so one new block costs this read and its logs. The
     * `finalized` tag is not read: EVM finality is depth (`finality: 'depth'`), so `finalized` is the
     * depth rule's block.
     */
    async getHead(): Promise<ChainHead> {
      const block = await rpc.latestBlock<RpcFullBlock & { parentHash: string }>(true);
      const latest = hexToBigInt(block.number, 'latest block number');
      lastHead = block;
      return { latest, finalized: depthFinal(latest), tip: { hash: block.hash, parentHash: block.parentHash } };
    },

    async getBlockHash(n: bigint): Promise<string | null> {
      if (n < 0n) return null;
      const block = await rpc.call<RpcBlock | null>('eth_getBlockByNumber', [toQuantity(n), false]);
      return block?.hash ?? null;
    },

    async close(): Promise<void> {
      // stateless HTTP JSON-RPC: nothing to release
    },
  };
  return adapter;
}
