import { createHmac } from 'node:crypto';
import { Keypair, PublicKey } from '@solana/web3.js';
import type { Network, WalletType } from '../../common/environment.js';
import { DomainError } from '../../common/errors.js';
import { formatDecimal } from '../../common/money.js';
import type { ChainFamilyDriver, PaymentRequest, SettlementAddressCheck } from '../chain-adapter.js';

/** SLIP-0010 coin type for Solana; every level is hardened because ed25519 has no public derivation. */
const SOLANA_COIN_TYPE = 501;
const HARDENED = 0x80000000;
// The three program ids the driver needs, as @solana/spl-token defines them: that package (about 130
// modules) is left to the worker's sweeps and the faucet, so that an API process deriving deposit
// addresses does not load it (test/unit/solana-ata.test.ts checks these against it).
const TOKEN_PROGRAM_ID = new PublicKey('TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA');
const TOKEN_2022_PROGRAM_ID = new PublicKey('TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb');
const ASSOCIATED_TOKEN_PROGRAM_ID = new PublicKey('ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL');
/** Classic SPL Token program: USDC/USDT mints (Token-2022 mints would need their own program id here). */
const SPL_TOKEN_PROGRAM = TOKEN_PROGRAM_ID.toBase58();
/** Trust Wallet's coin id for Solana in its deep links (SLIP-44). */
const TRUST_COIN_SOLANA = 501;

/**
 * SLIP-0010 ed25519 derivation, hardened steps only.
 *
 * Why not `micro-key-producer/slip10.js`: it and its `@noble/*` dependencies are ESM-only, and the
 * project's jest config does not transform them (`require(esm)` in jest needs Node ≥ 24.9), so any
 * test importing this driver would fail to load. The algorithm is two HMAC-SHA512 lines; the test
 * suite cross-checks it against micro-key-producer in a plain Node child process.
 */
function slip10Ed25519(seed: Uint8Array, path: number[]): Uint8Array {
  let I = createHmac('sha512', 'ed25519 seed').update(seed).digest();
  let key = I.subarray(0, 32);
  let chainCode = I.subarray(32);
  for (const index of path) {
    const data = Buffer.alloc(37);
    data[0] = 0;
    Buffer.from(key).copy(data, 1);
    data.writeUInt32BE((index | HARDENED) >>> 0, 33);
    I = createHmac('sha512', chainCode).update(data).digest();
    key = I.subarray(0, 32);
    chainCode = I.subarray(32);
  }
  return new Uint8Array(key);
}

function assertIndex(index: number): void {
  if (!Number.isInteger(index) || index < 0 || index >= HARDENED) {
    throw new RangeError(`derivation index must be an integer in [0, 2^31): ${index}`);
  }
}

function assertSeed(seed: Uint8Array): void {
  // A BIP-39 seed is 64 bytes; SLIP-0010 allows 16..64, anything else is a caller bug.
  if (seed.length < 16 || seed.length > 64) throw new RangeError(`seed must be 16..64 bytes, got ${seed.length}`);
}

function keypairAt(seed: Uint8Array, index: number): Keypair {
  assertSeed(seed);
  assertIndex(index);
  return Keypair.fromSeed(slip10Ed25519(seed, [44, SOLANA_COIN_TYPE, index, 0]));
}

function parsePublicKey(address: string): PublicKey | null {
  // Solana addresses are base58 of exactly 32 bytes; PublicKey accepts other forms (numbers, buffers), so check the string shape first.
  if (typeof address !== 'string' || !/^[1-9A-HJ-NP-Za-km-z]{32,44}$/.test(address)) return null;
  try {
    const key = new PublicKey(address);
    // Leading-zero edge cases: base58 strings that decode to 32 bytes but are not canonical would round-trip differently.
    return key.toBase58() === address ? key : null;
  } catch {
    return null;
  }
}

/** Program ids a wallet address can never be: the system program (the all-zero key) and the token programs. */
const PROGRAM_ADDRESSES = new Set([
  PublicKey.default.toBase58(),
  TOKEN_PROGRAM_ID.toBase58(),
  TOKEN_2022_PROGRAM_ID.toBase58(),
  ASSOCIATED_TOKEN_PROGRAM_ID.toBase58(),
]);

/**
 * A wallet's public key: 32 bytes of base58 on the ed25519 curve. Off-curve keys are refused: they are
 * program-derived accounts — most often a token account pasted instead of its owner's wallet — that no
 * private key controls, so tokens swept to their associated token account could be stranded.
 */
function checkSolanaSettlementAddress(address: string): SettlementAddressCheck {
  const key = parsePublicKey(address);
  if (!key) return { ok: false, reason: 'A Solana address is the base58 form of a 32-byte public key (32 to 44 characters)' };
  if (PROGRAM_ADDRESSES.has(key.toBase58())) return { ok: false, reason: 'This is a Solana program address (or the zero address), not a wallet' };
  if (!PublicKey.isOnCurve(key.toBytes())) {
    return {
      ok: false,
      reason:
        'This Solana address is not on the ed25519 curve: it is a program-derived account (for example a token account), not a wallet. Give the wallet (owner) address',
    };
  }
  return { ok: true, address: key.toBase58() };
}

