import {
  NATIVE_TOKEN,
  type BalanceQuery,
  type ChainAdapter,
  type ChainHead,
  type ChainNetworkConfig,
  type LogScanObservation,
  type ObservedTransfer,
  type WatchedToken,
} from '../chain-adapter.js';
import { mapLimit } from '../../common/map-limit.js';
import { ProviderGate } from '../chain-identity.js';
import { tronAddressBody, tronAddressFromBody } from './tron.address.js';
import { TronBadResponse, TronHttpClient, type TronHttpClientOptions } from './tron.client.js';
import { tronDriver } from './tron.driver.js';
import { ProviderHealth } from '../provider-health.js';
import { TronRpcError } from './tron.errors.js';
import { createTronSweeps, type TronSweepOptions, type TronSweeps } from './tron.sweeps.js';

/**
 * java-tron HTTP endpoints this adapter calls (all POST with a JSON body, `visible` left false so
 * addresses come back as hex):
 * - `/wallet/getnowblock`                      {}        → head block (latest)
 * - `/walletsolidity/getnowblock`              {}        → solidified head (finalized)
 * - `/wallet/getblockbynum`                    {num}     → block hash (`blockID`) and its tx ids (getBlockHash,
 *                                                          and in scanTransfers to check the infos are complete)
 * - `/wallet/gettransactioninfobyblocknum`     {num}     → receipts + event logs of every tx in a block
 * - `/wallet/triggerconstantcontract`          {owner_address, contract_address, function_selector, parameter}
 *                                                        → TRC-20 `balanceOf` (reconciliation), at the node's
 *                                                          latest state: the HTTP API takes no block, so
 *                                                          `balances.atBlock` is false
 * The URLs must serve both `/wallet` and `/walletsolidity` on one base (TronGrid, or a full node
 * with its solidity API behind the same proxy).
 */

/** keccak256("Transfer(address,address,uint256)"): TRC-20 uses the ERC-20 event unchanged. */
export const TRANSFER_TOPIC = 'ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef';

export interface TronAdapterOptions extends Partial<Omit<TronHttpClientOptions, 'urls' | 'timeoutMs'>> {
  /** Blocks fetched in parallel by `scanTransfers` (each block is one request; default 4). */
  concurrency?: number;
  /** Re-reads of a block whose info and block answers disagree before giving up (default 2). */
  consistencyRetries?: number;
  /** Sweep signing settings (transaction lifetime, fee limit, energy margin). */
  sweep?: TronSweepOptions;
  /**
   * Longest the solidified head is left unread while nothing of ours waits for it (default 60 s):
   * it is read with every head while a transfer this adapter returned or a sweep transaction it saw
   * included is above the known solidified head.
   */
  solidRefreshMs?: number;
}

interface BlockJson {
  blockID?: unknown;
  block_header?: { raw_data?: { number?: unknown; parentHash?: unknown } };
  transactions?: {
    txID?: unknown;
    ret?: { contractRet?: unknown }[];
    raw_data?: { contract?: { type?: unknown; parameter?: { value?: { owner_address?: unknown; to_address?: unknown; amount?: unknown } } }[] };
  }[];
}

/** A TRX transfer (`TransferContract`) of a block, as the block lists it. */
interface TrxTransfer {
  txId: string;
  from: string;
  to: string;
  amount: bigint;
}

interface TxInfoJson {
  id?: unknown;
  blockNumber?: unknown;
  result?: unknown;
  receipt?: { result?: unknown };
  log?: { address?: unknown; topics?: unknown; data?: unknown }[];
}

interface ParsedBlock {
  number: bigint;
  hash: string;
  /** The parent's blockID as the header states it (null when absent or malformed). */
  parentHash: string | null;
  txIds: Set<string>;
  /** Successful TRX transfers of the block (`TransferContract`, result SUCCESS). */
  trx: TrxTransfer[];
  /**
   * Whether a transaction of the block may have run the TVM (and so emitted event logs): any
   * transaction whose contract is not of a type known to run no contract code, an empty or unreadable
   * contract list included. False: the block's transaction infos hold no log, and need not be read.
   */
  mayLog: boolean;
}

