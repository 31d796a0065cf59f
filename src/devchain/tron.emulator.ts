/**
 * Loopback emulator of the java-tron HTTP API whose contract execution runs on anvil: no TRON node can
 * run on these machines, and a TRON address's 20-byte body is an EVM address, so TRC-20 calls replay on
 * anvil from that body. The endpoints served, blocks and re-orgs, what a broadcast checks, the optional
 * resource model (energy, bandwidth, Stake 2.0) and what is not modelled:
 * docs/watchers.md "Local chains and harnesses → TRON emulator".
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
  /**
   * Model TRON's resources (see the header): accounts exist only once they received TRX, every
   * transaction pays bandwidth and TRC-20 calls pay energy (staked/delegated, else burnt TRX), and
   * nobody is given TRX for fees. Off (default): fees are 0 and senders are topped up, as before.
   * Needs automine (the default): fees are settled from each transaction's receipt at broadcast.
   */
  resources?: boolean;
  /** Chain parameters of the resource model (defaults: mainnet values of 2025). */
  energyFee?: number;
  transactionFee?: number;
  freeNetLimit?: number;
  /** TRX staked for energy network-wide besides the emulator's own stakes (sets energy per staked TRX). */
  totalEnergyWeight?: number;
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
  /** Sets an account's TRX balance (sun) and activates it, like a faucet payment would. */
  setTrx(address: string, sun: bigint): Promise<void>;
  trxBalance(address: string): Promise<bigint>;
  /** Whether the account exists (received TRX at least once). */
  accountExists(address: string): Promise<boolean>;
  /** Moves the chain clock forward by `seconds` and mines a block (expires signed transactions). */
  advanceTime(seconds: number): Promise<bigint>;
  /** Marks the chain as it is now (anvil snapshot + the emulator's state); see the header on re-orgs. */
  snapshot(): Promise<string>;
  /** A re-org: drops every block after `snapshot` (used once), with its transactions and their effects. */
  revert(snapshot: string): Promise<void>;
  readonly resources: boolean;
}

/** Fees and resources charged to one transaction (resource model), as gettransactioninfobyid reports them. */
interface TxCharge {
  fee: number;
  netUsage: number;
  netFee: number;
  energyUsage: number;
  energyFee: number;
  energyTotal: number;
  /** Receipt result other than SUCCESS (java-tron's contractResult name). */
  failure?: 'OUT_OF_ENERGY' | 'REVERT';
  system: boolean;
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
const SUPPORTED_CONTRACTS = new Set([
  'TriggerSmartContract',
  'TransferContract',
  'FreezeBalanceV2Contract',
  'DelegateResourceContract',
  'UnDelegateResourceContract',
]);
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
  const modelled = opts.resources === true;
  // With resources modelled, anvil burns nothing for gas (base fee 0, gas price 0), so an account's
  // anvil balance is exactly its TRX balance and every fee is charged here, in TRON terms.
  const anvil: AnvilInstance = await startAnvil({
    chainId: 31_728,
    blockTime: opts.blockTime,
    extraArgs: ['--auto-impersonate'],
    ...(modelled ? { baseFee: 0 } : {}),
  });
  const params = {
    energyFee: BigInt(opts.energyFee ?? 100),
    transactionFee: BigInt(opts.transactionFee ?? 1000),
    freeNetLimit: BigInt(opts.freeNetLimit ?? 600),
    createAccountFee: 100_000n,
    createNewAccountFeeInSystemContract: 1_000_000n,
    totalEnergyLimit: 180_000_000_000n,
    baseEnergyWeight: BigInt(opts.totalEnergyWeight ?? 18_000_000_000),
  };
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
  // --- resource model state (keys: lowercase 0x EVM address of the account body)
  const activated = new Set<string>();
  const frozenEnergy = new Map<string, bigint>();
  const delegations = new Map<string, bigint>(); // `${from}>${to}` → sun
  const energyUsed = new Map<string, bigint>();
  const freeNetUsed = new Map<string, bigint>();
  const charges = new Map<string, TxCharge>();
  const sumMap = (m: Map<string, bigint>, pred: (k: string) => boolean) => [...m].reduce((acc, [k, v]) => (pred(k) ? acc + v : acc), 0n);
  const delegatedOut = (a: string) => sumMap(delegations, (k) => k.startsWith(`${a}>`));
  const delegatedIn = (a: string) => sumMap(delegations, (k) => k.endsWith(`>${a}`));
  const totalEnergyWeight = () => params.baseEnergyWeight + sumMap(frozenEnergy, () => true) / 1_000_000n;
  const energyLimit = (a: string) =>
    (((frozenEnergy.get(a) ?? 0n) - delegatedOut(a) + delegatedIn(a)) * params.totalEnergyLimit) / (totalEnergyWeight() * 1_000_000n);
  const energyLeft = (a: string) => {
    const left = energyLimit(a) - (energyUsed.get(a) ?? 0n);
    return left > 0n ? left : 0n;
  };
  const freeNetLeft = (a: string) => params.freeNetLimit - (freeNetUsed.get(a) ?? 0n);
  const sunOf = async (a: string) => BigInt(await rpc<string>('eth_getBalance', [a, 'latest'])) / WEI_PER_SUN;
  const setSun = (a: string, sun: bigint) => rpc('anvil_setBalance', [a, quantity(sun * WEI_PER_SUN)]);
  const exists = async (a: string) => activated.has(a) || (!modelled && (await sunOf(a)) > 0n);
  const faults: Fault[] = [];
  const requests: string[] = [];
  /** The emulator's own state at each anvil snapshot (restored with it by `revert`). */
  const saved = new Map<string, { head: bigint; state: Map<string, unknown>[]; sets: Set<string>[] }>();
  const stateMaps = (): Map<string, unknown>[] => [tronIdByHash, hashByTronId, signedById, frozenEnergy, delegations, energyUsed, freeNetUsed, charges];
  const stateSets = () => [funded, activated];