function requireAddress(address: string, what: string): string {
  const key = parsePublicKey(address);
  if (!key) throw new DomainError('VALIDATION_FAILED', `Invalid Solana ${what} address`);
  return key.toBase58();
}

/** Associated token account of (owner, mint) under the mint's token program (Token or Token-2022). */
export function associatedTokenAddress(owner: string | PublicKey, mint: string | PublicKey, tokenProgramId: string | PublicKey): string {
  const ownerKey = typeof owner === 'string' ? new PublicKey(owner) : owner;
  const mintKey = typeof mint === 'string' ? new PublicKey(mint) : mint;
  const programKey = typeof tokenProgramId === 'string' ? new PublicKey(tokenProgramId) : tokenProgramId;
  // Off-curve owners refused (spl-token's allowOwnerOffCurve=false): deposit owners are derived ed25519
  // keys, so a PDA here would be a bug.
  if (!PublicKey.isOnCurve(ownerKey.toBytes())) throw new Error(`associated token account of an off-curve owner: ${ownerKey.toBase58()}`);
  const [ata] = PublicKey.findProgramAddressSync([ownerKey.toBuffer(), programKey.toBuffer(), mintKey.toBuffer()], ASSOCIATED_TOKEN_PROGRAM_ID);
  return ata.toBase58();
}

function solanaPayUrl(req: PaymentRequest, recipient: string, mint: string): string {
  // Built by hand: Solana Pay wants a plain decimal amount and percent-encoded values (URLSearchParams would write '+' for spaces).
  const params: string[] = [`amount=${formatDecimal(req.amount, req.token.decimals)}`, `spl-token=${mint}`];
  if (req.reference) params.push(`reference=${requireAddress(req.reference, 'reference')}`);
  if (req.label) params.push(`label=${encodeURIComponent(req.label)}`);
  return `solana:${recipient}?${params.join('&')}`;
}

function trustWalletUrl(req: PaymentRequest, recipient: string, mint: string): string {
  const q = new URLSearchParams({
    coin: String(TRUST_COIN_SOLANA),
    address: recipient,
    amount: formatDecimal(req.amount, req.token.decimals),
    token_id: mint,
  });
  return `https://link.trustwallet.com/send?${q.toString()}`;
}

export const solanaDriver: ChainFamilyDriver = {
  family: 'solana',

  derivationPath(index: number): string {
    assertIndex(index);
    return `m/44'/${SOLANA_COIN_TYPE}'/${index}'/0'`;
  },

  deriveAddress(seed: Uint8Array, index: number): string {
    return keypairAt(seed, index).publicKey.toBase58();
  },

  derivePrivateKey(seed: Uint8Array, index: number): Uint8Array {
    // 64-byte secret (seed ‖ public key), the form Keypair.fromSecretKey and wallets import.
    return keypairAt(seed, index).secretKey;
  },

  isValidAddress(address: string): boolean {
    return parsePublicKey(address) !== null;
  },

  normalizeAddress(address: string): string {
    const key = parsePublicKey(address);
    if (!key) throw new DomainError('VALIDATION_FAILED', 'Invalid Solana address');
    return key.toBase58();
  },

  addressKey(address: string): string {
    return address; // base58 is case-sensitive
  },

  watchAddress(owner: string, token: string): string | null {
    // A transfer into an existing associated token account does not mention its owner.
    return associatedTokenAddress(owner, token, SPL_TOKEN_PROGRAM);
  },

  checkSettlementAddress: checkSolanaSettlementAddress,

  paymentUri(wallet: WalletType, network: Network, req: PaymentRequest): string {
    if (network !== 'SOLANA') {
      throw new DomainError('WALLET_NETWORK_MISMATCH', `Solana payment links cannot be built for network ${network}`);
    }
    if (req.amount <= 0n) throw new DomainError('VALIDATION_FAILED', 'Payment amount must be positive');
    // The recipient is the deposit owner: Solana Pay and Trust Wallet resolve the owner's associated token account themselves.
    const recipient = requireAddress(req.to, 'recipient');
    const mint = requireAddress(req.token.address, 'token mint');
    switch (wallet) {
      case 'PHANTOM':
      case 'WALLETCONNECT':
        return solanaPayUrl(req, recipient, mint);
      case 'TRUSTWALLET':
        return trustWalletUrl(req, recipient, mint);
      case 'METAMASK':
        throw new DomainError(
          'WALLET_NETWORK_MISMATCH',
          'MetaMask cannot pay on Solana here; choose Phantom, Trust Wallet or WalletConnect, or pay on Ethereum or BNB Smart Chain',
        );
      default: {
        const unknown: never = wallet;
        throw new DomainError('WALLET_NETWORK_MISMATCH', `Wallet ${String(unknown)} is not supported on Solana`);
      }
    }
  },
};