/** System contract types that run no TVM code, so emit no event log (java-tron `ContractType`). */
const NO_VM_TYPES = new Set([
  'TransferContract',
  'TransferAssetContract',
  'AccountCreateContract',
  'AccountUpdateContract',
  'AccountPermissionUpdateContract',
  'VoteWitnessContract',
  'WithdrawBalanceContract',
  'FreezeBalanceContract',
  'UnfreezeBalanceContract',
  'FreezeBalanceV2Contract',
  'UnfreezeBalanceV2Contract',
  'WithdrawExpireUnfreezeContract',
  'DelegateResourceContract',
  'UnDelegateResourceContract',
  'CancelAllUnfreezeV2Contract',
]);

function mayLogOf(b: BlockJson): boolean {
  return (b.transactions ?? []).some((tx) => {
    const c = tx.raw_data?.contract;
    return !Array.isArray(c) || c.length === 0 || c.some((x) => typeof x?.type !== 'string' || !NO_VM_TYPES.has(x.type));
  });
}

const HEX41 = /^41[0-9a-f]{40}$/;

function trxTransfersOf(b: BlockJson): TrxTransfer[] {
  const out: TrxTransfer[] = [];
  for (const tx of b.transactions ?? []) {
    const c = tx.raw_data?.contract;
    if (!Array.isArray(c) || c.length !== 1 || c[0]?.type !== 'TransferContract' || typeof tx.txID !== 'string') continue;
    // an absent result is SUCCESS in proto3 JSON (the default value is omitted)
    const ret = tx.ret?.[0]?.contractRet;
    if (ret !== undefined && ret !== 'SUCCESS') continue;
    const v = c[0].parameter?.value;
    const from = typeof v?.owner_address === 'string' ? v.owner_address.toLowerCase() : '';
    const to = typeof v?.to_address === 'string' ? v.to_address.toLowerCase() : '';
    const amount = typeof v?.amount === 'number' || typeof v?.amount === 'string' ? BigInt(v.amount) : 0n;
    if (!HEX41.test(from) || !HEX41.test(to) || amount <= 0n) continue;
    out.push({ txId: tx.txID.toLowerCase(), from: tronAddressFromBody(from.slice(2)), to: tronAddressFromBody(to.slice(2)), amount });
  }
  return out;
}

const HASH = /^[0-9a-f]{64}$/;

function parseBlock(json: unknown): ParsedBlock | null {
  if (!json || typeof json !== 'object' || Array.isArray(json)) throw new TronBadResponse('block is not an object');
  const b = json as BlockJson;
  // java-tron answers `{}` for a block it does not have
  if (b.blockID === undefined && b.block_header === undefined) return null;
  const hash = typeof b.blockID === 'string' ? b.blockID.toLowerCase() : '';
  if (!HASH.test(hash)) throw new TronBadResponse('block has no valid blockID');
  // The first 8 bytes of a TRON block id are its number; proto3 JSON also omits `number` for block 0
  const fromId = BigInt(`0x${hash.slice(0, 16)}`);
  const raw = b.block_header?.raw_data?.number;
  if (raw !== undefined && (typeof raw !== 'number' || BigInt(raw) !== fromId)) {
    throw new TronBadResponse('block number does not match its blockID');
  }
  const txIds = new Set<string>();
  for (const tx of b.transactions ?? []) if (typeof tx.txID === 'string') txIds.add(tx.txID.toLowerCase());
  const parent = typeof b.block_header?.raw_data?.parentHash === 'string' ? b.block_header.raw_data.parentHash.toLowerCase() : '';
  // the parent of block n carries n - 1 in its first 8 bytes, like every blockID
  const parentHash = fromId > 0n && HASH.test(parent) && BigInt(`0x${parent.slice(0, 16)}`) === fromId - 1n ? parent : null;
  return { number: fromId, hash, parentHash, txIds, trx: trxTransfersOf(b), mayLog: mayLogOf(b) };
}

function requireBlock(json: unknown): ParsedBlock {
  const b = parseBlock(json);
  if (!b) throw new TronBadResponse('node returned no head block');
  return b;
}

