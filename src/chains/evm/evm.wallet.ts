import { Contract, JsonRpcProvider, Wallet } from 'ethers';
import type { TransferWallet, TransferWalletOptions } from '../chain-adapter.js';

const ERC20 = ['function transfer(address to, uint256 value) returns (bool)', 'function balanceOf(address owner) view returns (uint256)'];

/** An EVM hot wallet (secp256k1 key, hex) that sends and waits for one block (`TransferWallet`). */
export function openEvmWallet(o: TransferWalletOptions): TransferWallet {
  const provider = new JsonRpcProvider(o.rpcUrl, undefined, { cacheTimeout: -1, pollingInterval: 250 });
  const wallet = new Wallet(o.key, provider);
  const landed = async (tx: { hash: string; wait: (c: number, t: number) => Promise<{ status: number | null } | null> }) => {
    const r = await tx.wait(1, o.timeoutMs);
    if (r?.status !== 1) throw new Error(`transaction ${tx.hash} failed on chain`);
    return tx.hash;
  };
  return {
    address: wallet.address,
    nativeBalance: () => provider.getBalance(wallet.address),
    tokenBalance: async (t) => (await new Contract(t.address, ERC20, provider).getFunction('balanceOf')(wallet.address)) as bigint,
    sendNative: async (to, amount) => landed(await wallet.sendTransaction({ to, value: amount })),
    sendToken: async (t, to, amount) => landed(await new Contract(t.address, ERC20, wallet).getFunction('transfer')(to, amount)),
  };
}
