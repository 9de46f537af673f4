import { describe, expect, it } from 'vitest';
import { ConfigError, DEV_JWT_SECRET, loadConfig } from '../../src/config.js';

const problemsOf = (env: Record<string, string>) => {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
};

describe('loadConfig', () => {
  it('runs on the embedded defaults with an empty environment', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      nodeEnv: 'development',
      role: 'all',
      port: 4000,
      databaseUrl: 'postgresql://postgres@127.0.0.1:5432/tally',
      redisUrl: 'redis://127.0.0.1:6379',
      redisKeyPrefix: '',
      jwtSecret: DEV_JWT_SECRET,
    });
    expect(config.cursorSecret).toBe(config.jwtSecret);
  });

  it('refuses to start in production without JWT_SECRET, naming the variable', () => {
    expect(problemsOf({ NODE_ENV: 'production' })).toEqual(['JWT_SECRET is required when NODE_ENV=production']);
  });

  it('names every bad variable at once', () => {
    const problems = problemsOf({
      PORT: 'eighty',
      ROLE: 'boss',
      REDIS_URL: 'http://localhost',
      DATABASE_URL: 'not a url',
      JWT_SECRET: 'short',
      REDIS_KEY_PREFIX: 'a{b}',
    });
    expect(problems).toHaveLength(6);
    for (const name of ['PORT', 'ROLE', 'REDIS_URL', 'DATABASE_URL', 'JWT_SECRET', 'REDIS_KEY_PREFIX']) {
      expect(problems.some((p) => p.startsWith(name))).toBe(true);
    }
  });

  it('refuses a views budget smaller than the largest page of views', () => {
    expect(problemsOf({ RATE_LIMIT_VIEWS: '99' })).toEqual([
      'RATE_LIMIT_VIEWS must be at least 100 (a recordViews of the most ids must fit the budget)',
    ]);
    expect(problemsOf({ RATE_LIMIT_VIEWS: '100' })).toEqual([]);
  });

  it('keeps /metrics on the API port unless METRICS_PORT is set, and on a path of its own', () => {
    expect(loadConfig({}).metricsEndpoint).toEqual({ port: null, host: '0.0.0.0', path: '/metrics' });
    expect(loadConfig({ HOST: '10.0.0.5', METRICS_PORT: '9464', METRICS_PATH: '/internal/metrics' }).metricsEndpoint).toEqual({
      port: 9464,
      host: '10.0.0.5',
      path: '/internal/metrics',
    });
    for (const path of ['/graphql', '/readyz', 'metrics', '/graphiql/x.js']) {
      expect(problemsOf({ METRICS_PATH: path }), path).toEqual([expect.stringMatching(/^METRICS_PATH/)]);
    }
    expect(problemsOf({ JWT_REQUIRE_EXP: 'maybe' })).toEqual([expect.stringMatching(/^JWT_REQUIRE_EXP/)]);
    expect(loadConfig({}).tokenRules).toEqual({ requireExp: true, issuer: null, audience: null });
  });

  it('reads the Kafka settings and names what EVENT_LOG=kafka is missing', () => {
    expect(problemsOf({ EVENT_LOG: 'kafka' })).toEqual(['KAFKA_BROKERS is required when EVENT_LOG=kafka (comma-separated host:port list)']);
    expect(problemsOf({ EVENT_LOG: 'kafka', KAFKA_BROKERS: 'a:9092', KAFKA_SASL_MECHANISM: 'plain', KAFKA_SSL: 'yes' })).toEqual([
      'KAFKA_SSL must be true or false (got "yes")',
      'KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD are required with KAFKA_SASL_MECHANISM',
    ]);
    const { kafka } = loadConfig({ EVENT_LOG: 'kafka', KAFKA_BROKERS: 'a:9092, b:9092', KAFKA_CREATE_TOPIC: 'true' });
    expect(kafka).toMatchObject({
      brokers: ['a:9092', 'b:9092'],
      topic: 'counter-events',
      createTopic: true,
      idempotent: true,
      sasl: null,
    });
  });
  it('reads ENTITY_TYPES and names a bad one', () => {
    expect(loadConfig({}).entityTypes).toEqual([]);
    expect(loadConfig({ ENTITY_TYPES: 'comment;video:like:unowned' }).entityTypes).toEqual([
      { name: 'comment', kinds: ['like', 'fav', 'bookmark', 'reactions', 'views'], owned: true },
      { name: 'video', kinds: ['like'], owned: false },
    ]);
    expect(problemsOf({ ENTITY_TYPES: 'post' })).toEqual(['ENTITY_TYPES: "post" is Tally\'s own type']);
  });
});
