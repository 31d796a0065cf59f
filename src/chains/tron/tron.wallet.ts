import { TronWeb } from 'tronweb';
import type { TransferWallet, TransferWalletOptions } from '../chain-adapter.js';

/** A TRON hot wallet (secp256k1 key, hex) that sends and waits until the transfer is in a block (`TransferWallet`). */
export function openTronWallet(o: TransferWalletOptions): TransferWallet {
  const privateKey = o.key.replace(/^0x/, '');
  const tron = new TronWeb({ fullHost: o.rpcUrl, privateKey });
  const address = tron.address.fromPrivateKey(privateKey) as string;
  const landed = async (txid: string) => {
    const deadline = Date.now() + o.timeoutMs;
    for (;;) {
      // the unconfirmed (full-node) view: a block is enough here, solidification is the watcher's business
      const info = (await tron.trx.getUnconfirmedTransactionInfo(txid)) as { blockNumber?: number; receipt?: { result?: string } };
      if (info?.blockNumber !== undefined) {
        if (info.receipt?.result && info.receipt.result !== 'SUCCESS') throw new Error(`transaction ${txid} failed on chain: ${info.receipt.result}`);
        return txid;
      }
      if (Date.now() > deadline) throw new Error(`transaction ${txid} not in a block within ${o.timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 250));
    }
  };
  const broadcast = async (tx: unknown) => {
    const signed = await tron.trx.sign(tx as never, privateKey);
    const res = (await tron.trx.sendRawTransaction(signed as never)) as { result?: boolean; txid?: string; code?: string; message?: string };
    if (!res.result || !res.txid)
      throw new Error(`broadcast refused: ${res.code ?? 'error'} ${res.message ? Buffer.from(res.message, 'hex').toString('utf8') : ''}`.trim());
    return landed(res.txid);
  };
  const trigger = async (token: string, selector: string, params: { type: string; value: unknown }[], constant: boolean) =>
    constant
      ? tron.transactionBuilder.triggerConstantContract(token, selector, {}, params, address)
      : tron.transactionBuilder.triggerSmartContract(token, selector, { feeLimit: 100_000_000 }, params, address);
  return {
    address,
    nativeBalance: async () => BigInt(await tron.trx.getBalance(address)),
    tokenBalance: async (t) => {
      const res = (await trigger(t.address, 'balanceOf(address)', [{ type: 'address', value: address }], true)) as { constant_result?: string[] };
      return BigInt(`0x${res.constant_result?.[0] || '0'}`);
    },
    sendNative: async (to, amount) => broadcast(await tron.transactionBuilder.sendTrx(to, Number(amount), address)),
    sendToken: async (t, to, amount) => {
      const built = (await trigger(
        t.address,
        'transfer(address,uint256)',
        [
          { type: 'address', value: to },
          { type: 'uint256', value: amount.toString() },
        ],
        false,
      )) as { transaction: unknown };
      return broadcast(built.transaction);
    },
  };
}
