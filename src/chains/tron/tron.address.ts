import { concat, decodeBase58, encodeBase58, getBytes, hexlify, sha256, toBeArray } from 'ethers';

/**
 * TRON address forms:
 * - base58check "T…" (34 chars): canonical everywhere in the gateway (registry, deposits, payments);
 * - "41" + 20-byte hex: what java-tron's HTTP API speaks with `visible: false`;
 * - 20-byte hex without the 41 prefix: TVM log addresses and ABI-encoded `address` words.
 * The 20-byte body is the same secp256k1 Keccak address as on EVM chains.
 *
 * Base58check written here over ethers' base58 and sha256 (TronWeb's `fromHex`/`toHex`/`isAddressValid`
 * do the same): `tronweb/utils` pulls in all of TronWeb (about 15 MB of resident memory), and every
 * process that validates or derives an address (the API too) would carry it for these few lines.
 */
const HEX41 = /^41[0-9a-fA-F]{40}$/;
const HEX20 = /^[0-9a-fA-F]{40}$/;
const BASE58_T = /^T[1-9A-HJ-NP-Za-km-z]{33}$/;

/** First 4 bytes of sha256(sha256(payload)): base58check's checksum. */
const checksum = (payload: Uint8Array): Uint8Array => getBytes(sha256(sha256(payload))).subarray(0, 4);

/** The 21-byte payload (0x41 + body) of a valid base58check T-address; null otherwise. */
function decodeTron58(address: string): Uint8Array | null {
  if (!BASE58_T.test(address)) return null;
  const raw = toBeArray(decodeBase58(address));
  if (raw.length !== 25 || raw[0] !== 0x41) return null;
  const payload = raw.subarray(0, 21);
  const sum = checksum(payload);
  for (let i = 0; i < 4; i++) if (raw[21 + i] !== sum[i]) return null;
  return payload;
}

/** Base58check of a 21-byte payload given as "41…" hex. */
const encodeTron58 = (hex41: string): string => {
  const payload = getBytes(`0x${hex41}`);
  return encodeBase58(concat([payload, checksum(payload)]));
};

export function isTronAddress(address: string): boolean {
  if (typeof address !== 'string') return false;
  if (HEX41.test(address)) return true;
  return decodeTron58(address) !== null;
}

/** Canonical base58 T-address from base58 or 41-hex input; null when it is neither. */
export function toTronBase58(address: string): string | null {
  if (typeof address !== 'string') return null;
  if (HEX41.test(address)) return encodeTron58(address.toLowerCase());
  return decodeTron58(address) ? address : null;
}

/** 20-byte lowercase hex body (no 41, no 0x) of a valid address; throws on invalid input. */
export function tronAddressBody(address: string): string {
  if (typeof address === 'string' && HEX41.test(address)) return address.slice(2).toLowerCase();
  const payload = typeof address === 'string' ? decodeTron58(address) : null;
  if (!payload) throw new Error(`not a TRON address: ${address}`);
  return hexlify(payload).slice(4);
}

/** Base58 T-address of a 20-byte body ("abcd…", "0xabcd…" or a 32-byte left-padded ABI word). */
export function tronAddressFromBody(hex: string): string {
  const clean = hex.replace(/^0x/i, '');
  const body = clean.slice(-40);
  if (!HEX20.test(body)) throw new Error(`not a 20-byte address body: ${hex}`);
  return encodeTron58(`41${body.toLowerCase()}`);
}
