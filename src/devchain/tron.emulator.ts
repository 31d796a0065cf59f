/**
 * Loopback emulator of the java-tron HTTP API whose contract execution runs on anvil.
 *
 * Why: no TRON node can run on these machines (docs/watchers.md "Local chains and harnesses"). A TRON address's
 * 20-byte body is an EVM address, and TRC-20 contracts are EVM bytecode with the same events, so a
 * TriggerSmartContract can be replayed on anvil (`--auto-impersonate`) from that body.
 *
 * Served (POST JSON body or GET query, `visible: false` hex addresses; `visible: true` accepted on input):
 *   /wallet/getnowblock, /walletsolidity/getnowblock, /wallet/getblock (latest, header only or detail),
 *   /wallet/getblockbynum, /walletsolidity/getblockbynum,
 *   /wallet/gettransactioninfobyblocknum, /walletsolidity/gettransactioninfobyblocknum,
 *   /wallet/gettransactioninfobyid, /wallet/gettransactionbyid,
 *   /wallet/triggersmartcontract (builds the unsigned tx exactly as tronweb checks it),
 *   /wallet/triggerconstantcontract (eth_call), /wallet/getaccount, /walletsolidity/getaccount (TRX balance),
 *   /wallet/broadcasttransaction (TriggerSmartContract, and TransferContract as an anvil value transfer).
 * Blocks are anvil blocks: same numbers; blockID = 8-byte number + the last 24 bytes of anvil's block
 * hash, so a re-org on anvil changes the TRON block id too. Solidified head = latest − `solidityLag`.
 *
 * Checked on broadcast: txID = sha256(raw_data_hex), raw_data_hex matches the raw_data JSON,
 * the signature recovers to owner_address, expiration after the head block's time, no duplicate txID.
 *
 * NOT modelled:
 * - energy, bandwidth, fee_limit and fees: calls run with a fixed gas limit; senders are given ETH on
 *   anvil for gas; `fee`/`energy_fee` are 0 and `energy_usage_total` is anvil's gasUsed;
 * - account activation/creation (sending to a never-seen address just works), TRC-10 transfers,
 *   call_value/call_token_value (ignored), any contract type except TriggerSmartContract and
 *   TransferContract; TRX balances are the anvil balance (1 sun = 10^12 wei) and are not charged for
 *   fees, but a sender's first transaction tops it up with 10^12 TRX for gas (as above);
 * - TaPoS: ref_block_bytes/ref_block_hash are not checked against the chain;
 * - multi-signature / Permission_id (only the owner's single signature is checked);
 * - TRON's contract address derivation (contracts get anvil's CREATE address, prefixed with 41);
 * - `contractResult` return data, internal_transactions, `constant_result` energy numbers;
 * - TVM differences from the EVM (TRON's own opcodes and precompiles);
 * - real block timing (3 s blocks): anvil automines a block per transaction unless `setAutomine(false)`;
 * - pending/unconfirmed pool endpoints and the event server (`/v1/...` TronGrid REST API).
 */
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

import { getAddress, id as keccakId, Interface, recoverAddress, Signature } from 'ethers';
import { fromHex, isAddressValid, toHex, txJsonToPb, txPbToRawDataHex, txPbToTxID } from 'tronweb/utils';

import { startAnvil, type AnvilInstance } from './anvil.js';
import { compileContract, compileTestToken } from './solc.js';

export interface TronEmulatorOptions {
  /** Blocks between latest and solidified head (mainnet: about 19). Default 19. */
  solidityLag?: number;
  /** Seconds between blocks (anvil interval mining); omitted = a block per transaction. */
  blockTime?: number;
  /** Where the compiled TestToken is cached across starts (optional). */
  cacheDir?: string;
}

export interface EmulatedTx {
  txId: string;
  blockNumber: bigint;
  /** anvil's hash of the same execution. */
  evmHash: string;
  success: boolean;
}

