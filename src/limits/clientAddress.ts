// The address an anonymous client is charged by (src/limits/rateLimiter.ts): the connecting
// peer or, behind TRUST_PROXY_HOPS proxies, the address the outermost of them saw, read from
// the right of X-Forwarded-For (entries further left are the client's own claims). An IPv6
// client is charged by its /64: one subscriber usually holds the whole block.

import type { IncomingMessage } from 'node:http';
import { isIPv4, isIPv6 } from 'node:net';

/** The first four groups of an IPv6 address, written out in full. */
function ipv6Prefix64(address: string): string {
  const [head, tail] = address.split('::') as [string, string | undefined];
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups = tail === undefined ? left : [...left, ...Array(8 - left.length - right.length).fill('0'), ...right];
  return `${groups
    .slice(0, 4)
    .map((g) => parseInt(g, 16).toString(16))
    .join(':')}::/64`;
}

/** One bucket per IPv4 address, per IPv6 /64; anything else as it is, bounded in length. */
export function addressBucket(raw: string): string {
  const address = raw.trim().replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/i, '');
  if (isIPv4(address)) return address;
  // An IPv4 tail (::1.2.3.4) or a zone (%eth0) does not change the /64.
  if (isIPv6(address)) return ipv6Prefix64(address.replace(/%.*$/, '').replace(/:\d+\.\d+\.\d+\.\d+$/, ':0:0'));
  return address.slice(0, 64) || 'unknown';
}

export function clientAddress(req: IncomingMessage, trustedHops: number): string {
  const peer = req.socket.remoteAddress ?? 'unknown';
  if (trustedHops === 0) return addressBucket(peer);
  const forwarded = String(req.headers['x-forwarded-for'] ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
  // Each of our proxies appends the address it was reached from: the `trustedHops`-th entry
  // from the right is what the outermost one saw. Fewer entries: the peer is all we know.
  const seen = forwarded[forwarded.length - trustedHops];
  return addressBucket(seen ?? peer);
}
