import { fromHex, isAddressValid, toHex } from 'tronweb/utils';

/**
 * TRON address forms:
 * - base58check "T…" (34 chars): canonical everywhere in the gateway (registry, deposits, payments);
 * - "41" + 20-byte hex: what java-tron's HTTP API speaks with `visible: false`;
 * - 20-byte hex without the 41 prefix: TVM log addresses and ABI-encoded `address` words.
 * The 20-byte body is the same secp256k1 Keccak address as on EVM chains.
 */
const HEX41 = /^41[0-9a-fA-F]{40}$/;
const HEX20 = /^[0-9a-fA-F]{40}$/;

export function isTronAddress(address: string): boolean {
  if (typeof address !== 'string') return false;
  if (HEX41.test(address)) return true;
  return isAddressValid(address);
}

/** Canonical base58 T-address from base58 or 41-hex input; null when it is neither. */
export function toTronBase58(address: string): string | null {
  if (typeof address !== 'string') return null;
  if (HEX41.test(address)) return fromHex(address.toLowerCase());
  return isAddressValid(address) ? address : null;
}

/** 20-byte lowercase hex body (no 41, no 0x) of a valid address; throws on invalid input. */
export function tronAddressBody(address: string): string {
  const b58 = toTronBase58(address);
  if (!b58) throw new Error(`not a TRON address: ${address}`);
  return toHex(b58).slice(2).toLowerCase();
}

/** Base58 T-address of a 20-byte body ("abcd…", "0xabcd…" or a 32-byte left-padded ABI word). */
export function tronAddressFromBody(hex: string): string {
  const clean = hex.replace(/^0x/i, '');
  const body = clean.slice(-40);
  if (!HEX20.test(body)) throw new Error(`not a 20-byte address body: ${hex}`);
  return fromHex(`41${body.toLowerCase()}`);
}
