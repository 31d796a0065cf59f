import { getBytes, HDNodeWallet } from 'ethers';

import type { Network, WalletType } from '../../common/environment.js';
import { DomainError } from '../../common/errors.js';
import { formatDecimal } from '../../common/money.js';
import type { ChainFamilyDriver, PaymentRequest, SettlementAddressCheck } from '../chain-adapter.js';
import { isTronAddress, toTronBase58, tronAddressFromBody } from './tron.address.js';

/** base58check of 0x41 followed by 20 zero bytes: TRON's zero address. */
const TRON_ZERO_ADDRESS = tronAddressFromBody('0'.repeat(40));
const TRON_BASE58 = /^T[1-9A-HJ-NP-Za-km-z]{33}$/;

/** base58check `T…` only (the hex forms are for node APIs, not for people). */
function checkTronSettlementAddress(address: string): SettlementAddressCheck {
  if (typeof address !== 'string' || !TRON_BASE58.test(address)) return { ok: false, reason: 'A TRON address is 34 base58 characters starting with T' };
  if (!isTronAddress(address))
    return { ok: false, reason: 'The base58check checksum of this TRON address does not match: it probably contains a typo. Copy it again from your wallet' };
  if (address === TRON_ZERO_ADDRESS) return { ok: false, reason: 'The zero address burns what is sent to it' };
  return { ok: true, address };
}

/** SLIP-44 coin type of TRX; also Trust Wallet's `coin` id in deep links. */
const TRON_COIN_TYPE = 195;

/** Wallets that cannot pay a TRC-20 transfer, with the message the customer sees. */
const REFUSED_WALLETS: Partial<Record<WalletType, string>> = {
  METAMASK: 'MetaMask does not support TRON. Choose Trust Wallet to pay on TRON, or pay on Ethereum or BNB Smart Chain with MetaMask.',
  WALLETCONNECT: 'WalletConnect payment requests (EIP-681) work on EVM networks only, not on TRON. Choose Trust Wallet to pay on TRON.',
  PHANTOM: 'Phantom does not support TRON. Choose Trust Wallet to pay on TRON, or pay on Solana with Phantom.',
};

function derive(seed: Uint8Array, index: number): HDNodeWallet {
  if (!Number.isInteger(index) || index < 0 || index >= 0x80000000) {
    throw new Error(`TRON derivation index out of range: ${index}`);
  }
  return HDNodeWallet.fromSeed(seed).derivePath(tronDriver.derivationPath(index));
}

export const tronDriver: ChainFamilyDriver = {
  family: 'tron',

  derivationPath(index: number): string {
    return `m/44'/${TRON_COIN_TYPE}'/0'/0/${index}`;
  },

  deriveAddress(seed: Uint8Array, index: number): string {
    // TRON uses the EVM key → address function; only the prefix byte (0x41) and base58check differ
    return tronAddressFromBody(derive(seed, index).address);
  },

  derivePrivateKey(seed: Uint8Array, index: number): Uint8Array {
    return getBytes(derive(seed, index).privateKey);
  },

  isValidAddress(address: string): boolean {
    return isTronAddress(address);
  },

  normalizeAddress(address: string): string {
    const b58 = toTronBase58(address);
    if (!b58) throw new DomainError('VALIDATION_FAILED', 'Invalid TRON address');
    return b58;
  },

  addressKey(address: string): string {
    return address; // base58check is case-sensitive
  },

  watchAddress(): string | null {
    return null; // TRC-20 Transfer logs name the deposit address itself
  },

  checkSettlementAddress: checkTronSettlementAddress,

  paymentUri(wallet: WalletType, network: Network, req: PaymentRequest): string {
    if (network !== 'TRON') {
      throw new DomainError('WALLET_NETWORK_MISMATCH', `The TRON driver cannot build a payment request for ${network}`);
    }
    const refused = REFUSED_WALLETS[wallet];
    if (refused) throw new DomainError('WALLET_NETWORK_MISMATCH', refused);
    if (wallet !== 'TRUSTWALLET') {
      throw new DomainError('WALLET_NETWORK_MISMATCH', `${wallet} cannot pay on TRON. Choose Trust Wallet.`);
    }
    if (req.amount <= 0n) throw new DomainError('VALIDATION_FAILED', 'Payment amount must be positive');
    const to = tronDriver.normalizeAddress(req.to);
    const token = tronDriver.normalizeAddress(req.token.address);
    // Trust Wallet takes a decimal amount in whole tokens and the TRC-20 contract as token_id
    const amount = formatDecimal(req.amount, req.token.decimals);
    return (
      `https://link.trustwallet.com/send?coin=${TRON_COIN_TYPE}` +
      `&address=${encodeURIComponent(to)}&amount=${encodeURIComponent(amount)}&token_id=${encodeURIComponent(token)}`
    );
  },
};
