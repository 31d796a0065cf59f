import { AbiCoder } from 'ethers';
import { TronWeb } from 'tronweb';
import { signTransaction } from 'tronweb/utils';

import {
  isNativeIntent,
  TxRejectedError,
  type GasNeed,
  type SignedTx,
  type SignOptions,
  type SweepCapability,
  type TransferIntent,
  type TxState,
} from '../chain-adapter.js';
import { toTronBase58, tronAddressBody } from './tron.address.js';
import { TronBadResponse, type TronHttpClient } from './tron.client.js';

/**
 * TRON sweeps (`gas: 'topup'`), built and signed offline with tronweb (`blockHeader` given, so
 * tronweb never calls the node) and broadcast over the adapter's failover client.
 *
 * Fees on TRON are resources: a TRC-20 `transfer` consumes ENERGY (contract execution) and
 * BANDWIDTH (transaction bytes). The sender pays energy from what it has (staked by itself or
 * delegated to it), and burns TRX at `getEnergyFee` sun per missing unit; bandwidth comes from the
 * account's free daily allowance (`getFreeNetLimit`), else burns `getTransactionFee` sun per byte.
 * An account that never received TRX does not exist: it cannot be delegated to, has no free
 * bandwidth and cannot send at all. So, per deposit, the gas tank:
 *  1. activates it with a TRX transfer when it does not exist (the tank pays the creation fee);
 *  2. delegates enough ENERGY from its Stake 2.0 stake (`freezebalancev2`, done once by the
 *     operator) for one transfer, or, when its free stake is short, sends the TRX the transfer burns;
 *  3. after the sweep is confirmed, takes the energy back (`undelegateresource`, `signReclaim`).
 *
 * Endpoints (all POST, `visible: false`): `/wallet/getnowblock` (reference block + expiration),
 * `/wallet/getaccount`, `/wallet/getaccountresource`, `/wallet/getchainparameters`,
 * `/wallet/triggerconstantcontract` (energy estimate), `/wallet/getdelegatedresourcev2`,
 * `/wallet/broadcasttransaction`, `/wallet/gettransactioninfobyid`, `/wallet/gettransactionbyid`,
 * `/wallet/getblockbynum`.
 */

export interface TronSweepOptions {
  /** Lifetime of a signed transaction (TRON allows up to 24 h; default 120 s after the head block). */
  txExpirationMs?: number;
  /** `fee_limit` of a sweep transfer, in sun: the most TRX it may burn for energy (default 50 TRX). */
  feeLimitSun?: bigint;
  /** Percent added to the energy estimate when delegating, and to a TRX top-up (contract state may change; default 20). */
  energyMarginPercent?: number;
}

/** What one TRC-20 transfer needs, and what it costs with and without delegated energy. */
export interface TronTransferQuote {
  /** Energy the transfer needs (node estimate of the call, without margin). */
  energy: bigint;
  /** Bytes of the signed transaction, as java-tron charges bandwidth (raw data + signature + result). */
  bandwidth: bigint;
  /** Sun per energy unit and per byte (chain parameters). */
  energyPrice: bigint;
  bandwidthPrice: bigint;
  /** Energy the sender has available now (own stake + delegated to it, minus used). */
  energyAvailable: bigint;
  /** Bandwidth the sender has available now (free allowance + staked, minus used); 0 when it does not exist. */
  bandwidthAvailable: bigint;
  /** Sun burnt if the sender had no energy at all (energy × price + bandwidth shortfall × price). */
  burnWithoutEnergy: bigint;
  /** Sun burnt with the energy the sender has now (0 once enough energy is delegated and bandwidth is free). */
  burnNow: bigint;
  /** Whether the sender account exists (received TRX at least once). */
  exists: boolean;
  /** Sun the tank pays to create the sender's account (0 when it exists): the creation fee and its bandwidth. */
  activation: bigint;
}

interface ChainParams {
  energyFee: bigint;
  transactionFee: bigint;
  /** Sun a transfer creating an account pays: `getCreateNewAccountFeeInSystemContract` + `getCreateAccountFee` (its bandwidth). */
  activationFee: bigint;
}

interface AccountResource {
  freeNetLimit: bigint;
  freeNetUsed: bigint;
  netLimit: bigint;
  netUsed: bigint;
  energyLimit: bigint;
  energyUsed: bigint;
  totalEnergyLimit: bigint;
  totalEnergyWeight: bigint;
}

