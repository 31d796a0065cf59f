import type { Network } from '../common/environment.js';
import type { ChainFamily, TransferWallet, TransferWalletOptions } from './chain-adapter.js';
import { familyOf } from './registry.js';

/**
 * Each family's wallet opener, imported on first use: they bring the chains' full client libraries
 * (ethers providers, TronWeb, web3.js connections), which a process that never sends does not carry.
 */
const OPENERS: Record<ChainFamily, () => Promise<(o: TransferWalletOptions) => TransferWallet>> = {
  evm: async () => (await import('./evm/evm.wallet.js')).openEvmWallet,
  tron: async () => (await import('./tron/tron.wallet.js')).openTronWallet,
  solana: async () => (await import('./solana/solana.wallet.js')).openSolanaWallet,
};

/** Opens the `TransferWallet` of `key` on `network`. */
export async function openTransferWallet(network: Network, options: TransferWalletOptions): Promise<TransferWallet> {
  return (await OPENERS[familyOf(network)]())(options);
}

/** Serialises the sends of one wallet: one key must not race itself (EVM nonces, the SOLANA fee payer). Reads run freely. */
export function serialisedWallet(wallet: TransferWallet): TransferWallet {
  let tail: Promise<unknown> = Promise.resolve();
  const queue = <T>(fn: () => Promise<T>): Promise<T> => {
    const run = tail.then(fn, fn);
    tail = run.catch(() => undefined);
    return run;
  };
  return {
    address: wallet.address,
    nativeBalance: () => wallet.nativeBalance(),
    tokenBalance: (t) => wallet.tokenBalance(t),
    sendNative: (to, amount) => queue(() => wallet.sendNative(to, amount)),
    sendToken: (t, to, amount) => queue(() => wallet.sendToken(t, to, amount)),
  };
}
