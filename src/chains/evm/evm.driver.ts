import { createHmac } from 'node:crypto';
import { getAddress, getBytes, HDNodeWallet, isAddress } from 'ethers';
import type { Network, WalletType } from '../../common/environment.js';
import { DomainError } from '../../common/errors.js';
import { formatDecimal } from '../../common/money.js';
import type { ChainFamilyDriver, PaymentRequest, SettlementAddressCheck } from '../chain-adapter.js';

export const EVM_NETWORKS = ['ETHEREUM', 'BINANCE'] as const satisfies readonly Network[];
export type EvmNetwork = (typeof EVM_NETWORKS)[number];

export const isEvmNetwork = (n: Network): n is EvmNetwork => (EVM_NETWORKS as readonly Network[]).includes(n);

/** Trust Wallet's `coin` ids (SLIP-44 as Trust Wallet registers them; BNB Smart Chain has its own). */
export const TRUST_WALLET_COIN: Record<EvmNetwork, number> = { ETHEREUM: 60, BINANCE: 20000714 };

const HARDENED = 0x80000000;
/** Order of the secp256k1 group. */
const SECP256K1_N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
const STRICT_HEX_ADDRESS = /^0x[0-9a-fA-F]{40}$/;

function assertIndex(index: number): void {
  if (!Number.isInteger(index) || index < 0 || index >= HARDENED) throw new RangeError(`derivation index out of range: ${index}`);
}

function nodeAt(seed: Uint8Array, index: number): HDNodeWallet {
  if (seed.length !== 64) throw new RangeError(`expected a 64-byte BIP-39 seed, got ${seed.length} bytes`);
  return HDNodeWallet.fromSeed(seed).derivePath(evmDriver.derivationPath(index));
}

function assertEvmNetwork(network: Network): asserts network is EvmNetwork {
  if (!isEvmNetwork(network)) throw new Error(`evm driver asked for non-EVM network ${network}`);
}

function plainInteger(amount: bigint): string {
  if (typeof amount !== 'bigint' || amount <= 0n) throw new RangeError(`payment amount must be a positive bigint, got ${String(amount)}`);
  // bigint toString never uses exponent notation, unlike Number or eth-url-parser's build()
  return amount.toString(10);
}

const ZERO_ADDRESS = '0x0000000000000000000000000000000000000000';

/** getAddress throws on a mixed-case address whose checksum does not match. */
function hasValidChecksum(address: string): boolean {
  try {
    return getAddress(address) === address;
  } catch {
    return false;
  }
}

/**
 * EIP-55: a mixed-case address carries a checksum, which must match; an all-lower-case (or all-upper)
 * address carries none and is accepted as is (exchanges show them that way), stored checksummed.
 */
function checkEvmSettlementAddress(address: string): SettlementAddressCheck {
  if (typeof address !== 'string' || !STRICT_HEX_ADDRESS.test(address)) return { ok: false, reason: 'An EVM address is 0x followed by 40 hexadecimal digits' };
  const hex = address.slice(2);
  const checksummed = hex !== hex.toLowerCase() && hex !== hex.toUpperCase();
  if (checksummed && !hasValidChecksum(address)) {
    return {
      ok: false,
      reason:
        'The EIP-55 checksum of this EVM address does not match (its upper/lower-case letters are wrong): it probably contains a typo. Copy it again from your wallet',
    };
  }
  const canonical = getAddress(address.toLowerCase());
  if (canonical === ZERO_ADDRESS) return { ok: false, reason: 'The zero address burns what is sent to it' };
  return { ok: true, address: canonical };
}

export const evmDriver: ChainFamilyDriver = {
  family: 'evm',

  derivationPath(index: number): string {
    assertIndex(index);
    return `m/44'/60'/0'/0/${index}`;
  },

  deriveAddress(seed: Uint8Array, index: number): string {
    return nodeAt(seed, index).address;
  },

  privateKeyDeriver(seed: Uint8Array): (index: number) => Uint8Array {
    if (seed.length !== 64) throw new RangeError(`expected a 64-byte BIP-39 seed, got ${seed.length} bytes`);
    // m/44'/60'/0'/0 once; each key is then BIP-32 CKDpriv of a non-hardened child: one HMAC and one
    // addition mod n (no curve multiplication, unlike building an HDNodeWallet per key)
    const parent = HDNodeWallet.fromSeed(seed).derivePath(`m/44'/60'/0'/0`);
    const chainCode = getBytes(parent.chainCode);
    const publicKey = getBytes(parent.publicKey);
    const parentKey = BigInt(parent.privateKey);
    return (index) => {
      assertIndex(index);
      const data = new Uint8Array(37);
      data.set(publicKey, 0);
      new DataView(data.buffer).setUint32(33, index);
      const il = createHmac('sha512', chainCode).update(data).digest().subarray(0, 32);
      const tweak = BigInt(`0x${il.toString('hex')}`);
      const key = (tweak + parentKey) % SECP256K1_N;
      // BIP-32: such an index is invalid (probability below 2^-127)
      if (tweak >= SECP256K1_N || key === 0n) throw new RangeError(`derivation index ${index} yields no valid key`);
      return getBytes(`0x${key.toString(16).padStart(64, '0')}`);
    };
  },

  derivePrivateKey(seed: Uint8Array, index: number): Uint8Array {
    return getBytes(nodeAt(seed, index).privateKey);
  },

  isValidAddress(address: string): boolean {
    // ethers alone also accepts no-0x and ICAP forms; a deposit address must be plain hex
    return typeof address === 'string' && STRICT_HEX_ADDRESS.test(address) && isAddress(address);
  },

  normalizeAddress(address: string): string {
    if (!evmDriver.isValidAddress(address)) throw new DomainError('VALIDATION_FAILED', `Invalid EVM address: ${String(address).slice(0, 64)}`);
    return getAddress(address);
  },

  addressKey(address: string): string {
    // Checksummed and lower-case hex name the same account.
    return address.toLowerCase();
  },

  watchAddress(): string | null {
    return null; // Transfer logs name the deposit address itself
  },

  checkSettlementAddress: checkEvmSettlementAddress,

  paymentUri(wallet: WalletType, network: Network, req: PaymentRequest): string {
    assertEvmNetwork(network);
    const token = evmDriver.normalizeAddress(req.token.address);
    const to = evmDriver.normalizeAddress(req.to);
    switch (wallet) {
      case 'METAMASK':
      case 'WALLETCONNECT': {
        if (req.chainId === undefined || !Number.isInteger(req.chainId) || req.chainId <= 0) {
          throw new Error(`EIP-681 URI for ${network} needs the chain id from config`);
        }
        return `ethereum:${token}@${req.chainId}/transfer?address=${to}&uint256=${plainInteger(req.amount)}`;
      }
      case 'TRUSTWALLET': {
        const amount = formatDecimal(BigInt(plainInteger(req.amount)), req.token.decimals);
        return `https://link.trustwallet.com/send?coin=${TRUST_WALLET_COIN[network]}&address=${to}&amount=${amount}&token_id=${token}`;
      }
      case 'PHANTOM':
        throw new DomainError(
          'WALLET_NETWORK_MISMATCH',
          `Phantom cannot pay on ${network}: use it with SOLANA, or pay on ${network} with MetaMask, WalletConnect or Trust Wallet`,
          { wallet, network },
        );
      default: {
        const unknown: never = wallet;
        throw new DomainError('WALLET_NETWORK_MISMATCH', `Wallet ${String(unknown)} is not supported on ${network}`);
      }
    }
  },
};