interface TronTx {
  txID: string;
  raw_data: { expiration: number; [k: string]: unknown };
  raw_data_hex: string;
  signature?: string[];
  [k: string]: unknown;
}

/** java-tron adds this to each transaction's size when charging bandwidth (MAX_RESULT_SIZE_IN_TX). */
const RESULT_SIZE = 64n;
const SIGNATURE_SIZE = 65n;
const SUN_PER_TRX = 1_000_000n;
/** What activation sends when the tank delegates energy (anything above 0 creates the account). */
const ACTIVATION_SUN = 1n;

const obj = (json: unknown, what: string): Record<string, unknown> => {
  if (!json || typeof json !== 'object' || Array.isArray(json)) throw new TronBadResponse(`${what} is not an object`);
  return json as Record<string, unknown>;
};
const big = (v: unknown): bigint => (typeof v === 'number' || (typeof v === 'string' && /^\d+$/.test(v)) ? BigInt(v) : 0n);
const hex41 = (address: string): string => {
  const b58 = toTronBase58(address);
  if (!b58) throw new Error(`not a TRON address: ${address}`);
  return TronWeb.address.toHex(b58).toLowerCase();
};
const keyHex = (key: Uint8Array): string => Buffer.from(key).toString('hex');
const decodeMessage = (m: unknown): string => {
  if (typeof m !== 'string') return '';
  return /^[0-9a-fA-F]+$/.test(m) && m.length % 2 === 0 ? Buffer.from(m, 'hex').toString('utf8') : m;
};
const ceilDiv = (a: bigint, b: bigint): bigint => (a + b - 1n) / b;

export interface TankStake {
  /** Sun staked for ENERGY and not delegated yet. */
  delegatableSun: bigint;
  /** Energy one staked TRX gives at the network's current weight (TotalEnergyLimit / TotalEnergyWeight). */
  energyPerTrx: number;
  totalEnergyLimit: bigint;
  totalEnergyWeight: bigint;
}

export interface TronSweeps extends SweepCapability {
  /** The full resource picture of one transfer (what `quoteTransferFee` reduces to one number). */
  quoteTransfer(intent: TransferIntent): Promise<TronTransferQuote>;
  /** Operator: stakes `sun` of the tank's TRX for ENERGY (Stake 2.0 `freezebalancev2`). */
  signStake(tankKey: Uint8Array, sun: bigint, options?: SignOptions): Promise<SignedTx>;
  /** After confirmed sweeps: undelegates what the tank still lends each address (read from the chain). */
  signReclaim(tankKey: Uint8Array, addresses: string[], options?: SignOptions): Promise<SignedTx[]>;
  /** Sun of stake the tank still has free to delegate for ENERGY, and the energy that stake gives. */
  tankStake(tank: string): Promise<TankStake>;
}

