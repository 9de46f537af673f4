import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { addressBucket, clientAddress } from '../../src/limits/clientAddress.js';

const request = (peer: string, forwardedFor?: string) =>
  ({ socket: { remoteAddress: peer }, headers: forwardedFor ? { 'x-forwarded-for': forwardedFor } : {} }) as unknown as IncomingMessage;

describe('clientAddress', () => {
  it('is the peer when no proxy is trusted, whatever X-Forwarded-For claims', () => {
    expect(clientAddress(request('198.51.100.1', '203.0.113.9'), 0)).toBe('198.51.100.1');
  });

  it('is the entry the outermost trusted proxy wrote, counted from the right', () => {
    expect(clientAddress(request('10.0.0.2', 'spoofed, 203.0.113.9'), 1)).toBe('203.0.113.9');
    expect(clientAddress(request('10.0.0.2', 'spoofed, 203.0.113.9, 10.0.0.1'), 2)).toBe('203.0.113.9');
  });

  it('falls back to the peer when a request has fewer entries than trusted proxies', () => {
    expect(clientAddress(request('198.51.100.1'), 1)).toBe('198.51.100.1');
    expect(clientAddress(request('198.51.100.1', '203.0.113.9'), 2)).toBe('198.51.100.1');
  });
});

describe('addressBucket', () => {
  it.each([
    ['203.0.113.9', '203.0.113.9'],
    ['::ffff:203.0.113.9', '203.0.113.9'],
    ['2001:db8:1:2::1', '2001:db8:1:2::/64'],
    ['2001:0db8:0001:0002:ffff:0:0:9', '2001:db8:1:2::/64'],
    ['2001:db8::1', '2001:db8:0:0::/64'],
    ['::1', '0:0:0:0::/64'],
    ['fe80::1%eth0', 'fe80:0:0:0::/64'],
    ['not an address', 'not an address'],
  ])('%s is charged as %s', (raw, bucket) => {
    expect(addressBucket(raw)).toBe(bucket);
  });
});
