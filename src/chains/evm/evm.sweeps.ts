/**
 * EVM sweeps (ETHEREUM, BINANCE): the `SweepCapability` of the EVM adapter.
 *
 * Fees, detected per chain from its latest block (never from the network's name):
 * - a chain with a base fee (EIP-1559) gets type-2 transactions with
 *   `maxFeePerGas = ceil(baseFee × 9/8) + tip`: the 12.5 % margin is one full block of base-fee rise
 *   (the most one block can add), `tip` is the node's `eth_maxPriorityFeePerGas`;
 * - a chain whose base fee is absent or 0 (BSC style) gets legacy type-0 transactions at `eth_gasPrice`.
 * A fee bump (`feeBumpPercent`) multiplies every fee field, so 110 or more satisfies the nodes'
 * replacement rule (each fee ≥ 110 % of the stuck transaction's).
 *
 * "Just enough" gas: `quoteTransferFee` is `eth_estimateGas` of the very transfer (plus what the real
 * amount's calldata may add over the quoted one: `amountCalldataMargin`) × the fee above, and `signTransfer` signs with that gas limit and fee, capped (when no bump is asked for) at what the
 * deposit holds, so a deposit spends its top-up and keeps only: the unused fee margin (≤ 12.5 % of the
 * base fee part on 1559 chains, 0 on legacy chains), the unused calldata margin (≤ 372 gas) plus the gas refunded for clearing its token
 * balance (the EVM refunds it after execution, but the limit must cover it while running).
 * `docs/sweeps-evm.md` has the figures measured on anvil.
 */
import { getAddress, hexlify, Interface, Transaction, Wallet, type Authorization, type TransactionLike } from 'ethers';
import {
  isNativeIntent,
  SweepGasShortError,
  type BatchSweepCapability,
  type BatchSweepItem,
  type GasNeed,
  type SignedTx,
  type SignOptions,
  type SweepCapability,
  type TransferIntent,
  type TxState,
} from '../chain-adapter.js';
import { EvmRpcError, hexToBigInt, toQuantity, type EvmRpcClient } from './evm.rpc.js';

export const ERC20_TRANSFER = new Interface(['function transfer(address to, uint256 amount) returns (bool)']);
export const DISPERSE_ABI = new Interface(['function disperse(address[] to, uint256[] amounts) payable']);
export const SWEEPER_ABI = new Interface([
  'function TANK() view returns (address)',
  'function sweepBatch(address[] deposits, address[] tokens, address[] to, uint256[] amounts)',
  'function sweep(address token, address to, uint256 amount)',
]);

/** Recipients per disperse transaction: ~35k gas each to a fresh account keeps one well under any block limit. */
export const DISPERSE_CHUNK = 200;
/** Default most deposits per EIP-7702 batch sweep (~30k gas each: ~3M gas). */
export const DEFAULT_SWEEP_BATCH_MAX = 100;
/** Margin on gas limits the tank pays (unused gas is not charged): state may change between estimate and inclusion. */
const TANK_GAS_MARGIN_PERCENT = 10n;
/** A plain value transfer to an account without code. */
const PLAIN_TRANSFER_GAS = 21_000n;

export interface EvmSweepSettings {
  /** Chain id to sign for; read from the node (`eth_chainId`) when absent. */
  chainId?: number;
  disperseAddress?: string;
  sweeperAddress?: string;
  sweepBatchMax?: number;
}

/** Fees of one signing: EIP-1559 where the chain has a base fee, legacy where it has none. */
export type EvmFees = { kind: 'eip1559'; baseFee: bigint; maxFeePerGas: bigint; maxPriorityFeePerGas: bigint } | { kind: 'legacy'; gasPrice: bigint };

/** The fee per gas a quote is priced at (what the deposit must hold per unit of its gas limit). */
export const feeCap = (f: EvmFees): bigint => (f.kind === 'eip1559' ? f.maxFeePerGas : f.gasPrice);