  const txIdOf = (evmHash: string) => tronIdByHash.get(evmHash.toLowerCase()) ?? strip0x(evmHash);

  async function sendEvm(tx: { from: string; to?: string; data: string }): Promise<RpcReceipt> {
    const from = tx.from.toLowerCase();
    if (!funded.has(from) && !modelled) {
      // gas is not modelled: any impersonated sender gets enough ETH for every call it will make
      await rpc('anvil_setBalance', [from, quantity(10n ** 24n)]);
      funded.add(from);
    }
    const hash = await rpc<string>('eth_sendTransaction', [{ ...tx, gas: quantity(GAS_LIMIT), ...(modelled ? { gasPrice: '0x0' } : {}) }]);
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
    const c = charges.get(info.id as string);
    if (c) {
      // java-tron's shape: system contracts have only bandwidth in the receipt and no contract fields
      const receipt: Record<string, unknown> = { net_usage: c.netUsage || undefined, net_fee: c.netFee || undefined };
      if (!c.system) {
        Object.assign(receipt, {
          energy_usage: c.energyUsage || undefined,
          energy_fee: c.energyFee || undefined,
          energy_usage_total: c.energyTotal || undefined,
          result: c.failure ?? 'SUCCESS',
        });
      } else {
        delete info.contractResult;
        delete info.contract_address;
      }
      info.receipt = JSON.parse(JSON.stringify(receipt));
      info.fee = c.fee || undefined;
      if (info.fee === undefined) delete info.fee;
      if (c.failure === 'OUT_OF_ENERGY') {
        info.result = 'FAILED';
        info.resMessage = hexUtf8("Not enough energy for 'SSTORE' operation executing");
        delete info.log;
      }
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

  /** Lowercase 0x EVM address of a request's address field (the resource model's key). */
  const acct = (v: unknown) => evmOf(hexAddr(v)).toLowerCase();

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
    return {
      txID: '',
      raw_data_hex: '',
      raw_data: {
        contract: [{ parameter: { value, type_url: 'type.googleapis.com/protocol.TriggerSmartContract' }, type: 'TriggerSmartContract' }],
        ref_block_bytes: '',
        ref_block_hash: '',
        expiration: 0,
        timestamp: 0,
        fee_limit: Number(body.fee_limit ?? 0) || undefined,
      },
    };
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
    if (tx.raw_data.contract.length !== 1 || !contract || !SUPPORTED_CONTRACTS.has(contract.type)) {
      return fail('CONTRACT_VALIDATE_ERROR', `the emulator only executes ${[...SUPPORTED_CONTRACTS].join(', ')}`);
    }
    const type = contract.type;
    const value = contract.parameter.value as {
      owner_address: string;
      contract_address?: string;
      to_address?: string;
      receiver_address?: string;
      amount?: number;
      balance?: number;
      frozen_balance?: number;
      resource?: string;
      data?: string;
    };
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
    if (!funded.has(from) && !modelled) {
      await rpc('anvil_setBalance', [from, quantity(10n ** 24n)]);
      funded.add(from);
    }
    const validate = (msg: string) => fail('CONTRACT_VALIDATE_ERROR', `Validate ${type} error, ${msg}`);
    if (modelled && !(await exists(from))) return validate(`account [${tronOf(from)}] does not exist`);
    const to = value.to_address ?? value.receiver_address;
    const target = to !== undefined ? evmOf(hexAddr(to)).toLowerCase() : null;

    // --- bandwidth (java-tron: raw data + signatures + a 64-byte result allowance)
    const bytes = BigInt(tx.raw_data_hex.length / 2) + 65n * BigInt(tx.signature.length) + 64n;
    const balance = await sunOf(from);
    let netFee = 0n;
    let netUsage = 0n;
    let systemFee = 0n;
    const creates = type === 'TransferContract' && target !== null && !(await exists(target));
    if (modelled) {
      if (creates) {
        // creating an account cannot use free bandwidth: 0.1 TRX for it, plus 1 TRX to the system
        netFee = params.createAccountFee;
        systemFee = params.createNewAccountFeeInSystemContract;
      } else if (freeNetLeft(from) >= bytes) {
        netUsage = bytes;
      } else {
        netFee = bytes * params.transactionFee;
      }
      if (balance < netFee + systemFee) return fail('BANDWITH_ERROR', 'Account resource insufficient error.');
    }
    const spendable = modelled ? balance - netFee - systemFee : balance;

    // --- contract validation (java-tron's actuators, the parts the emulator models)
    const amount = BigInt(value.amount ?? value.balance ?? value.frozen_balance ?? 0);
    let evmTx: { from: string; to: string; value?: string; data?: string; gas: string };
    switch (type) {
      case 'TransferContract':
        if (amount <= 0n) return validate('amount must be greater than 0');
        if (target === from) return validate('Cannot transfer TRX to yourself.');
        if (spendable < amount) return validate('balance is not sufficient.');
        evmTx = { from, to: target!, value: quantity(amount * WEI_PER_SUN), gas: quantity(21_000n) };
        break;
      case 'FreezeBalanceV2Contract':
        if (value.resource !== 'ENERGY') return validate('only ENERGY stakes are modelled by the emulator');
        if (amount < 1_000_000n) return validate('frozenBalance must be greater than or equal to 1 TRX');
        if (spendable < amount) return validate('frozenBalance must be less than or equal to accountBalance');
        evmTx = { from, to: from, gas: quantity(21_000n) };
        break;
      case 'DelegateResourceContract':
        if (value.resource !== 'ENERGY') return validate('only ENERGY delegation is modelled by the emulator');
        if (amount < 1_000_000n) return validate('delegateBalance must be greater than or equal to 1 TRX');
        if (target === from) return validate('receiverAddress must not be the same as ownerAddress');
        if (!(await exists(target!))) return validate(`Account [${tronOf(target!)}] does not exist`);
        if ((frozenEnergy.get(from) ?? 0n) - delegatedOut(from) < amount)
          return validate('delegateBalance must be less than or equal to available FreezeEnergyV2 balance');
        evmTx = { from, to: from, gas: quantity(21_000n) };
        break;
      case 'UnDelegateResourceContract':
        if (value.resource !== 'ENERGY') return validate('only ENERGY delegation is modelled by the emulator');
        if (amount <= 0n || (delegations.get(`${from}>${target}`) ?? 0n) < amount) return validate('insufficient delegatedFrozenBalance(Energy)');
        evmTx = { from, to: from, gas: quantity(21_000n) };
        break;
      default: {
        // TriggerSmartContract: the energy limit is what the account has plus what fee_limit lets it burn
        let gas = GAS_LIMIT;
        if (modelled) {
          const feeLimit = BigInt(tx.raw_data.fee_limit ?? 0);
          const burnable = (spendable < feeLimit ? spendable : feeLimit) / params.energyFee;
          // anvil refuses a gas limit below the intrinsic cost; java-tron would include the tx and fail it
          const data = Buffer.from(strip0x(value.data ?? ''), 'hex');
          // (standard calldata cost, or the EIP-7623 floor of 10 gas per token when that is higher)
          const tokens = BigInt(data.reduce((t, b) => t + (b === 0 ? 1 : 4), 0));
          const intrinsic = 21_000n + (tokens * 10n > tokens * 4n ? tokens * 10n : tokens * 4n);
          const budget = 21_000n + energyLeft(from) + burnable;
          gas = budget < intrinsic ? intrinsic : budget < GAS_LIMIT ? budget : GAS_LIMIT;
        }
        evmTx = { from, to: evmOf(hexAddr(value.contract_address)), data: `0x${strip0x(value.data ?? '')}`, gas: quantity(gas) };
      }
    }

    let hash: string;
    try {
      hash = await rpc<string>('eth_sendTransaction', [{ ...evmTx, ...(modelled ? { gasPrice: '0x0' } : {}) }]);
    } catch (e) {
      // e.g. a gas budget below the call's intrinsic cost: java-tron refuses such a tx up front
      return fail('CONTRACT_VALIDATE_ERROR', (e as Error).message);
    }
    tronIdByHash.set(hash.toLowerCase(), txId);
    hashByTronId.set(txId, hash.toLowerCase());
    signedById.set(txId, { ...tx, visible: false });
    // With automine the block exists by the time a test reads the head (on a busy machine anvil's
    // receipt can trail the hash it answered with); with automine off the tx stays pending.
    let receipt: RpcReceipt | null = null;
    for (let waited = 0; automine && waited < 5000; waited += 20) {
      receipt = await rpc<RpcReceipt | null>('eth_getTransactionReceipt', [hash]);
      if (receipt) break;
      await new Promise((r) => setTimeout(r, 20));
    }

    // --- state changes of the system contracts (both modes), then fees (resource model)
    if (type === 'TransferContract') activated.add(target!);
    if (type === 'FreezeBalanceV2Contract') frozenEnergy.set(from, (frozenEnergy.get(from) ?? 0n) + amount);
    if (type === 'DelegateResourceContract') delegations.set(`${from}>${target}`, (delegations.get(`${from}>${target}`) ?? 0n) + amount);
    if (type === 'UnDelegateResourceContract') {
      const left = delegations.get(`${from}>${target}`)! - amount;
      if (left > 0n) delegations.set(`${from}>${target}`, left);
      else delegations.delete(`${from}>${target}`);
    }
    if (modelled) {
      if (!receipt) throw new Error('the resource model needs automine: settle fees from the receipt');
      let energyFee = 0n;
      let energyUsage = 0n;
      let energyTotal = 0n;
      let failure: TxCharge['failure'];
      if (type === 'TriggerSmartContract') {
        const gasUsed = BigInt(receipt.gasUsed);
        energyTotal = gasUsed > 21_000n ? gasUsed - 21_000n : 0n;
        const own = energyLeft(from);
        energyUsage = own < energyTotal ? own : energyTotal;
        // never more than the fee limit and the balance allow (java-tron's energy limit of the call)
        const feeLimit = BigInt(tx.raw_data.fee_limit ?? 0);
        const cap = (spendable < feeLimit ? spendable : feeLimit) / params.energyFee;
        const burnt = energyTotal - energyUsage < cap ? energyTotal - energyUsage : cap;
        energyTotal = energyUsage + burnt;
        energyFee = burnt * params.energyFee;
        energyUsed.set(from, (energyUsed.get(from) ?? 0n) + energyUsage);
        if (receipt.status !== '0x1') failure = gasUsed >= BigInt(evmTx.gas) ? 'OUT_OF_ENERGY' : 'REVERT';
      }
      if (netUsage > 0n) freeNetUsed.set(from, (freeNetUsed.get(from) ?? 0n) + netUsage);
      const fee = netFee + systemFee + energyFee;
      const debit = fee + (type === 'FreezeBalanceV2Contract' ? amount : 0n);
      if (debit > 0n) await setSun(from, (await sunOf(from)) - debit);
      charges.set(txId, {
        fee: Number(fee),
        netUsage: Number(netUsage),
        netFee: Number(netFee),
        energyUsage: Number(energyUsage),
        energyFee: Number(energyFee),
        energyTotal: Number(energyTotal),
        failure,
        system: type !== 'TriggerSmartContract',
      });
    } else if (type === 'FreezeBalanceV2Contract') {
      await setSun(from, (await sunOf(from)) - amount);
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
          const call = { from: evmOf(value.owner_address), to: evmOf(value.contract_address), data: `0x${value.data}` };
          const out = await rpc<string>('eth_call', [call, 'latest']);
          // energy model: execution gas beyond the 21,000 intrinsic (an upper bound of what the call uses)
          const gas = BigInt(await rpc<string>('eth_estimateGas', [{ ...call, ...(modelled ? { gasPrice: '0x0' } : {}) }, 'latest']));
          return { result: { result: true }, energy_used: Number(gas > 21_000n ? gas - 21_000n : 0n), constant_result: [strip0x(out)], transaction: built };
        } catch (e) {
          return { result: { code: 'CONTRACT_EXE_ERROR', message: hexUtf8((e as Error).message) } };
        }
      }
      case '/wallet/getaccount':
      case '/walletsolidity/getaccount': {
        // java-tron answers {} for an account it has never seen; a TRX balance is the anvil balance in sun
        const address = hexAddr(body.address);
        const a = acct(address);
        if (!(await exists(a))) return {};
        const out: Record<string, unknown> = { address, balance: Number(await sunOf(a)) };
        const frozen = frozenEnergy.get(a) ?? 0n;
        if (frozen > 0n) out.frozenV2 = [{}, { type: 'ENERGY', amount: Number(frozen) }, { type: 'TRON_POWER' }];
        const resource: Record<string, unknown> = {};
        if (delegatedOut(a) > 0n) resource.delegated_frozenV2_balance_for_energy = Number(delegatedOut(a));
        if (delegatedIn(a) > 0n) resource.acquired_delegated_frozenV2_balance_for_energy = Number(delegatedIn(a));
        if (energyUsed.has(a)) resource.energy_usage = Number(energyUsed.get(a));
        if (Object.keys(resource).length) out.account_resource = resource;
        if (freeNetUsed.has(a)) out.free_net_usage = Number(freeNetUsed.get(a));
        return out;
      }
      case '/wallet/getaccountresource': {
        // proto3 JSON: zero fields are omitted
        const a = acct(hexAddr(body.address));
        const out: Record<string, unknown> = {
          TotalEnergyLimit: Number(params.totalEnergyLimit),
          TotalEnergyWeight: Number(totalEnergyWeight()),
          TotalNetLimit: 43_200_000_000,
          TotalNetWeight: 26_000_000_000,
        };
        if (await exists(a)) {
          out.freeNetLimit = Number(params.freeNetLimit);
          if (freeNetUsed.has(a)) out.freeNetUsed = Number(freeNetUsed.get(a));
          if (energyLimit(a) > 0n) out.EnergyLimit = Number(energyLimit(a));
          if (energyUsed.has(a)) out.EnergyUsed = Number(energyUsed.get(a));
        }
        return out;
      }
      case '/wallet/getchainparameters':
        return {
          chainParameter: [
            { key: 'getCreateAccountFee', value: Number(params.createAccountFee) },
            { key: 'getTransactionFee', value: Number(params.transactionFee) },
            { key: 'getEnergyFee', value: Number(params.energyFee) },
            { key: 'getCreateNewAccountFeeInSystemContract', value: Number(params.createNewAccountFeeInSystemContract) },
            { key: 'getFreeNetLimit', value: Number(params.freeNetLimit) },
            { key: 'getTotalEnergyCurrentLimit', value: Number(params.totalEnergyLimit) },
            { key: 'getAllowDelegateResource', value: 1 },
            { key: 'getUnfreezeDelayDays', value: 14 },
          ],
        };
      case '/wallet/getdelegatedresourcev2': {
        const f = acct(hexAddr(body.fromAddress));
        const t = acct(hexAddr(body.toAddress));
        const amount = delegations.get(`${f}>${t}`);
        return amount ? { delegatedResource: [{ from: hex41Of(f), to: hex41Of(t), frozen_balance_for_energy: Number(amount) }] } : {};
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
      if (modelled && !on) throw new Error('the resource model settles fees at broadcast and needs automine');
      await rpc('evm_setAutomine', [on]);
      automine = on;
    },

    injectFault(fault) {
      faults.push({ ...fault });
    },

    pendingFaults() {
      return faults.reduce((sum, f) => sum + f.count, 0);
    },

    resources: modelled,

    async setTrx(address, sun) {
      const a = evmOf(address).toLowerCase();
      await setSun(a, sun);
      activated.add(a);
    },

    async trxBalance(address) {
      return sunOf(evmOf(address).toLowerCase());
    },

    async accountExists(address) {
      return exists(evmOf(address).toLowerCase());
    },

    async advanceTime(seconds) {
      await rpc('evm_increaseTime', [quantity(seconds)]);
      await rpc('anvil_mine', [quantity(1)]);
      return latest();
    },

    async snapshot() {
      const id = await rpc<string>('evm_snapshot');
      saved.set(id, { head: await latest(), state: stateMaps().map((m) => new Map(m)), sets: stateSets().map((x) => new Set(x)) });
      return id;
    },

    async revert(id) {
      const mark = saved.get(id);
      if (!mark) throw new Error(`no snapshot ${id} (each can be reverted to once)`);
      if (mark.head < (await solidHead())) throw new Error(`snapshot ${id} is below the solidified head: solidified blocks are never reverted`);
      if (!(await rpc<boolean>('evm_revert', [id]))) throw new Error(`anvil refused to revert to ${id}`);
      saved.delete(id);
      stateMaps().forEach((m, i) => {
        m.clear();
        for (const [k, v] of mark.state[i]!) m.set(k, v);
      });
      stateSets().forEach((x, i) => {
        x.clear();
        for (const v of mark.sets[i]!) x.add(v);
      });
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