export interface TronEmulator {
  /** Base URL to give TronWeb (`fullHost`) or the adapter (`rpcUrls`). */
  url: string;
  anvilUrl: string;
  stop(): Promise<void>;
  /** Deploys the project's TestToken (default "Tether USD"/USDT/6 decimals); returns its base58 T-address. */
  deployToken(opts?: { name?: string; symbol?: string; decimals?: number }): Promise<string>;
  /** Deploys any contract from Solidity source; returns its base58 T-address. */
  deployContract(opts: { source: string; contractName: string; args?: unknown[] }): Promise<{ address: string; abi: Interface }>;
  /** Mints TestToken units to a TRON address (in its own block). */
  mint(token: string, to: string, amount: bigint): Promise<EmulatedTx>;
  balanceOf(token: string, owner: string): Promise<bigint>;
  /** Mines `n` empty blocks; returns the new latest block number. */
  mine(n?: number): Promise<bigint>;
  latestBlock(): Promise<bigint>;
  solidityLag: number;
  /** Off: broadcast transactions wait in anvil's pool until `mine()`, so several land in one block. */
  setAutomine(on: boolean): Promise<void>;
  /** Answers the next `count` requests (optionally only those whose path contains `pathIncludes`) with a fault. */
  injectFault(fault: { count: number; status?: number; body?: string; delayMs?: number; pathIncludes?: string }): void;
  /** Injected faults not yet served (0 once a test has really hit them all). */
  pendingFaults(): number;
  /** Every request path served, in order (after fault injection), for assertions on what a client used. */
  readonly requests: string[];
  /** Result of a broadcast tx by its TRON txID, once mined. */
  getTx(txId: string): Promise<EmulatedTx | null>;
}

interface RpcBlock {
  number: string;
  hash: string;
  parentHash: string;
  timestamp: string;
  transactions: string[];
}

interface RpcLog {
  address: string;
  topics: string[];
  data: string;
}

interface RpcReceipt {
  transactionHash: string;
  blockNumber: string;
  status: string;
  gasUsed: string;
  to: string | null;
  contractAddress: string | null;
  logs: RpcLog[];
}

interface TronTxJson {
  txID: string;
  raw_data: {
    contract: { parameter: { value: Record<string, unknown>; type_url: string }; type: string; Permission_id?: number }[];
    ref_block_bytes: string;
    ref_block_hash: string;
    expiration: number;
    timestamp: number;
    fee_limit?: number;
  };
  raw_data_hex: string;
  signature?: string[];
  visible?: boolean;
}

type Fault = { count: number; status?: number; body?: string; delayMs?: number; pathIncludes?: string };

const GAS_LIMIT = 3_000_000n;
/** TRX (6 decimals) kept as anvil ether (18): 1 sun = 10^12 wei. */
const WEI_PER_SUN = 10n ** 12n;
const strip0x = (s: string) => s.replace(/^0x/i, '').toLowerCase();
const hexUtf8 = (s: string) => Buffer.from(s, 'utf8').toString('hex');
const quantity = (n: bigint | number) => `0x${BigInt(n).toString(16)}`;

/** Any TRON address form (base58, 41-hex) → 0x EVM address of its body. */
function evmOf(address: string): string {
  const hex = isAddressValid(address) ? toHex(address) : address;
  const s = strip0x(hex);
  if (!/^41[0-9a-f]{40}$/.test(s)) throw new Error(`not a TRON address: ${address}`);
  return getAddress(`0x${s.slice(2)}`);
}

const tronOf = (evm: string) => fromHex(`41${strip0x(evm)}`);
const hex41Of = (evm: string) => `41${strip0x(evm)}`;

/** TRON block id: 8-byte big-endian number, then the last 24 bytes of the anvil block hash. */
const blockIdOf = (num: bigint, evmHash: string) => num.toString(16).padStart(16, '0') + strip0x(evmHash).slice(16);

