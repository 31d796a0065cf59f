import { BlockList, isIP } from 'node:net';

/** An allowlist entry, normalised: `{ address, prefix, family }`, or null when it is not one. */
export function parseCidr(raw: string): { address: string; prefix: number; family: 'ipv4' | 'ipv6' } | null {
  const [address = '', bits, extra] = raw.trim().split('/');
  if (extra !== undefined) return null;
  const version = isIP(address);
  if (version === 0) return null;
  const max = version === 4 ? 32 : 128;
  const prefix = bits === undefined ? max : /^\d{1,3}$/.test(bits) ? Number(bits) : NaN;
  if (!Number.isInteger(prefix) || prefix < 0 || prefix > max) return null;
  return { address, prefix, family: version === 4 ? 'ipv4' : 'ipv6' };
}

/**
 * node's BlockList over CIDR entries (already validated). `allows(ip)` also matches an IPv4 client seen
 * as IPv4-mapped IPv6 (`::ffff:10.1.2.3`, how a dual-stack socket reports it) against IPv4 entries.
 */
export function cidrMatcher(entries: readonly string[]): { allows(ip: string | undefined): boolean } {
  const list = new BlockList();
  for (const e of entries) {
    const c = parseCidr(e);
    if (c) list.addSubnet(c.address, c.prefix, c.family);
  }
  return {
    allows(ip) {
      if (!ip) return false;
      const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip)?.[1];
      const v4 = mapped ?? (isIP(ip) === 4 ? ip : null);
      if (v4) return list.check(v4, 'ipv4');
      return isIP(ip) === 6 && list.check(ip, 'ipv6');
    },
  };
}
