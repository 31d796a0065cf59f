import { createHash } from 'node:crypto';
import ipaddr from 'ipaddr.js';

/**
 * The client a payment-link open is counted against: its address, an IPv6 address by its /64 (one
 * subscriber's allocation: anyone holding one /64 has 2^64 addresses), an IPv4-mapped IPv6 address as
 * the IPv4 address. Stored as a SHA-256 (hex), never the address itself.
 */
export function linkClient(ip: string): string {
  let key = ip;
  if (ipaddr.isValid(ip)) {
    const addr = ipaddr.process(ip); // ::ffff:a.b.c.d → a.b.c.d
    if (addr.kind() === 'ipv6') {
      const parts = (addr as ipaddr.IPv6).toByteArray().slice(0, 8);
      key = `${Buffer.from(parts).toString('hex')}::/64`;
    } else {
      key = addr.toString();
    }
  }
  return createHash('sha256').update(key).digest('hex');
}