export async function startTronEmulator(opts: TronEmulatorOptions = {}): Promise<TronEmulator> {
  // chain id is irrelevant to TRON clients; a distinct one keeps it apart from the EVM dev chains in logs
  const anvil: AnvilInstance = await startAnvil({ chainId: 31_728, blockTime: opts.blockTime, extraArgs: ['--auto-impersonate'] });
  let rpcId = 0;
  async function rpc<T>(method: string, params: unknown[] = []): Promise<T> {
    const res = await fetch(anvil.rpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: ++rpcId, method, params }),
    });
    const json = (await res.json()) as { result?: T; error?: { message: string } };
    if (json.error) throw new Error(`anvil ${method}: ${json.error.message}`);
    return json.result as T;
  }

  const [operator] = await rpc<string[]>('eth_accounts');
  if (!operator) throw new Error('anvil has no dev accounts');
  const tokenArtifact = compileTestToken({ cacheDir: opts.cacheDir });
  const tokenIface = new Interface(tokenArtifact.abi as never);

  /** evm tx hash → TRON tx id, and the signed TRON tx for broadcast ones. */
  const tronIdByHash = new Map<string, string>();
  const hashByTronId = new Map<string, string>();
  const signedById = new Map<string, TronTxJson>();
  const funded = new Set<string>();
  const faults: Fault[] = [];
  const requests: string[] = [];

  const txIdOf = (evmHash: string) => tronIdByHash.get(evmHash.toLowerCase()) ?? strip0x(evmHash);

  async function sendEvm(tx: { from: string; to?: string; data: string }): Promise<RpcReceipt> {
    const from = tx.from.toLowerCase();
    if (!funded.has(from)) {
      // gas is not modelled: any impersonated sender gets enough ETH for every call it will make
      await rpc('anvil_setBalance', [from, quantity(10n ** 24n)]);
      funded.add(from);
    }
    const hash = await rpc<string>('eth_sendTransaction', [{ ...tx, gas: quantity(GAS_LIMIT) }]);
    // automine answers with the hash as it mines; on a busy machine the receipt can trail it briefly
    for (let waited = 0; ; waited += 20) {
      const receipt = await rpc<RpcReceipt | null>('eth_getTransactionReceipt', [hash]);
      if (receipt) return receipt;
      if (waited >= 5000) throw new Error(`tx ${hash} not mined (automine off?)`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  let automine = true;

  async function latest(): Promise<bigint> {
    return BigInt(await rpc<string>('eth_blockNumber'));
  }

  async function evmBlock(num: bigint): Promise<RpcBlock | null> {
    return rpc<RpcBlock | null>('eth_getBlockByNumber', [quantity(num), false]);
  }

  function header(b: RpcBlock) {
    const num = BigInt(b.number);
    const raw: Record<string, unknown> = {
      txTrieRoot: '0'.repeat(64),
      witness_address: hex41Of(operator!),
      parentHash: num === 0n ? '0'.repeat(64) : blockIdOf(num - 1n, b.parentHash),
      version: 31,
      timestamp: Number(BigInt(b.timestamp)) * 1000,
    };
    // proto3 JSON omits zero values: java-tron prints no `number` for block 0
    if (num !== 0n) raw.number = Number(num);
    return { raw_data: raw, witness_signature: '00'.repeat(65) };
  }

  async function tronBlock(num: bigint, detail = true): Promise<Record<string, unknown>> {
    const b = await evmBlock(num);
    if (!b) return {};
    const out: Record<string, unknown> = { blockID: blockIdOf(num, b.hash), block_header: header(b) };
    if (detail && b.transactions.length > 0) {
      const receipts = await rpc<RpcReceipt[]>('eth_getBlockReceipts', [quantity(num)]);
      out.transactions = receipts.map((r) => {
        const txId = txIdOf(r.transactionHash);
        const signed = signedById.get(txId);
        const ret = [{ contractRet: r.status === '0x1' ? 'SUCCESS' : 'REVERT' }];
        if (signed) return { ret, ...signed };
        return { ret, txID: txId, raw_data: { contract: [], ref_block_bytes: '', ref_block_hash: '', expiration: 0, timestamp: 0 } };
      });
    }
    return out;
  }

  function txInfo(r: RpcReceipt, timestamp: number): Record<string, unknown> {
    const ok = r.status === '0x1';
    const info: Record<string, unknown> = {
      id: txIdOf(r.transactionHash),
      fee: 0,
      blockNumber: Number(BigInt(r.blockNumber)),
      blockTimeStamp: timestamp,
      contractResult: [''],
      contract_address: hex41Of(r.to ?? r.contractAddress ?? '0x' + '0'.repeat(40)),
      receipt: { energy_usage_total: Number(BigInt(r.gasUsed)), result: ok ? 'SUCCESS' : 'REVERT' },
    };
    if (ok && r.logs.length > 0) {
      // java-tron log shape: 20-byte hex address without 41, topics/data hex without 0x
      info.log = r.logs.map((l) => ({ address: strip0x(l.address), topics: l.topics.map(strip0x), data: strip0x(l.data) }));
    }
    if (!ok) {
      info.result = 'FAILED';
      info.resMessage = hexUtf8('REVERT opcode executed');
    }
    return info;
  }

  async function infosOfBlock(num: bigint): Promise<unknown[]> {
    const b = await evmBlock(num);
    if (!b || b.transactions.length === 0) return [];
    const receipts = await rpc<RpcReceipt[]>('eth_getBlockReceipts', [quantity(num)]);
    const ts = Number(BigInt(b.timestamp)) * 1000;
    return receipts.map((r) => txInfo(r, ts));
  }

  const solidHead = async () => {
    const l = await latest();
    const s = l - BigInt(emulator.solidityLag);
    return s < 0n ? 0n : s;
  };

  /** Hex address (41…) from a request field that may be base58 when the client sent `visible: true`. */
  const hexAddr = (v: unknown): string => {
    if (typeof v !== 'string') throw new Error('address missing');
    return strip0x(isAddressValid(v) ? toHex(v) : v);
  };

  function buildTrigger(body: Record<string, unknown>): TronTxJson | { error: string } {
    const owner = hexAddr(body.owner_address);
    const contract = hexAddr(body.contract_address);
    let data: string;
    if (typeof body.function_selector === 'string' && body.function_selector) {
      data = strip0x(keccakId(body.function_selector.replace(/\s+/g, ''))).slice(0, 8) + strip0x(String(body.parameter ?? ''));
    } else if (typeof body.data === 'string') {
      data = strip0x(body.data);
    } else {
      return { error: 'no function_selector or data' };
    }
    const value: Record<string, unknown> = { data, owner_address: owner, contract_address: contract };
    const callValue = Number(body.call_value ?? 0);
    if (callValue) value.call_value = callValue;
    return { txID: '', raw_data_hex: '', raw_data: { contract: [{ parameter: { value, type_url: 'type.googleapis.com/protocol.TriggerSmartContract' }, type: 'TriggerSmartContract' }], ref_block_bytes: '', ref_block_hash: '', expiration: 0, timestamp: 0, fee_limit: Number(body.fee_limit ?? 0) || undefined } };
  }

  async function refBlock() {
    const n = await latest();
    const b = (await evmBlock(n))!;
    const blockId = blockIdOf(n, b.hash);
    const timestamp = Number(BigInt(b.timestamp)) * 1000;
    return { ref_block_bytes: n.toString(16).padStart(4, '0').slice(-4), ref_block_hash: blockId.slice(16, 32), expiration: timestamp + 60_000, timestamp };
  }

  async function broadcast(tx: TronTxJson): Promise<Record<string, unknown>> {
    // java-tron's failure shape: no `result`, a code and a hex-encoded message
    const fail = (code: string, message: string) => ({ code, txid: tx?.txID, message: hexUtf8(message) });
    if (!tx || typeof tx !== 'object' || !tx.raw_data || typeof tx.raw_data_hex !== 'string' || typeof tx.txID !== 'string') {
      return fail('OTHER_ERROR', 'malformed transaction');
    }
    if (!Array.isArray(tx.signature) || tx.signature.length === 0) return fail('SIGERROR', 'transaction is not signed');
    const txId = strip0x(tx.txID);
    if (createHash('sha256').update(Buffer.from(tx.raw_data_hex, 'hex')).digest('hex') !== txId) {
      return fail('SIGERROR', 'txID is not sha256(raw_data)');
    }
    let rebuilt: string;
    try {
      rebuilt = txPbToRawDataHex(txJsonToPb(tx)).toLowerCase();
    } catch (e) {
      return fail('OTHER_ERROR', `cannot decode raw_data: ${(e as Error).message}`);
    }
    if (rebuilt !== tx.raw_data_hex.toLowerCase()) return fail('OTHER_ERROR', 'raw_data does not match raw_data_hex');
    const contract = tx.raw_data.contract[0];
    if (tx.raw_data.contract.length !== 1 || (contract?.type !== 'TriggerSmartContract' && contract?.type !== 'TransferContract')) {
      return fail('CONTRACT_VALIDATE_ERROR', 'the emulator only executes TriggerSmartContract and TransferContract');
    }
    const value = contract.parameter.value as { owner_address: string; contract_address?: string; to_address?: string; amount?: number; data?: string };
    const owner = evmOf(hexAddr(value.owner_address));
    let signer: string;
    try {
      signer = recoverAddress(`0x${txId}`, Signature.from(`0x${strip0x(tx.signature[0]!)}`));
    } catch {
      return fail('SIGERROR', 'bad signature');
    }
    if (signer !== owner) return fail('SIGERROR', `signature is by ${tronOf(signer)}, not the owner`);
    // like java-tron, expiry is judged against the head block's time, not the wall clock
    const head = (await evmBlock(await latest()))!;
    if (tx.raw_data.expiration <= Number(BigInt(head.timestamp)) * 1000) return fail('TRANSACTION_EXPIRATION_ERROR', 'transaction expired');
    if (hashByTronId.has(txId)) return fail('DUP_TRANSACTION_ERROR', 'duplicate transaction');

    const from = owner.toLowerCase();
    if (!funded.has(from)) {
      await rpc('anvil_setBalance', [from, quantity(10n ** 24n)]);
      funded.add(from);
    }
    const hash = await rpc<string>('eth_sendTransaction', [
      contract.type === 'TransferContract'
        ? { from, to: evmOf(hexAddr(value.to_address)), value: quantity(BigInt(value.amount ?? 0) * WEI_PER_SUN), gas: quantity(21_000n) }
        : { from, to: evmOf(hexAddr(value.contract_address)), data: `0x${strip0x(value.data ?? '')}`, gas: quantity(GAS_LIMIT) },
    ]);
    tronIdByHash.set(hash.toLowerCase(), txId);
    hashByTronId.set(txId, hash.toLowerCase());
    signedById.set(txId, { ...tx, visible: false });
    // With automine the block exists by the time a test reads the head (on a busy machine anvil's
    // receipt can trail the hash it answered with); with automine off the tx stays pending.
    for (let waited = 0; automine && waited < 5000; waited += 20) {
      if (await rpc<RpcReceipt | null>('eth_getTransactionReceipt', [hash])) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    return { result: true, txid: txId };
  }

  async function route(path: string, body: Record<string, unknown>): Promise<unknown> {
    const num = () => {
      const v = body.num ?? body.id_or_num;
      if (v === undefined || v === null || v === '' || !/^\d+$/.test(String(v))) throw new Error(`invalid num: ${String(v)}`);
      return BigInt(String(v));
    };
    switch (path) {
      case '/wallet/getnowblock':
        return tronBlock(await latest());
      case '/walletsolidity/getnowblock':
        return tronBlock(await solidHead());
      case '/wallet/getblock': {
        const detail = body.detail === true || body.detail === 'true';
        const n = body.id_or_num !== undefined ? num() : await latest();
        return tronBlock(n, detail);
      }
      case '/wallet/getblockbynum':
        return tronBlock(num());
      case '/walletsolidity/getblockbynum': {
        const n = num();
        return n <= (await solidHead()) ? tronBlock(n) : {};
      }
      case '/wallet/gettransactioninfobyblocknum':
        return infosOfBlock(num());
      case '/walletsolidity/gettransactioninfobyblocknum': {
        const n = num();
        return n <= (await solidHead()) ? infosOfBlock(n) : [];
      }
      case '/wallet/gettransactioninfobyid': {
        const hash = hashByTronId.get(strip0x(String(body.value ?? ''))) ?? `0x${strip0x(String(body.value ?? ''))}`;
        const r = await rpc<RpcReceipt | null>('eth_getTransactionReceipt', [hash]);
        if (!r) return {};
        const b = (await evmBlock(BigInt(r.blockNumber)))!;
        return txInfo(r, Number(BigInt(b.timestamp)) * 1000);
      }
      case '/wallet/gettransactionbyid':
        return signedById.get(strip0x(String(body.value ?? ''))) ?? {};
      case '/wallet/triggersmartcontract': {
        const built = buildTrigger(body);
        if ('error' in built) return { result: { code: 'CONTRACT_VALIDATE_ERROR', message: hexUtf8(built.error) } };
        Object.assign(built.raw_data, await refBlock());
        if (built.raw_data.fee_limit === undefined) delete built.raw_data.fee_limit;
        const pb = txJsonToPb(built);
        built.txID = strip0x(txPbToTxID(pb));
        built.raw_data_hex = txPbToRawDataHex(pb).toLowerCase();
        return { result: { result: true }, transaction: { visible: false, ...built } };
      }
      case '/wallet/triggerconstantcontract': {
        const built = buildTrigger(body);
        if ('error' in built) return { result: { code: 'CONTRACT_VALIDATE_ERROR', message: hexUtf8(built.error) } };
        const value = built.raw_data.contract[0]!.parameter.value as { owner_address: string; contract_address: string; data: string };
        try {
          const out = await rpc<string>('eth_call', [{ from: evmOf(value.owner_address), to: evmOf(value.contract_address), data: `0x${value.data}` }, 'latest']);
          return { result: { result: true }, energy_used: 0, constant_result: [strip0x(out)], transaction: built };
        } catch (e) {
          return { result: { code: 'CONTRACT_EXE_ERROR', message: hexUtf8((e as Error).message) } };
        }
      }
      case '/wallet/getaccount':
      case '/walletsolidity/getaccount': {
        // java-tron answers {} for an account it has never seen; a TRX balance is the anvil balance in sun
        const address = hexAddr(body.address);
        const wei = BigInt(await rpc<string>('eth_getBalance', [evmOf(address), 'latest']));
        return wei === 0n ? {} : { address, balance: Number(wei / WEI_PER_SUN) };
      }
      case '/wallet/broadcasttransaction':
        return broadcast(body as unknown as TronTxJson);
      default:
        return undefined;
    }
  }

  async function readBody(req: IncomingMessage): Promise<string> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const path = url.pathname.replace(/\/+$/, '').toLowerCase();
    const fault = faults.find((f) => f.count > 0 && (!f.pathIncludes || path.includes(f.pathIncludes)));
    if (fault) {
      fault.count--;
      if (fault.delayMs) await new Promise((r) => setTimeout(r, fault.delayMs));
      if (res.destroyed) return;
      res.writeHead(fault.status ?? 503, { 'content-type': 'application/json' });
      res.end(fault.body ?? 'emulated fault');
      return;
    }
    requests.push(path);
    let body: Record<string, unknown> = Object.fromEntries(url.searchParams);
    const text = await readBody(req);
    if (text.trim()) {
      try {
        body = { ...body, ...(JSON.parse(text) as Record<string, unknown>) };
      } catch {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ Error: 'class org.json.JSONException : malformed JSON' }));
        return;
      }
    }
    try {
      const out = await route(path, body);
      if (out === undefined) {
        res.writeHead(404, { 'content-type': 'text/plain' });
        res.end(`no such endpoint in the TRON emulator: ${path}`);
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(out));
    } catch (e) {
      // java-tron reports servlet errors as 200 + {"Error": "..."}
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ Error: `class java.lang.Exception : ${(e as Error).message}` }));
    }
  }

  const server: Server = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  const emulator: TronEmulator = {
    url: `http://127.0.0.1:${port}`,
    anvilUrl: anvil.rpcUrl,
    solidityLag: opts.solidityLag ?? 19,
    requests,

    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await anvil.stop();
    },

    async deployToken({ name = 'Tether USD', symbol = 'USDT', decimals = 6 } = {}) {
      const data = tokenArtifact.bytecode + strip0x(tokenIface.encodeDeploy([name, symbol, decimals]));
      const r = await sendEvm({ from: operator!, data });
      if (r.status !== '0x1' || !r.contractAddress) throw new Error('token deployment failed');
      return tronOf(r.contractAddress);
    },

    async deployContract({ source, contractName, args = [] }) {
      const c = compileContract({ source, fileName: `${contractName}.sol`, contractName });
      const iface = new Interface(c.abi as never);
      const r = await sendEvm({ from: operator!, data: c.bytecode + strip0x(iface.encodeDeploy(args)) });
      if (r.status !== '0x1' || !r.contractAddress) throw new Error(`${contractName} deployment failed`);
      return { address: tronOf(r.contractAddress), abi: iface };
    },

    async mint(token, to, amount) {
      const r = await sendEvm({ from: operator!, to: evmOf(token), data: tokenIface.encodeFunctionData('mint', [evmOf(to), amount]) });
      return { txId: txIdOf(r.transactionHash), blockNumber: BigInt(r.blockNumber), evmHash: r.transactionHash, success: r.status === '0x1' };
    },

    async balanceOf(token, owner) {
      const out = await rpc<string>('eth_call', [{ to: evmOf(token), data: tokenIface.encodeFunctionData('balanceOf', [evmOf(owner)]) }, 'latest']);
      return BigInt(out);
    },

    async mine(n = 1) {
      await rpc('anvil_mine', [quantity(n)]);
      return latest();
    },

    latestBlock: latest,

    async setAutomine(on) {
      await rpc('evm_setAutomine', [on]);
      automine = on;
    },

    injectFault(fault) {
      faults.push({ ...fault });
    },

    pendingFaults() {
      return faults.reduce((sum, f) => sum + f.count, 0);
    },

    async getTx(txId) {
      const hash = hashByTronId.get(strip0x(txId));
      if (!hash) return null;
      const r = await rpc<RpcReceipt | null>('eth_getTransactionReceipt', [hash]);
      if (!r) return null;
      return { txId: strip0x(txId), blockNumber: BigInt(r.blockNumber), evmHash: hash, success: r.status === '0x1' };
    },
  };
  return emulator;
}