function parseInfos(json: unknown, num: bigint): TxInfoJson[] {
  // an empty block comes back as `[]` (or `{}` from some versions)
  if (json && typeof json === 'object' && !Array.isArray(json) && Object.keys(json).length === 0) return [];
  if (!Array.isArray(json)) throw new TronBadResponse('transaction infos are not a list');
  for (const info of json as TxInfoJson[]) {
    if (!info || typeof info !== 'object' || typeof info.id !== 'string' || !HASH.test(info.id.toLowerCase())) {
      throw new TronBadResponse('transaction info without id');
    }
    if (info.blockNumber !== undefined && BigInt(info.blockNumber as number) !== num) {
      throw new TronBadResponse(`transaction info of block ${String(info.blockNumber)} in answer for ${num}`);
    }
  }
  return json as TxInfoJson[];
}

const strip = (v: unknown): string => (typeof v === 'string' ? v.replace(/^0x/i, '').toLowerCase() : '');

/** A log address may come as 20-byte hex (documented), 41-hex or 0x-hex: reduce it to the 20-byte body. */
function logAddressBody(v: unknown): string {
  const s = strip(v);
  return s.length === 42 && s.startsWith('41') ? s.slice(2) : s;
}

/**
 * A TRC-20 `balanceOf` answer of `triggerconstantcontract`: the call's 32-byte return word. No contract
 * at the token address (java-tron: "Smart contract is not exist."; an empty return, as the EVM gives
 * for an address without code) holds nothing: 0. Anything else is TronBadResponse.
 */
function parseBalanceResult(json: unknown): bigint {
  const j = (json ?? {}) as { result?: { result?: unknown; code?: unknown; message?: unknown }; constant_result?: unknown };
  if (j.result?.result !== true) {
    const message = typeof j.result?.message === 'string' ? Buffer.from(j.result.message, 'hex').toString('utf8') : '';
    if (/contract is not exist/i.test(message)) return 0n;
    throw new TronBadResponse(`constant call failed: ${String(j.result?.code ?? 'no result')} ${message}`.trim());
  }
  const word = Array.isArray(j.constant_result) ? strip(j.constant_result[0]) : '';
  if (word === '') return 0n;
  if (!/^[0-9a-f]{64}$/.test(word)) throw new TronBadResponse('constant call returned no 32-byte word');
  return BigInt(`0x${word}`);
}

function succeeded(info: TxInfoJson): boolean {
  // logs of reverted calls are dropped by the TVM; checking keeps a malformed answer from creating payments
  if (info.result === 'FAILED') return false;
  const r = info.receipt?.result;
  return r === undefined || r === 'SUCCESS';
}

/** Matches in one block, in chain order (tx order, then log position); the caller adds the block hash. */
function matchTransfers(
  infos: TxInfoJson[],
  num: bigint,
  tokenByBody: Map<string, string>,
  isWatched: (to: string) => boolean,
): Omit<ObservedTransfer, 'blockHash'>[] {
  const out: Omit<ObservedTransfer, 'blockHash'>[] = [];
  for (const info of infos) {
    if (!succeeded(info) || !Array.isArray(info.log)) continue;
    info.log.forEach((log, index) => {
      const token = tokenByBody.get(logAddressBody(log.address));
      if (!token || !Array.isArray(log.topics) || log.topics.length !== 3) return;
      const topics = log.topics.map(strip);
      const data = strip(log.data);
      // exactly 3 topics + one 32-byte word: ERC-20 Transfer (ERC-721's has the id as a 4th topic)
      if (topics[0] !== TRANSFER_TOPIC || !/^[0-9a-f]{64}$/.test(data)) return;
      if (!/^[0-9a-f]{64}$/.test(topics[1]!) || !/^[0-9a-f]{64}$/.test(topics[2]!)) return;
      const to = tronAddressFromBody(topics[2]!);
      if (!isWatched(to)) return;
      out.push({
        txHash: (info.id as string).toLowerCase(),
        // Position of the log in this transaction's log list (java-tron's `log` array, internal
        // calls included, in execution order): with txHash it identifies the transfer uniquely.
        index,
        blockNumber: num,
        token,
        from: tronAddressFromBody(topics[1]!),
        to,
        amount: BigInt(`0x${data}`),
      });
    });
  }
  return out;
}

