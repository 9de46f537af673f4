import { describe, expect, it } from 'vitest';
import { type ConfigError, loadConfig } from '../../src/config.js';
import { seedNodes } from '../../src/redis/client.js';

describe('REDIS_CLUSTER_NODES', () => {
  it('is empty by default: Tally connects to REDIS_URL', () => {
    expect(loadConfig({}).redisClusterNodes).toEqual([]);
  });

  it('takes a comma-separated host:port list, which ioredis gets as seed nodes', () => {
    const { redisClusterNodes } = loadConfig({ REDIS_CLUSTER_NODES: '10.0.0.1:7000, redis-b:7001,[::1]:7002' });
    expect(redisClusterNodes).toEqual(['10.0.0.1:7000', 'redis-b:7001', '[::1]:7002']);
    expect(seedNodes(redisClusterNodes)).toEqual([
      { host: '10.0.0.1', port: 7000 },
      { host: 'redis-b', port: 7001 },
      { host: '::1', port: 7002 },
    ]);
  });

  it('refuses entries that are not host:port, naming the variable', () => {
    for (const bad of ['redis-a', 'redis-a:', 'redis-a:0', 'redis-a:70000', 'redis://a:7000', 'a b:7000']) {
      try {
        loadConfig({ REDIS_CLUSTER_NODES: `ok:7000,${bad}` });
        expect.unreachable(`accepted "${bad}"`);
      } catch (error) {
        expect((error as ConfigError).problems).toEqual([`REDIS_CLUSTER_NODES must be a comma-separated host:port list (got "${bad}")`]);
      }
    }
  });
});