export function createTronSweeps(client: TronHttpClient, fullHost: string, opts: TronSweepOptions = {}): TronSweeps {
  const expirationMs = opts.txExpirationMs ?? 120_000;
  const feeLimit = opts.feeLimitSun ?? 50n * SUN_PER_TRX;
  const margin = BigInt(opts.energyMarginPercent ?? 20);
  // Only the transaction builder is used, always with a block header: it never calls `fullHost`.
  const tronWeb = new TronWeb({ fullHost });

  async function blockHeader() {
    const b = await client.post('/wallet/getnowblock', {}, (j) => {
      const o = obj(j, 'block');
      const id = o.blockID;
      const raw = (o.block_header as { raw_data?: { number?: unknown; timestamp?: unknown } } | undefined)?.raw_data;
      if (typeof id !== 'string' || !/^[0-9a-f]{64}$/i.test(id) || typeof raw?.timestamp !== 'number')
        throw new TronBadResponse('head block without id or timestamp');
      return { id: id.toLowerCase(), timestamp: raw.timestamp };
    });
    // TaPoS: the last 2 bytes of the block number and bytes 8..16 of its id (tronweb's getCurrentRefBlockParams)
    return {
      ref_block_bytes: b.id.slice(12, 16),
      ref_block_hash: b.id.slice(16, 32),
      expiration: b.timestamp + expirationMs,
      timestamp: b.timestamp,
    };
  }

  const headTime = () =>
    client.post('/wallet/getnowblock', {}, (j) => {
      const t = (obj(j, 'block').block_header as { raw_data?: { timestamp?: unknown } } | undefined)?.raw_data?.timestamp;
      if (typeof t !== 'number') throw new TronBadResponse('head block without timestamp');
      return BigInt(t);
    });

  const getAccount = (address: string) => client.post('/wallet/getaccount', { address: hex41(address) }, (j) => obj(j, 'account'));

  async function chainParams(): Promise<ChainParams> {
    return client.post('/wallet/getchainparameters', {}, (j) => {
      const list = obj(j, 'chain parameters').chainParameter;
      if (!Array.isArray(list)) throw new TronBadResponse('no chainParameter list');
      const get = (key: string) => big((list as { key?: unknown; value?: unknown }[]).find((p) => p.key === key)?.value);
      return {
        energyFee: get('getEnergyFee'),
        transactionFee: get('getTransactionFee'),
        activationFee: get('getCreateNewAccountFeeInSystemContract') + get('getCreateAccountFee'),
      };
    });
  }

  async function resources(address: string): Promise<AccountResource> {
    return client.post('/wallet/getaccountresource', { address: hex41(address) }, (j) => {
      const o = obj(j, 'account resource');
      return {
        freeNetLimit: big(o.freeNetLimit),
        freeNetUsed: big(o.freeNetUsed),
        netLimit: big(o.NetLimit),
        netUsed: big(o.NetUsed),
        energyLimit: big(o.EnergyLimit),
        energyUsed: big(o.EnergyUsed),
        totalEnergyLimit: big(o.TotalEnergyLimit),
        totalEnergyWeight: big(o.TotalEnergyWeight),
      };
    });
  }

  const transferParams = (intent: TransferIntent) => [
    { type: 'address', value: toTronBase58(intent.to)! },
    { type: 'uint256', value: intent.amount.toString() },
  ];

  async function estimateEnergy(intent: TransferIntent): Promise<bigint> {
    const parameter = AbiCoder.defaultAbiCoder()
      .encode(['address', 'uint256'], [`0x${tronAddressBody(intent.to)}`, intent.amount])
      .slice(2);
    return client.post(
      '/wallet/triggerconstantcontract',
      { owner_address: hex41(intent.from), contract_address: hex41(intent.token.address), function_selector: 'transfer(address,uint256)', parameter },
      (j) => {
        const o = obj(j, 'constant call');
        const r = o.result as { result?: unknown; message?: unknown } | undefined;
        if (r?.result !== true) throw new TxRejectedError('CONTRACT_EXE_ERROR', `transfer would fail: ${decodeMessage(r?.message)}`);
        return big(o.energy_used);
      },
    );
  }

  async function buildTransfer(intent: TransferIntent, header: Awaited<ReturnType<typeof blockHeader>>): Promise<TronTx> {
    const built = await tronWeb.transactionBuilder.triggerSmartContract(
      toTronBase58(intent.token.address)!,
      'transfer(address,uint256)',
      { feeLimit: Number(feeLimit), txLocal: true, blockHeader: header } as never,
      transferParams(intent),
      toTronBase58(intent.from)!,
    );
    return built.transaction as unknown as TronTx;
  }

  async function buildTrxTransfer(intent: TransferIntent, header: Awaited<ReturnType<typeof blockHeader>>): Promise<TronTx> {
    const tx = await tronWeb.transactionBuilder.sendTrx(toTronBase58(intent.to)!, Number(intent.amount), toTronBase58(intent.from)!, {
      blockHeader: header,
    } as never);
    return tx as unknown as TronTx;
  }

  /**
   * Sun a deposit's TRX transfer (a native sweep) burns: its bandwidth when the deposit's free or
   * staked bandwidth cannot cover it, and the creation of the recipient's account when it does not
   * exist yet. No energy: a TransferContract uses none.
   */
  async function quoteTrxTransfer(intent: TransferIntent): Promise<bigint> {
    const [params, res, account, to, header] = await Promise.all([
      chainParams(),
      resources(intent.from),
      getAccount(intent.from),
      getAccount(intent.to),
      blockHeader(),
    ]);
    const bandwidth = txBytes(await buildTrxTransfer({ ...intent, amount: 1n }, header));
    const netLeft = (limit: bigint, used: bigint) => (limit > used ? limit - used : 0n);
    const exists = Object.keys(account).length > 0;
    const covered = exists && (netLeft(res.netLimit, res.netUsed) >= bandwidth || netLeft(res.freeNetLimit, res.freeNetUsed) >= bandwidth);
    return (covered ? 0n : bandwidth * params.transactionFee) + (Object.keys(to).length > 0 ? 0n : params.activationFee);
  }

  const txBytes = (tx: TronTx, signatures = 1) => BigInt(tx.raw_data_hex.length / 2) + SIGNATURE_SIZE * BigInt(signatures) + RESULT_SIZE;

  /** TRX a stored transaction sends (a TransferContract's `amount`: activation, top-up); 0 for anything else. */
  function trxSent(tx: SignedTx): bigint {
    const contract = (JSON.parse(tx.raw) as { raw_data?: { contract?: { type?: string; parameter?: { value?: { amount?: unknown } } }[] } }).raw_data
      ?.contract?.[0];
    return contract?.type === 'TransferContract' ? big(contract.parameter?.value?.amount) : 0n;
  }

  function signed(tx: TronTx, key: Uint8Array): SignedTx {
    const s = signTransaction(keyHex(key), tx) as unknown as TronTx;
    return { txHash: s.txID.toLowerCase(), raw: JSON.stringify(s), nonce: null, expiresAt: BigInt(s.raw_data.expiration) };
  }

  async function quoteTransfer(intent: TransferIntent): Promise<TronTransferQuote> {
    const [params, res, account, energy, header] = await Promise.all([
      chainParams(),
      resources(intent.from),
      getAccount(intent.from),
      estimateEnergy(intent),
      blockHeader(),
    ]);
    const bandwidth = txBytes(await buildTransfer(intent, header));
    const exists = Object.keys(account).length > 0;
    const energyAvailable = res.energyLimit > res.energyUsed ? res.energyLimit - res.energyUsed : 0n;
    const netLeft = (limit: bigint, used: bigint) => (limit > used ? limit - used : 0n);
    const bandwidthAvailable = exists ? netLeft(res.freeNetLimit, res.freeNetUsed) + netLeft(res.netLimit, res.netUsed) : 0n;
    // java-tron takes bandwidth from one pool (staked, then free) or burns for the whole transaction
    const bandwidthBurn =
      bandwidthAvailable >= bandwidth && (netLeft(res.netLimit, res.netUsed) >= bandwidth || netLeft(res.freeNetLimit, res.freeNetUsed) >= bandwidth)
        ? 0n
        : bandwidth * params.transactionFee;
    const shortfall = energy > energyAvailable ? energy - energyAvailable : 0n;
    return {
      energy,
      bandwidth,
      energyPrice: params.energyFee,
      bandwidthPrice: params.transactionFee,
      energyAvailable,
      bandwidthAvailable,
      burnWithoutEnergy: energy * params.energyFee + bandwidth * params.transactionFee,
      burnNow: shortfall * params.energyFee + bandwidthBurn,
      exists,
      activation: exists ? 0n : params.activationFee,
    };
  }

  /** Sun of stake (whole TRX, at least 1) that yields `energy` at the network's current weight; 0 when the network gives no energy. */
  function stakeFor(energy: bigint, stake: TankStake): bigint {
    if (stake.totalEnergyLimit <= 0n) return 0n;
    return ceilDiv(ceilDiv(energy * stake.totalEnergyWeight * SUN_PER_TRX, stake.totalEnergyLimit), SUN_PER_TRX) * SUN_PER_TRX;
  }

  async function tankStake(tank: string): Promise<TankStake> {
    const [account, res] = await Promise.all([getAccount(tank), resources(tank)]);
    const frozen = Array.isArray(account.frozenV2) ? (account.frozenV2 as { type?: unknown; amount?: unknown }[]) : [];
    const staked = frozen.filter((f) => f.type === 'ENERGY').reduce((sum, f) => sum + big(f.amount), 0n);
    const delegated = big((account.account_resource as { delegated_frozenV2_balance_for_energy?: unknown } | undefined)?.delegated_frozenV2_balance_for_energy);
    const weight = res.totalEnergyWeight > 0n ? res.totalEnergyWeight : 1n;
    return {
      delegatableSun: staked > delegated ? staked - delegated : 0n,
      energyPerTrx: Number(res.totalEnergyLimit) / Number(weight),
      totalEnergyLimit: res.totalEnergyLimit,
      totalEnergyWeight: weight,
    };
  }

  async function delegatedTo(tank: string, receiver: string): Promise<bigint> {
    return client.post('/wallet/getdelegatedresourcev2', { fromAddress: hex41(tank), toAddress: hex41(receiver) }, (j) => {
      const list = obj(j, 'delegated resources').delegatedResource;
      if (list === undefined) return 0n;
      if (!Array.isArray(list)) throw new TronBadResponse('delegatedResource is not a list');
      return (list as { frozen_balance_for_energy?: unknown }[]).reduce((sum, d) => sum + big(d.frozen_balance_for_energy), 0n);
    });
  }

  async function txInfo(txHash: string) {
    return client.post('/wallet/gettransactioninfobyid', { value: txHash }, (j) => obj(j, 'transaction info'));
  }

  return {
    gas: 'topup',
    quoteTransfer,
    tankStake,

    async nativeBalance(address) {
      return big((await getAccount(address)).balance);
    },

    coinSent(tx) {
      const contract = (JSON.parse(tx.raw) as { raw_data?: { contract?: { type?: string; parameter?: { value?: { to_address?: unknown } } }[] } }).raw_data
        ?.contract?.[0];
      const to =
        contract?.type === 'TransferContract' && typeof contract.parameter?.value?.to_address === 'string'
          ? toTronBase58(contract.parameter.value.to_address)
          : null;
      const amount = trxSent({ raw: tx.raw } as SignedTx);
      return to && amount > 0n ? [{ to, amount }] : [];
    },

    async quoteTransferFee(intent) {
      if (isNativeIntent(intent)) return quoteTrxTransfer(intent);
      return (await quoteTransfer(intent)).burnNow;
    },

    // Per deposit (the dust rule): what sweeping THIS deposit costs the tank — the burn its transfer
    // needs, less the energy the tank's free stake lends, plus the creation of its account when it
    // was never activated (signFunding's first transfer to it pays that).
    async dustFee(intent, tank) {
      const [q, stake] = await Promise.all([quoteTransfer(intent), tankStake(tank)]);
      const shortfall = q.energy > q.energyAvailable ? q.energy - q.energyAvailable : 0n;
      if (shortfall === 0n) return q.burnNow + q.activation;
      // as signFunding decides: the energy it would delegate (burn price of the shortfall + margin) must fit the free stake
      const lent = stakeFor((shortfall * (100n + margin)) / 100n, stake);
      return (lent > 0n && lent <= stake.delegatableSun ? q.burnNow - shortfall * q.energyPrice : q.burnNow) + q.activation;
    },

    async signFunding(tankKey, needs: GasNeed[]) {
      const tank = TronWeb.address.fromPrivateKey(keyHex(tankKey)) as string;
      const [header, params, stake] = await Promise.all([blockHeader(), chainParams(), tankStake(tank)]);
      let free = stake.delegatableSun;
      const out: SignedTx[] = [];
      for (const need of needs) {
        if (need.amount <= 0n) continue;
        const to = toTronBase58(need.address)!;
        const [account, res] = await Promise.all([getAccount(to), resources(to)]);
        const exists = Object.keys(account).length > 0;
        // `amount` is a burn price: energy × energyFee (+ bandwidth), so this over-covers by the bandwidth part
        const energy = (ceilDiv(need.amount, params.energyFee > 0n ? params.energyFee : 1n) * (100n + margin)) / 100n;
        // stake (sun) that yields `energy`: energy = sun/10^6 × TotalEnergyLimit / TotalEnergyWeight; whole TRX, min 1
        const stakeSun = stakeFor(energy, stake);
        if (stakeSun > 0n && stakeSun <= free) {
          free -= stakeSun;
          // bandwidth: free allowance once it exists; else TRX for the bytes (a transfer is < 400 bytes)
          const freeNet = exists ? (res.freeNetLimit > res.freeNetUsed ? res.freeNetLimit - res.freeNetUsed : 0n) : 600n;
          const bandwidthSun = freeNet >= 400n ? 0n : 400n * params.transactionFee;
          const send = bandwidthSun > 0n ? bandwidthSun : exists ? 0n : ACTIVATION_SUN;
          if (send > 0n)
            out.push(
              signed((await tronWeb.transactionBuilder.sendTrx(to, Number(send), tank, { blockHeader: header } as never)) as unknown as TronTx, tankKey),
            );
          const d = await tronWeb.transactionBuilder.delegateResource(Number(stakeSun), to, 'ENERGY', tank, false, undefined, { blockHeader: header } as never);
          out.push(signed(d as unknown as TronTx, tankKey));
        } else {
          // fallback: TRX to burn (also activates the account), with the same margin: a short top-up
          // would fail the sweep with OUT_OF_ENERGY and burn it all; what is left serves the next sweep
          const topup = (need.amount * (100n + margin)) / 100n;
          out.push(signed((await tronWeb.transactionBuilder.sendTrx(to, Number(topup), tank, { blockHeader: header } as never)) as unknown as TronTx, tankKey));
        }
      }
      return out;
    },

    async signReclaim(tankKey, addresses) {
      const tank = TronWeb.address.fromPrivateKey(keyHex(tankKey)) as string;
      const header = await blockHeader();
      const out: SignedTx[] = [];
      for (const address of addresses) {
        const amount = await delegatedTo(tank, address);
        if (amount <= 0n) continue;
        const u = await tronWeb.transactionBuilder.undelegateResource(Number(amount), toTronBase58(address)!, 'ENERGY', tank, { blockHeader: header } as never);
        out.push(signed(u as unknown as TronTx, tankKey));
      }
      return out;
    },

    async signStake(tankKey, sun) {
      const tank = TronWeb.address.fromPrivateKey(keyHex(tankKey)) as string;
      const f = await tronWeb.transactionBuilder.freezeBalanceV2(Number(sun), 'ENERGY', tank, { blockHeader: await blockHeader() } as never);
      return signed(f as unknown as TronTx, tankKey);
    },

    async signTransfer(intent, keys) {
      if (isNativeIntent(intent)) return signed(await buildTrxTransfer(intent, await blockHeader()), keys.deposit);
      return signed(await buildTransfer(intent, await blockHeader()), keys.deposit);
    },

    async broadcast(tx) {
      const res = await client.post('/wallet/broadcasttransaction', JSON.parse(tx.raw) as Record<string, unknown>, (j) => obj(j, 'broadcast answer'));
      if (res.result === true) return;
      const code = typeof res.code === 'string' ? res.code : 'OTHER_ERROR';
      // the node already has it (in its pool or in a block): what a re-broadcast after a crash meets
      if (code === 'DUP_TRANSACTION_ERROR') return;
      throw new TxRejectedError(code, `TRON node refused ${tx.txHash}: ${code} ${decodeMessage(res.message)}`, code === 'TRANSACTION_EXPIRATION_ERROR');
    },

    async txState(tx): Promise<TxState> {
      // head time first: if it was already past expiry, a tx missing now can never be included later
      const head = await headTime();
      const info = await txInfo(tx.txHash);
      const blockNumber = info.blockNumber;
      if (typeof info.id === 'string' && typeof blockNumber === 'number') {
        const block = await client.post('/wallet/getblockbynum', { num: blockNumber }, (j) => obj(j, 'block'));
        if (typeof block.blockID !== 'string') return { state: 'pending' }; // the info ran ahead of this node's block store
        const receipt = (info.receipt ?? {}) as Record<string, unknown>;
        const result = receipt.result;
        const success = info.result !== 'FAILED' && (result === undefined || result === 'SUCCESS');
        return {
          state: 'included',
          blockNumber: BigInt(blockNumber),
          blockHash: block.blockID.toLowerCase(),
          success,
          feePaid: big(info.fee),
          signerSpent: big(info.fee) + (success ? trxSent(tx) : 0n),
          resourceUsage: {
            energy: big(receipt.energy_usage_total),
            bandwidth: big(receipt.net_usage),
            energyFee: big(receipt.energy_fee),
            netFee: big(receipt.net_fee),
          },
        };
      }
      if (tx.expiresAt !== null && head > tx.expiresAt) return { state: 'dead' };
      const known = await client.post('/wallet/gettransactionbyid', { value: tx.txHash }, (j) => obj(j, 'transaction'));
      return typeof known.txID === 'string' ? { state: 'pending' } : { state: 'unknown' };
    },
  };
}
