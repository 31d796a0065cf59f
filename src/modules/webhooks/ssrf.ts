import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP } from 'node:net';
import { promisify } from 'node:util';

/**
 * SSRF guard for merchant webhook URLs (docs/webhooks.md "Settings and URL rules"). A URL is refused when any
 * address its host resolves to is not a public unicast address. Checked when the URL is saved and
 * again inside the connection's own DNS lookup on every send, so a name that re-points to an internal
 * address later (DNS rebinding) is refused at connect time — the address checked is the address used.
 */

const blocked = new BlockList();
// IPv4: "this" network, private, CGNAT, loopback, link-local, IETF protocol assignments, documentation,
// 6to4 relay, benchmarking, multicast, reserved, broadcast.
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  blocked.addSubnet(net, prefix, 'ipv4');
// IPv6 outside the IPv4-embedding ranges below must be global unicast (2000::/3: everything else —
// ::/8 and the rest of the reserved space, ULA, link-local, site-local, multicast — is not routable on
// the internet), and not one of these special blocks inside it: IETF protocol assignments (incl.
// Teredo, whose embedded address is obfuscated), documentation.
const GLOBAL_UNICAST = new BlockList();
GLOBAL_UNICAST.addSubnet('2000::', 3, 'ipv6');
for (const [net, prefix] of [
  ['2001::', 23],
  ['2001:db8::', 32],
  ['3fff::', 20],
] as const)
  blocked.addSubnet(net, prefix, 'ipv6');

/** Expands an IPv6 address to its eight 16-bit groups (handles `::` and a dotted IPv4 tail). */
function ipv6Groups(addr: string): number[] {
  let a = addr.toLowerCase().split('%')[0]!;
  const v4 = a.match(/(\d+\.\d+\.\d+\.\d+)$/);
  if (v4) {
    const o = v4[1]!.split('.').map(Number);
    a = a.slice(0, -v4[1]!.length) + `${((o[0]! << 8) | o[1]!).toString(16)}:${((o[2]! << 8) | o[3]!).toString(16)}`;
  }
  const [head, tail] = a.split('::') as [string, string | undefined];
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const fill = tail === undefined ? [] : Array(8 - h.length - t.length).fill('0');
  return [...h, ...fill, ...t].map((g) => parseInt(g, 16));
}

const v4From = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
const zeros = (g: number[], from: number, to: number) => g.slice(from, to).every((x) => x === 0);

/**
 * IPv6 ranges that carry an IPv4 address, and where: a packet to one of them reaches (or is translated
 * to) that IPv4 address, so the address is judged by it. Exported for the docs.
 */
export const IPV4_EMBEDDING_RANGES: readonly { range: string; name: string; v4: (g: number[]) => string | null }[] = [
  { range: '::ffff:0:0/96', name: 'IPv4-mapped', v4: (g) => (zeros(g, 0, 5) && g[5] === 0xffff ? v4From(g[6]!, g[7]!) : null) },
  { range: '::/96', name: 'IPv4-compatible (deprecated)', v4: (g) => (zeros(g, 0, 6) ? v4From(g[6]!, g[7]!) : null) },
  { range: '::ffff:0:0:0/96', name: 'IPv4-translated (SIIT)', v4: (g) => (zeros(g, 0, 4) && g[4] === 0xffff && g[5] === 0 ? v4From(g[6]!, g[7]!) : null) },
  { range: '64:ff9b::/96', name: 'NAT64 well-known prefix', v4: (g) => (g[0] === 0x64 && g[1] === 0xff9b && zeros(g, 2, 6) ? v4From(g[6]!, g[7]!) : null) },
  { range: '2002::/16', name: '6to4', v4: (g) => (g[0] === 0x2002 ? v4From(g[1]!, g[2]!) : null) },
];

/** The IPv4 address an IPv6 address carries (see IPV4_EMBEDDING_RANGES), if any. */
function embeddedIpv4(addr: string): string | null {
  const g = ipv6Groups(addr);
  if (g.length !== 8 || g.some((x) => Number.isNaN(x))) return null;
  for (const r of IPV4_EMBEDDING_RANGES) {
    const v4 = r.v4(g);
    if (v4 !== null) return v4;
  }
  return null;
}

/** True for a public unicast address; false for anything private, local, reserved or malformed. */
export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return !blocked.check(address, 'ipv4');
  if (family !== 6) return false;
  const v4 = embeddedIpv4(address);
  if (v4 !== null) return isPublicAddress(v4);
  // The local-use NAT64 prefix (64:ff9b:1::/48) and everything else outside 2000::/3 ends here.
  const bare = address.split('%')[0]!;
  return GLOBAL_UNICAST.check(bare, 'ipv6') && !blocked.check(bare, 'ipv6');
}

/** The host of a URL as DNS/`isIP` want it (IPv6 literals without brackets). */
export const urlHost = (u: URL): string => u.hostname.replace(/^\[(.*)\]$/, '$1');

export class SsrfError extends Error {
  override readonly name = 'SsrfError';
}

const lookupAll = promisify(dnsLookup) as (host: string, opts: { all: true; verbatim: true }) => Promise<LookupAddress[]>;

/** Resolves every address of `host` (an IP literal stands for itself) and throws SsrfError unless all are public. */
export async function assertPublicHost(host: string): Promise<string[]> {
  let addrs: string[];
  if (isIP(host)) addrs = [host];
  else {
    try {
      addrs = (await lookupAll(host, { all: true, verbatim: true })).map((a) => a.address);
    } catch (e) {
      throw new SsrfError(`${host} does not resolve (${(e as NodeJS.ErrnoException).code ?? 'DNS error'})`);
    }
  }
  const bad = addrs.filter((a) => !isPublicAddress(a));
  if (!addrs.length || bad.length) throw new SsrfError(`${host} resolves to a non-public address (${bad.join(', ') || 'none'})`);
  return addrs;
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for http.request / net.connect that resolves like dns.lookup and refuses non-public
 * answers: the check and the connection use the same answer, so DNS rebinding cannot slip between them.
 */
export function publicOnlyLookup(hostname: string, options: { all?: boolean; family?: number | string }, callback: LookupCallback): void {
  dnsLookup(hostname, { all: true, verbatim: true, family: typeof options.family === 'number' ? options.family : 0 }, (err, addrs) => {
    if (err) return callback(err, []);
    const bad = addrs.filter((a) => !isPublicAddress(a.address));
    if (!addrs.length || bad.length) {
      const e = new SsrfError(`${hostname} resolves to a non-public address (${bad.map((a) => a.address).join(', ') || 'none'})`) as NodeJS.ErrnoException;
      e.code = 'ESSRF';
      return callback(e, []);
    }
    if (options.all) return callback(null, addrs);
    callback(null, addrs[0]!.address, addrs[0]!.family);
  });
}
