/**
 * The CLI's `dev wallet` and `dev pay`: a customer's wallet on the local sandbox chains, and a payment
 * from it (minting test tokens to the public dev wallet first, or paying from a key the user made).
 */
import { randomBytes } from 'node:crypto';
import { Keypair } from '@solana/web3.js';
import { computeAddress } from 'ethers';
import { TronWeb } from 'tronweb';
import type { ChainFamily } from '../chains/chain-adapter.js';
import { driverFor, familyOf } from '../chains/registry.js';
import { openTransferWallet } from '../chains/transfer-wallet.js';
import type { Network } from '../common/environment.js';
import { parseDecimal } from '../common/money.js';
import { CUSTOMER_PRIVATE_KEYS } from './devchain.js';
import { SOLANA_DEV_CUSTOMER, sandboxToken } from './sandbox.chains.js';
import { mintOnSandbox, type DevWallet } from './sandbox.mint.js';

/** The address of a key: secp256k1 hex (EVM, TRON) or ed25519 seed hex (SOLANA). */
function addressOfKey(family: ChainFamily, key: string): string {
  const hex = key.replace(/^0x/, '');
  if (family === 'solana') return Keypair.fromSeed(Buffer.from(hex, 'hex')).publicKey.toBase58();
  return family === 'tron' ? (TronWeb.address.fromPrivateKey(hex) as string) : computeAddress(`0x${hex}`);
}

/** A new random wallet on `network`: its address (for the faucet) and its key (for `dev pay --from-key`). */
export function newDevWallet(network: Network): { address: string; privateKey: string } {
  const key = randomBytes(32).toString('hex');
  return { address: addressOfKey(familyOf(network), key), privateKey: key };
}

/** The public customer wallet on each local chain (the dev keys). */
function devCustomer(family: ChainFamily): DevWallet {
  if (family === 'solana')
    return { key: Buffer.from(SOLANA_DEV_CUSTOMER.secretKey.subarray(0, 32)).toString('hex'), address: SOLANA_DEV_CUSTOMER.publicKey.toBase58() };
  const key = CUSTOMER_PRIVATE_KEYS[0]!;
  return { key, address: addressOfKey(family, key) };
}

export interface DevPayment {
  network: Network;
  rpcUrl: string;
  to: string;
  /** Token units as shown to the customer, e.g. "9.231614". */
  amount: string;
  token: 'USDT' | 'USDC';
  /** Pay from this wallet (64 hex characters, funded by the faucet) instead of minting to the dev wallet. */
  fromKey?: string;
}

/** Pays like a customer: validates everything before sending; mints to the dev wallet first when no key is given. */
export async function devPay(p: DevPayment): Promise<{ token: string; amount: bigint; txHash: string }> {
  const driver = driverFor(p.network);
  if (!driver.isValidAddress(p.to)) throw new Error(`--to is not a valid ${p.network} address`);
  const spec = sandboxToken(p.network, p.token)!;
  const amount = parseDecimal(p.amount, spec.decimals);
  const family = familyOf(p.network);
  const own = p.fromKey?.replace(/^0x/, '');
  if (own !== undefined && !/^[0-9a-fA-F]{64}$/.test(own)) throw new Error('--from-key must be 64 hex characters (the private_key that `dev wallet` printed)');
  const wallet = own !== undefined ? { key: family === 'solana' ? own : `0x${own}`, address: '' } : devCustomer(family);
  // Your own wallet pays with what the faucet gave it; the dev wallet gets the tokens minted first.
  if (own === undefined) await mintOnSandbox(family, p.network, p.rpcUrl, spec, wallet, amount);
  const sender = await openTransferWallet(p.network, { rpcUrl: p.rpcUrl, timeoutMs: 30_000, key: wallet.key });
  const txHash = await sender.sendToken({ address: spec.address, decimals: spec.decimals }, driver.normalizeAddress(p.to), amount);
  return { token: spec.address, amount, txHash };
}