interface RpcReceipt {
  status: string;
  blockNumber: string;
  blockHash: string;
  gasUsed: string;
  effectiveGasPrice?: string;
}

interface RpcTx {
  blockNumber: string | null;
  gasPrice?: string;
}

const ceilPercent = (v: bigint, percent: bigint): bigint => (v * percent + 99n) / 100n;

// What nodes answer when they already hold (or have mined) this exact transaction.
const ALREADY_KNOWN = /already known|known transaction|already imported|already exists|transaction already in/i;
const NONCE_USED = /nonce too low|nonce has already been used|replacement transaction underpriced|already used/i;

const keyHex = (key: Uint8Array): string => hexlify(key);

function signerOf(key: Uint8Array, expected: string, what: string): Wallet {
  const wallet = new Wallet(keyHex(key));
  if (wallet.address !== getAddress(expected)) throw new Error(`${what} key does not match ${getAddress(expected)}`);
  return wallet;
}

function signed(raw: string): SignedTx {
  const tx = Transaction.from(raw);
  return { txHash: tx.hash!, raw, nonce: BigInt(tx.nonce), expiresAt: null };
}

export interface EvmSweepCapability extends SweepCapability {
  /** The fees a signing at `bumpPercent` would use now. */
  fees(bumpPercent?: number): Promise<EvmFees>;
  /** Gas limit of the token transfer `intent` (`eth_estimateGas` from the deposit). */
  estimateTransferGas(intent: TransferIntent): Promise<bigint>;
}

/**
 * Gas a token transfer's calldata may still add over the quoted one: each zero byte of the amount
 * word costs 4 gas, a non-zero byte 16, and the planner quotes before it knows the amount (1 unit),
 * so the quote is priced as if every zero byte of the quoted amount were non-zero. The transfer of
 * the real balance then never needs more than its top-up (18-decimal tokens carry ~6 more non-zero
 * bytes: 72 gas, enough to leave a legacy-priced transfer short forever). Native coin: the value is
 * not calldata, 0.
 */
export function amountCalldataMargin(intent: Pick<TransferIntent, 'amount' | 'token'>): bigint {
  if (isNativeIntent(intent)) return 0n;
  const word = intent.amount.toString(16).padStart(64, '0');
  let zeros = 0n;
  for (let i = 0; i < 64; i += 2) if (word.slice(i, i + 2) === '00') zeros++;
  return zeros * 12n;
}