export interface TronAdapter extends ChainAdapter {
  /** The log scan itself (also reachable as `observation.scanTransfers`), for tests. */
  scanTransfers: LogScanObservation['scanTransfers'];
  /** The TRX scan (also reachable as `observation.scanNative`). */
  scanNative: NonNullable<LogScanObservation['scanNative']>;
  readonly sweeps: TronSweeps;
}

/** `ChainAdapter` for TRON mainnet/testnet over the java-tron HTTP API (plain fetch; see endpoint list above). */
export function createTronAdapter(config: ChainNetworkConfig, options: TronAdapterOptions = {}): TronAdapter {
  if (config.network !== 'TRON') throw new Error(`createTronAdapter cannot serve network ${config.network}`);
  const { concurrency = 4, consistencyRetries = 2, sweep, solidRefreshMs = 60_000, ...clientOpts } = options;
  const gate: ProviderGate = new ProviderGate({
    network: 'TRON',
    urls: config.rpcUrls.map((u) => u.replace(/\/+$/, '')),
    genesis: config.genesisHash ?? null,
    recheckMs: config.identityRecheckMs,
    onRefused: config.onWrongChain,
    enforce: config.verifyIdentity === true,
    // TRON has no chain id: block 0's blockID names the chain
    probe: async (url) => {
      const genesis = await client.postOn(url, '/wallet/getblockbynum', { num: 0 }, parseBlock);
      if (!genesis) throw new Error('TRON: the node has no genesis block');
      return { chainId: null, genesis: genesis.hash };
    },
  });
  // 20 blocks is a minute of TRON: a node further behind is demoted
  const health = new ProviderHealth({ urls: config.rpcUrls.map((u) => u.replace(/\/+$/, '')), maxLagBlocks: 20, onFailure: config.onProviderFailure });
  const client = new TronHttpClient({ ...clientOpts, urls: config.rpcUrls, timeoutMs: config.timeoutMs, gate, health, onCall: config.onRpcCall });

  const tronSweeps = createTronSweeps(client, config.rpcUrls[0]!, sweep);
  // A sweep transaction seen included waits for the solidified head like a payment does.
  const sweeps: TronSweeps = {
    ...tronSweeps,
    async txState(tx, from) {
      const state = await tronSweeps.txState(tx, from);
      if (state.state === 'included') want(state.blockNumber);
      return state;
    },
  };
  const getBlock = (num: bigint) => client.post('/wallet/getblockbynum', { num: Number(num) }, parseBlock);
  /**
   * The blocks the last `scanTransfers` read (it needs each block anyway): `scanNative` over the same
   * range takes their TRX transfers from here instead of reading every block a second time.
   */
  let lastScanned = new Map<bigint, ParsedBlock>();

  /*
   * The RPC budget (TRON's HTTP API has no push, so the watcher polls at block cadence): a poll whose
   * head did not move costs one `getnowblock`; a new head costs that call and, per new block, the
   * transaction infos only when the block holds a contract call (`mayLog`), and a `getblockbynum`
   * only for blocks other than the head. What makes that safe:
   * - The head block `getnowblock` returned (`snap`) answers `getBlockHash` of itself and of its
   *   parent (its header's parentHash) until the next scan starts: the watcher's cursor check and the
   *   hash of the block it scans to, read before the logs as before. After a scan (the watcher's
   *   check that the blocks holding matches are still canonical) and for any other block, the hash
   *   is read from the node.
   * - The solidified head is read on the first head, then with every head while something of ours
   *   waits for it (`wantFinal`: a transfer returned by a scan, a sweep transaction seen included,
   *   above the known solidified head), else on a new head once `solidRefreshMs` passed since it was
   *   last read. A stale solidified head is a lower one: it delays a confirmation, never confirms a
   *   block early.
   */
  let seq = 0;
  let snap: { block: ParsedBlock; seq: number } | null = null;
  let lastScanEnd = 0;
  let scansInFlight = 0;
  let solid: { number: bigint; at: number } | null = null;
  let wantFinal = -1n;
  let lastHead: { number: bigint; hash: string } | null = null;
  const want = (n: bigint) => {
    if (n > wantFinal) wantFinal = n;
  };
  /** The head snapshot, while no scan started since it was taken. */
  const currentSnap = (): ParsedBlock | null => (snap && scansInFlight === 0 && snap.seq > lastScanEnd ? snap.block : null);

  async function scanBlock(
    num: bigint,
    tokenByBody: Map<string, string>,
    isWatched: (to: string) => boolean,
    head: ParsedBlock | null,
  ): Promise<ObservedTransfer[]> {
    for (let attempt = 0; ; attempt++) {
      // The head block `getnowblock` just returned is this block: not read again (first attempt only).
      let block = attempt === 0 && head?.number === num ? head : null;
      // Both answers are needed for every block that holds a contract call, not only those that pay
      // us: an empty info list is indistinguishable from a node that does not have the block yet (a
      // lagging failover node), and treating that as "no transfers" would let the cursor skip real
      // payments. A block without any (`mayLog` false) has no event log: its infos are not read.
      block ??= await getBlock(num);
      if (block && block.number === num && !block.mayLog) {
        lastScanned.set(num, block);
        return [];
      }
      const infos = block ? await client.post('/wallet/gettransactioninfobyblocknum', { num: Number(num) }, (j) => parseInfos(j, num)) : [];
      // The block's tx ids prove the infos belong to the block whose hash we record (a fork switch or
      // another node answering between the two calls is caught here). Only "infos missing" and
      // "info not in block" are checked, not equal counts, so an info-less tx type cannot wedge the scan.
      const b = block;
      const consistent =
        b !== null && b.number === num && !(infos.length === 0 && b.txIds.size > 0) && infos.every((i) => b.txIds.has((i.id as string).toLowerCase()));
      if (consistent) {
        lastScanned.set(num, b);
        return matchTransfers(infos, num, tokenByBody, isWatched).map((m) => ({ ...m, blockHash: b.hash }));
      }
      if (attempt >= consistencyRetries) {
        const why = block === null ? 'is not available from the node' : 'does not match its transaction infos';
        throw new TronRpcError('inconsistent', '/wallet/gettransactioninfobyblocknum', attempt + 1, `block ${num} ${why}`);
      }
    }
  }

  async function scanTransfers(from: bigint, to: bigint, tokens: WatchedToken[], isWatched: (to: string) => boolean): Promise<ObservedTransfer[]> {
    if (from < 0n) from = 0n;
    if (to < from || tokens.length === 0) return [];
    const tokenByBody = new Map<string, string>();
    for (const t of tokens) {
      const canonical = tronDriver.normalizeAddress(t.address);
      tokenByBody.set(tronAddressBody(canonical), canonical);
    }

    // One request per block (java-tron has no ranged log query over HTTP), so `maxBlockRange` does not
    // apply; a small worker pool bounds the load on the node instead.
    lastScanned = new Map();
    const head = currentSnap();
    scansInFlight++;
    try {
      const count = Number(to - from + 1n);
      const results: ObservedTransfer[][] = new Array(count);
      let next = 0;
      let failed = false;
      const worker = async () => {
        while (next < count && !failed) {
          const i = next++;
          try {
            results[i] = await scanBlock(from + BigInt(i), tokenByBody, isWatched, head);
          } catch (e) {
            failed = true; // the range fails as a whole: stop the other workers from fetching more
            throw e;
          }
        }
      };
      await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, count)) }, worker));
      const found = results.flat();
      for (const t of found) want(t.blockNumber);
      return found;
    } finally {
      scansInFlight--;
      lastScanEnd = ++seq;
    }
  }

  /**
   * TRX sent by `TransferContract` transactions to watched addresses in [from, to]: from the blocks the
   * last `scanTransfers` read (no second read), others read once each (at most `concurrency` at once).
   */
  async function scanNative(from: bigint, to: bigint, isWatched: (to: string) => boolean): Promise<ObservedTransfer[]> {
    if (from < 0n) from = 0n;
    if (to < from) return [];
    const nums: bigint[] = [];
    for (let n = from; n <= to; n++) nums.push(n);
    const blocks = await mapLimit(nums, concurrency, async (n) => {
      const b = lastScanned.get(n) ?? (await getBlock(n));
      if (!b || b.number !== n) throw new TronRpcError('inconsistent', '/wallet/getblockbynum', 1, `block ${n} is not available from the node`);
      return b;
    });
    const found = blocks.flatMap((b) =>
      b.trx
        .filter((t) => isWatched(t.to))
        .map((t) => ({ txHash: t.txId, index: -1, blockNumber: b.number, blockHash: b.hash, token: NATIVE_TOKEN, from: t.from, to: t.to, amount: t.amount })),
    );
    for (const t of found) want(t.blockNumber);
    return found;
  }

  /**
   * TRC-20 `balanceOf` of each deposit address through `/wallet/triggerconstantcontract`, at the
   * node's latest state (java-tron's HTTP API has no block parameter), at most `concurrency` in flight.
   */
  async function tokenBalances(queries: BalanceQuery[], _at: bigint | null, concurrency: number): Promise<bigint[]> {
    return mapLimit(queries, concurrency, (q) => {
      const owner = tronAddressBody(q.owner);
      return client.post(
        '/wallet/triggerconstantcontract',
        {
          owner_address: `41${owner}`,
          contract_address: `41${tronAddressBody(q.token.address)}`,
          function_selector: 'balanceOf(address)',
          parameter: owner.padStart(64, '0'),
          visible: false,
        },
        parseBalanceResult,
      );
    });
  }

  /** TRX balance (sun) of each owner: `/wallet/getaccount` at the latest state; an account that does not exist holds 0. */
  async function nativeBalances(owners: string[], _at: bigint | null, concurrency: number): Promise<bigint[]> {
    return mapLimit(owners, concurrency, (o) =>
      client.post('/wallet/getaccount', { address: `41${tronAddressBody(o)}`, visible: false }, (j) => {
        const b = (j as { balance?: unknown } | null)?.balance;
        if (b === undefined) return 0n;
        if (typeof b !== 'number' && typeof b !== 'string') throw new TronBadResponse('account balance is not a number');
        return BigInt(b);
      }),
    );
  }

  return {
    network: 'TRON',
    family: 'tron',
    driver: tronDriver,
    // Solidified blocks cannot be reverted; depth alone could count a block a fork still replaces.
    finality: 'depth-and-chain-final',
    observation: { kind: 'log-scan', scanTransfers, scanNative },
    sweeps,
    balances: { atBlock: false, tokenBalances, nativeBalances },
    identity: gate,
    providerHealth: health,
    scanTransfers,
    scanNative,

    async getHead(): Promise<ChainHead> {
      const latest = await client.head('/wallet/getnowblock', {}, requireBlock, (b) => b.number);
      snap = { block: latest, seq: ++seq };
      const moved = lastHead === null || lastHead.number !== latest.number || lastHead.hash !== latest.hash;
      lastHead = { number: latest.number, hash: latest.hash };
      if (solid === null || wantFinal > solid.number || (moved && Date.now() - solid.at >= solidRefreshMs)) {
        const s = await client.post('/walletsolidity/getnowblock', {}, requireBlock);
        // never lower than what a node already said is solidified (another URL may lag)
        if (solid === null || s.number >= solid.number) solid = { number: s.number, at: Date.now() };
        else solid.at = Date.now();
      }
      // two URLs may answer the two calls; a final block can never be ahead of the head
      return { latest: latest.number, finalized: solid.number < latest.number ? solid.number : latest.number };
    },

    async getBlockHash(n: bigint): Promise<string | null> {
      if (n < 0n) return null;
      const head = currentSnap();
      if (head && n === head.number) return head.hash;
      if (head && n === head.number - 1n && head.parentHash) return head.parentHash;
      return (await getBlock(n))?.hash ?? null;
    },

    async close(): Promise<void> {
      // stateless over fetch: nothing to release
    },
  };
}
