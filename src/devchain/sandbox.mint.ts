/**
 * Test-token minting on the local sandbox chains, for `dev pay` (a customer's wallet that needs
 * funds first). The TestToken's `mint` is open on EVM and TRON; the SPL mints' authority is the
 * public dev key `SOLANA_MINT_AUTHORITY`. Never useful off the local chains.
 */
import { Connection, Keypair, LAMPORTS_PER_SOL, PublicKey } from '@solana/web3.js';
import { getOrCreateAssociatedTokenAccount, mintTo as splMintTo } from '@solana/spl-token';
import { computeAddress } from 'ethers';
import { TronWeb } from 'tronweb';
import type { ChainFamily } from '../chains/chain-adapter.js';
import type { Network } from '../common/environment.js';
import { connectDevChain, mintTo as evmMintTo } from './devchain.js';
import { SOLANA_MINT_AUTHORITY, type SandboxToken } from './sandbox.chains.js';

/** A customer wallet on one local chain: its key material and how to fund it. */
export interface DevWallet {
  /** secp256k1 hex key (EVM, TRON) or ed25519 seed hex (SOLANA). */
  key: string;
  address: string;
}

type Minter = (network: Network, rpcUrl: string, token: SandboxToken, wallet: DevWallet, amount: bigint) => Promise<void>;

const MINTERS: Record<ChainFamily, Minter> = {
  evm: async (network, rpcUrl, token, wallet, amount) => {
    const chain = connectDevChain(network as 'ETHEREUM' | 'BINANCE', rpcUrl);
    try {
      await evmMintTo(chain, token.address, computeAddress(wallet.key), amount);
    } finally {
      await chain.stop();
    }
  },
  tron: async (_network, rpcUrl, token, wallet, amount) => {
    const privateKey = wallet.key.replace(/^0x/, '');
    const tron = new TronWeb({ fullHost: rpcUrl, privateKey });
    const built = await tron.transactionBuilder.triggerSmartContract(
      token.address,
      'mint(address,uint256)',
      { feeLimit: 100_000_000 },
      [
        { type: 'address', value: wallet.address },
        { type: 'uint256', value: amount.toString() },
      ],
      wallet.address,
    );
    const res = (await tron.trx.sendRawTransaction(await tron.trx.sign(built.transaction, privateKey))) as { result?: boolean; txid?: string };
    if (!res.result || !res.txid) throw new Error('TRON mint refused by the local chain');
    for (let i = 0; i < 100; i++) {
      const info = (await tron.trx.getUnconfirmedTransactionInfo(res.txid)) as { blockNumber?: number };
      if (info?.blockNumber !== undefined) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`TRON mint ${res.txid} not mined`);
  },
  solana: async (_network, rpcUrl, token, wallet, amount) => {
    const connection = new Connection(rpcUrl, 'confirmed');
    const owner = Keypair.fromSeed(Buffer.from(wallet.key, 'hex'));
    // fees for the customer's own transfer, and the recipient token account's rent if it is missing
    const sig = await connection.requestAirdrop(owner.publicKey, LAMPORTS_PER_SOL);
    await connection.confirmTransaction({ signature: sig, ...(await connection.getLatestBlockhash()) }, 'confirmed');
    const mint = new PublicKey(token.address);
    const ata = await getOrCreateAssociatedTokenAccount(connection, SOLANA_MINT_AUTHORITY, mint, owner.publicKey, false, 'confirmed');
    await splMintTo(connection, SOLANA_MINT_AUTHORITY, mint, ata.address, SOLANA_MINT_AUTHORITY, amount, [], { commitment: 'confirmed' });
  },
};

export const mintOnSandbox = (family: ChainFamily, ...args: Parameters<Minter>): Promise<void> => MINTERS[family](...args);