export function createEvmSweeps(rpc: EvmRpcClient, settings: EvmSweepSettings): EvmSweepCapability {
  let chainId: bigint | null = settings.chainId !== undefined ? BigInt(settings.chainId) : null;
  const sweeper = settings.sweeperAddress ? getAddress(settings.sweeperAddress) : null;
  const disperse = settings.disperseAddress ? getAddress(settings.disperseAddress) : null;
  let sweeperTank: Promise<string> | null = null;

  async function getChainId(): Promise<bigint> {
    chainId ??= hexToBigInt(await rpc.call<string>('eth_chainId', []), 'eth_chainId');
    return chainId;
  }

  const pendingNonce = async (address: string): Promise<bigint> =>
    hexToBigInt(await rpc.call<string>('eth_getTransactionCount', [address, 'pending']), 'nonce');

  async function nativeBalance(address: string): Promise<bigint> {
    return hexToBigInt(await rpc.call<string>('eth_getBalance', [getAddress(address), 'latest']), 'eth_getBalance');
  }

  async function fees(bumpPercent = 100): Promise<EvmFees> {
    if (!Number.isInteger(bumpPercent) || bumpPercent < 100) throw new RangeError(`feeBumpPercent must be an integer ≥ 100, got ${bumpPercent}`);
    const bump = BigInt(bumpPercent);
    const block = await rpc.call<{ baseFeePerGas?: string } | null>('eth_getBlockByNumber', ['latest', false]);
    const baseFee = block?.baseFeePerGas !== undefined ? hexToBigInt(block.baseFeePerGas, 'baseFeePerGas') : 0n;
    if (baseFee === 0n) {
      // BSC style: no base fee (or 0), validators order by gas price
      const gasPrice = hexToBigInt(await rpc.call<string>('eth_gasPrice', []), 'eth_gasPrice');
      return { kind: 'legacy', gasPrice: ceilPercent(gasPrice, bump) };
    }
    const tip = hexToBigInt(await rpc.call<string>('eth_maxPriorityFeePerGas', []), 'eth_maxPriorityFeePerGas');
    const maxFee = (baseFee * 9n + 7n) / 8n + tip;
    return { kind: 'eip1559', baseFee, maxFeePerGas: ceilPercent(maxFee, bump), maxPriorityFeePerGas: ceilPercent(tip, bump) };
  }

  async function estimate(call: Record<string, unknown>): Promise<bigint> {
    // against the mined state: a replacement is estimated as if its stuck predecessor had not run
    // (some nodes, anvil among them, default to `pending`)
    return hexToBigInt(await rpc.call<string>('eth_estimateGas', [call, 'latest']), 'eth_estimateGas');
  }

  async function estimateTransferGas(intent: TransferIntent): Promise<bigint> {
    // native coin: a plain value transfer, estimated with 1 wei (the balance itself leaves no room for the gas)
    if (isNativeIntent(intent)) return estimate({ from: getAddress(intent.from), to: getAddress(intent.to), value: toQuantity(1n) });
    const data = ERC20_TRANSFER.encodeFunctionData('transfer', [getAddress(intent.to), intent.amount]);
    return estimate({ from: getAddress(intent.from), to: getAddress(intent.token.address), data });
  }

  function feeFields(f: EvmFees): Pick<TransactionLike, 'type' | 'gasPrice' | 'maxFeePerGas' | 'maxPriorityFeePerGas'> {
    return f.kind === 'legacy' ? { type: 0, gasPrice: f.gasPrice } : { type: 2, maxFeePerGas: f.maxFeePerGas, maxPriorityFeePerGas: f.maxPriorityFeePerGas };
  }

  /** Fees 1559 transactions of type 4 (no legacy form exists): on a base-fee-0 chain the gas price is both cap and tip. */
  function typedFeeFields(f: EvmFees): Pick<TransactionLike, 'maxFeePerGas' | 'maxPriorityFeePerGas'> {
    return f.kind === 'legacy'
      ? { maxFeePerGas: f.gasPrice, maxPriorityFeePerGas: f.gasPrice }
      : { maxFeePerGas: f.maxFeePerGas, maxPriorityFeePerGas: f.maxPriorityFeePerGas };
  }

  /**
   * No bump asked: sign with at most what the deposit holds per gas (spends the top-up, leaves no
   * margin unspent when the base fee fell), never below what the next block can accept. A bump: the
   * bumped fee exactly, or `SweepGasShortError` (a replacement must outbid the stuck transaction).
   */
  async function affordableFees(from: string, gasLimit: bigint, bumpPercent: number | undefined): Promise<EvmFees> {
    const [wanted, balance] = await Promise.all([fees(bumpPercent ?? 100), nativeBalance(from)]);
    const needed = gasLimit * feeCap(wanted);
    if (balance >= needed) return wanted;
    const perGas = balance / gasLimit;
    if (bumpPercent === undefined || bumpPercent === 100) {
      // legacy chains quote without a margin: there is nothing to give up
      if (wanted.kind === 'eip1559' && perGas >= wanted.baseFee) {
        const tip = perGas - wanted.baseFee < wanted.maxPriorityFeePerGas ? perGas - wanted.baseFee : wanted.maxPriorityFeePerGas;
        return { ...wanted, maxFeePerGas: perGas, maxPriorityFeePerGas: tip };
      }
    }
    throw new SweepGasShortError(getAddress(from), needed, balance);
  }

  async function quoteTransferFee(intent: TransferIntent): Promise<bigint> {
    const [gas, f] = await Promise.all([estimateTransferGas(intent), fees(100)]);
    return (gas + amountCalldataMargin(intent)) * feeCap(f);
  }

  /**
   * Native coin: `intent.amount` as the transaction's value, the fee on top of it from the same
   * balance; a fee that no longer fits beside the amount is `SweepGasShortError` (the engine reads
   * the balance again and sends less, or tops up a stuck transfer's bump).
   */
  async function signNativeTransfer(intent: TransferIntent, deposit: Uint8Array, options: SignOptions): Promise<SignedTx> {
    const wallet = signerOf(deposit, intent.from, 'deposit');
    const [gasLimit, nonce, id, f, balance] = await Promise.all([
      estimateTransferGas(intent),
      options.nonce ?? pendingNonce(wallet.address),
      getChainId(),
      fees(options.feeBumpPercent ?? 100),
      nativeBalance(wallet.address),
    ]);
    const needed = intent.amount + gasLimit * feeCap(f);
    if (balance < needed) throw new SweepGasShortError(getAddress(intent.from), needed, balance);
    return signed(
      await wallet.signTransaction({ ...feeFields(f), chainId: id, nonce: Number(nonce), gasLimit, to: getAddress(intent.to), value: intent.amount }),
    );
  }

  async function signTransfer(intent: TransferIntent, keys: { deposit: Uint8Array; tank?: Uint8Array }, options: SignOptions): Promise<SignedTx> {
    if (isNativeIntent(intent)) return signNativeTransfer(intent, keys.deposit, options);
    const wallet = signerOf(keys.deposit, intent.from, 'deposit');
    const [gasLimit, nonce, id] = await Promise.all([estimateTransferGas(intent), options.nonce ?? pendingNonce(wallet.address), getChainId()]);
    const f = await affordableFees(wallet.address, gasLimit, options.feeBumpPercent);
    const raw = await wallet.signTransaction({
      ...feeFields(f),
      chainId: id,
      nonce: Number(nonce),
      gasLimit,
      to: getAddress(intent.token.address),
      value: 0n,
      data: ERC20_TRANSFER.encodeFunctionData('transfer', [getAddress(intent.to), intent.amount]),
    });
    return signed(raw);
  }

  async function signFunding(tankKey: Uint8Array, needs: GasNeed[], options: SignOptions): Promise<SignedTx[]> {
    const live = needs.filter((n) => n.amount > 0n);
    if (live.length === 0) return [];
    const tank = new Wallet(keyHex(tankKey));
    const [firstNonce, id, f] = await Promise.all([options.nonce ?? pendingNonce(tank.address), getChainId(), fees(options.feeBumpPercent)]);
    // one transaction per chunk (disperse) or per need (no disperse contract on this network), consecutive nonces
    const calls: { to: string; value: bigint; data: string }[] = disperse
      ? chunks(live, DISPERSE_CHUNK).map((c) => ({
          to: disperse,
          value: c.reduce((s, n) => s + n.amount, 0n),
          data: DISPERSE_ABI.encodeFunctionData('disperse', [c.map((n) => getAddress(n.address)), c.map((n) => n.amount)]),
        }))
      : live.map((n) => ({ to: getAddress(n.address), value: n.amount, data: '0x' }));
    const out: SignedTx[] = [];
    for (const [i, call] of calls.entries()) {
      // a plain send to an account without code is always 21,000; anything else (disperse, a delegated deposit) is estimated
      const code = call.data === '0x' ? await rpc.call<string>('eth_getCode', [call.to, 'latest']) : '0x';
      const gas =
        call.data === '0x' && code === '0x'
          ? PLAIN_TRANSFER_GAS
          : ceilPercent(await estimate({ from: tank.address, to: call.to, value: toQuantity(call.value), data: call.data }), 100n + TANK_GAS_MARGIN_PERCENT);
      const raw = await tank.signTransaction({
        ...feeFields(f),
        chainId: id,
        nonce: Number(firstNonce + BigInt(i)),
        gasLimit: gas,
        to: call.to,
        value: call.value,
        data: call.data,
      });
      out.push(signed(raw));
    }
    return out;
  }

  async function broadcast(tx: SignedTx): Promise<void> {
    try {
      await rpc.call<string>('eth_sendRawTransaction', [tx.raw]);
    } catch (err) {
      if (!(err instanceof EvmRpcError)) throw err;
      if (ALREADY_KNOWN.test(err.message)) return;
      // the nonce is used: fine only when it was used by this very transaction
      if (NONCE_USED.test(err.message)) {
        const known = await rpc.call<RpcTx | null>('eth_getTransactionByHash', [tx.txHash]);
        if (known) return;
      }
      throw err;
    }
  }

  async function txState(tx: SignedTx, from: string): Promise<TxState> {
    // the sender's mined nonce is read BEFORE the receipt: a transaction mined between the two reads
    // then shows up as included, never as dead
    const minedNonce = tx.nonce === null ? null : hexToBigInt(await rpc.call<string>('eth_getTransactionCount', [getAddress(from), 'latest']), 'nonce');
    const receipt = await rpc.call<RpcReceipt | null>('eth_getTransactionReceipt', [tx.txHash]);
    if (receipt) {
      const gasUsed = hexToBigInt(receipt.gasUsed, 'gasUsed');
      let price = receipt.effectiveGasPrice;
      if (price === undefined) price = (await rpc.call<RpcTx | null>('eth_getTransactionByHash', [tx.txHash]))?.gasPrice;
      const feePaid = gasUsed * hexToBigInt(price, 'effectiveGasPrice');
      const success = receipt.status === '0x1';
      // The coin the transaction carried (a top-up, a disperse) left the signer too, unless it reverted.
      const value = success ? Transaction.from(tx.raw).value : 0n;
      return {
        state: 'included',
        blockNumber: hexToBigInt(receipt.blockNumber, 'blockNumber'),
        blockHash: receipt.blockHash,
        success,
        feePaid,
        signerSpent: feePaid + value,
      };
    }
    const pooled = await rpc.call<RpcTx | null>('eth_getTransactionByHash', [tx.txHash]);
    if (pooled) return { state: 'pending' };
    if (minedNonce !== null && tx.nonce !== null && minedNonce > tx.nonce) return { state: 'dead' };
    return { state: 'unknown' };
  }

  /** The tank the deployed Sweeper obeys (read once). */
  function tankOfSweeper(address: string): Promise<string> {
    sweeperTank ??= rpc
      .call<string>('eth_call', [{ to: address, data: SWEEPER_ABI.encodeFunctionData('TANK') }, 'latest'])
      .then((r) => getAddress(SWEEPER_ABI.decodeFunctionResult('TANK', r)[0] as string))
      .catch((err: unknown) => {
        sweeperTank = null;
        throw err;
      });
    return sweeperTank;
  }

  /**
   * The EIP-7702 authorizations the batch still needs: deposits already delegated to this sweeper
   * (designator 0xef0100 ‖ address) need none. Their code and nonces are read in one JSON-RPC batch.
   */
  async function authorizationsFor(items: BatchSweepItem[], sweeperAddress: string, id: bigint): Promise<Authorization[]> {
    const wallets = items.map((item) => signerOf(item.depositKey, item.intent.from, 'deposit'));
    const reads = await rpc.batch<string>(
      wallets.flatMap((w) => [
        { method: 'eth_getCode', params: [w.address, 'latest'] },
        { method: 'eth_getTransactionCount', params: [w.address, 'pending'] },
      ]),
    );
    const designator = `0xef0100${sweeperAddress.slice(2).toLowerCase()}`;
    const auths: Authorization[] = [];
    for (const [i, wallet] of wallets.entries()) {
      if (String(reads[2 * i]).toLowerCase() === designator) continue;
      const nonce = hexToBigInt(reads[2 * i + 1], 'nonce');
      auths.push(wallet.authorizeSync({ address: sweeperAddress, nonce, chainId: id }));
    }
    return auths;
  }

  async function signBatchSweep(tankKey: Uint8Array, items: BatchSweepItem[], options: SignOptions): Promise<SignedTx> {
    if (!sweeper) throw new Error('no Sweeper contract configured for this network');
    if (items.length === 0) throw new RangeError('a batch sweep needs at least one item');
    if (items.length > maxBatch) throw new RangeError(`a batch sweep carries at most ${maxBatch} items, got ${items.length}`);
    const seen = new Set<string>();
    for (const { intent } of items) {
      const key = `${getAddress(intent.from)}/${getAddress(intent.token.address)}`;
      if (seen.has(key)) throw new RangeError(`deposit ${key} appears twice in one batch`);
      seen.add(key);
      if (intent.amount <= 0n) throw new RangeError(`amount must be positive, got ${intent.amount} for ${key}`);
    }
    const tank = new Wallet(keyHex(tankKey));
    const [owner, id] = await Promise.all([tankOfSweeper(sweeper), getChainId()]);
    if (owner !== tank.address) throw new Error(`the Sweeper at ${sweeper} obeys ${owner}, not this gas tank (${tank.address})`);
    const auths = await authorizationsFor(items, sweeper, id);
    const data = SWEEPER_ABI.encodeFunctionData('sweepBatch', [
      items.map((i) => getAddress(i.intent.from)),
      items.map((i) => getAddress(i.intent.token.address)),
      items.map((i) => getAddress(i.intent.to)),
      items.map((i) => i.intent.amount),
    ]);
    const [nonce, f] = await Promise.all([options.nonce ?? pendingNonce(tank.address), fees(options.feeBumpPercent)]);
    const estimated = await estimate({
      from: tank.address,
      to: sweeper,
      data,
      ...(auths.length > 0 && {
        authorizationList: auths.map((a) => ({
          chainId: toQuantity(a.chainId),
          address: a.address,
          nonce: toQuantity(a.nonce),
          yParity: toQuantity(BigInt(a.signature.yParity)),
          r: a.signature.r,
          s: a.signature.s,
        })),
      }),
    });
    // a type-4 transaction must carry at least one authorization: when every deposit already
    // delegates to the Sweeper, the batch is an ordinary call
    const typed = auths.length > 0 ? { type: 4, ...typedFeeFields(f), authorizationList: auths } : feeFields(f);
    const raw = await tank.signTransaction({
      ...typed,
      chainId: id,
      nonce: Number(nonce),
      gasLimit: ceilPercent(estimated, 100n + TANK_GAS_MARGIN_PERCENT),
      to: sweeper,
      value: 0n,
      data,
    });
    return signed(raw);
  }

  const maxBatch = settings.sweepBatchMax ?? DEFAULT_SWEEP_BATCH_MAX;
  const batch: BatchSweepCapability | undefined = sweeper ? { maxBatch, signBatchSweep } : undefined;

  return {
    gas: 'topup',
    nativeBalance,
    coinSent(tx) {
      const t = Transaction.from(tx.raw);
      if (!t.to) return [];
      if (disperse && getAddress(t.to) === disperse && t.data.startsWith(DISPERSE_ABI.getFunction('disperse')!.selector)) {
        const [to, amounts] = DISPERSE_ABI.decodeFunctionData('disperse', t.data) as unknown as [string[], bigint[]];
        return to.map((a, i) => ({ to: getAddress(a), amount: BigInt(amounts[i]!) }));
      }
      return t.value > 0n ? [{ to: getAddress(t.to), amount: t.value }] : [];
    },
    quoteTransferFee,
    signFunding,
    signTransfer,
    broadcast,
    txState,
    ...(batch && { batch }),
    fees,
    estimateTransferGas,
  };
}

function chunks<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
