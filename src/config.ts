// Every setting Tally reads from the environment, validated once at start so a bad value
// fails fast with a message naming the variable (docs/operations.md lists them all).
import { createHash, randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Budget, BudgetName } from './domain/budgets.js';
import { type OwnerTypeSpec, parseEntityTypes } from './domain/entityTypes.js';
import { DEFAULT_REACTIONS, type KindRules, parseReactions, type Reaction } from './domain/relations.js';
import { MAX_VIEWS_PER_REQUEST, type ViewRules } from './domain/views.js';

export type Role = 'all' | 'api' | 'worker';
export type EventLogKind = 'redis' | 'kafka';

export interface KafkaConfig {
  brokers: string[];
  topic: string;
  /** The topic the owning service writes entity lifecycle messages to. */
  entityTopic: string;
  clientId: string;
  /** Prepended to consumer group names, so deployments can share a cluster. */
  groupPrefix: string;
  /** Create the topic on start (needs admin rights; off by default). */
  createTopic: boolean;
  topicPartitions: number;
  /** Idempotent producer (needs a broker that supports InitProducerId). */
  idempotent: boolean;
  sessionTimeoutMs: number;
  ssl: boolean;
  sasl: { mechanism: 'plain' | 'scram-sha-256' | 'scram-sha-512'; username: string; password: string } | null;
}
export type NodeEnv = 'production' | 'development' | 'test';

export interface RedisTimeouts {
  /** A command not answered within this long fails, and its connection is replaced. */
  commandTimeoutMs: number;
  /** TCP keep-alive: the idle time before the first probe. */
  keepAliveMs: number;
}

export const REDIS_DEFAULT_TIMEOUTS: RedisTimeouts = { commandTimeoutMs: 5000, keepAliveMs: 10_000 };

export interface DatabaseTimeouts {
  /** A query (and, on the server, a statement) not done within this long fails. */
  queryTimeoutMs: number;
  /** A new connection must be open within this long. */
  connectTimeoutMs: number;
  /** TCP keep-alive: the idle time before the first probe. */
  keepAliveMs: number;
}

// Queries: the slowest Tally runs (a user counters recount at a million facts) take seconds.
export const DATABASE_DEFAULT_TIMEOUTS: DatabaseTimeouts = { queryTimeoutMs: 30_000, connectTimeoutMs: 5000, keepAliveMs: 10_000 };

export interface Config {
  nodeEnv: NodeEnv;
  role: Role;
  host: string;
  port: number;
  databaseUrl: string;
  /** Every PostgreSQL connection's deadlines and TCP keep-alive (src/db/client.ts). */
  databaseTimeouts: DatabaseTimeouts;
  redisUrl: string;
  /** Redis Cluster seed nodes (host:port); when set, Tally connects to the Cluster instead of REDIS_URL. */
  redisClusterNodes: string[];
  /** Every Redis connection's command deadline and TCP keep-alive (src/redis/client.ts). */
  redisTimeouts: RedisTimeouts;
  /** Prepended to every Redis key Tally and BullMQ write, so several deployments or test runs share one Redis. */
  redisKeyPrefix: string;
  /** The reactions users may set on a post, in the order clients show them; each one's counter slot follows from its position. */
  reactions: readonly Reaction[];
  /** REACTIONS_PER_USER=one: a user holds at most one reaction on a post. */
  oneReactionPerUser: boolean;
  /** The entity types a product's own service owns (ENTITY_TYPES), besides Tally's posts and users. */
  entityTypes: readonly OwnerTypeSpec[];
  jwtSecret: string;
  /** Signs the credentials of a product's services (SERVICE_SECRET); null: this deployment accepts none. */
  serviceSecret: string | null;
  /** The claims a bearer token must carry (JWT_REQUIRE_EXP, JWT_ISSUER, JWT_AUDIENCE). */
  tokenRules: TokenRules;
  /** Signs pagination cursors so a client cannot forge one. */
  cursorSecret: string;
  logLevel: string;
  /** Serve GraphiQL (and its assets) at GET /graphql for browsers; off in production by default. */
  graphiql: boolean;
  /** Partitions P: fixed per deployment (recorded in Redis; changing it is a migration). */
  partitions: number;
  /** Events the aggregator takes per partition per batch. */
  aggregatorBatchSize: number;
  /** How often dirty aggregation hashes are folded into the packed counters. */
  flushIntervalMs: number;
  /** Partitions one flush job covers; P / this many jobs share the work each interval. */
  flushPartitionsPerJob: number;
  /** Consumed outbox entries are kept this long (for replay), then trimmed. */
  eventRetentionMs: number;
  /** A consumer that stops renewing its partition lease loses it after this long. */
  consumerLeaseMs: number;
  /**
   * This process's name in consumer groups. Stable across restarts (MEMBER_ID), a restarted
   * worker takes its partitions back at once; unset, each start is a new member.
   */
  memberId: string;
  /** How long a post lookup made to validate a mutation is reused. */
  postCacheTtlMs: number;
  /** How long a feed page (the posts, not their counts) is reused by this process. */
  feedCacheTtlMs: number;
  /** BullMQ job lock: a job of a worker that died is retried after this long. */
  jobLockMs: number;
  /** Hold on one entity while a worker rebuilds its counters. */
  rebuildLockMs: number;
  /** How often reconciliation compares counters, relation sets and PostgreSQL. */
  reconcileIntervalMs: number;
  /** Random posts reconciliation checks each run, besides the recently active ones. */
  reconcileSample: number;
  /** How often the user counters verifier runs, and how many random users it checks. */
  userVerifyIntervalMs: number;
  userVerifySample: number;
  /** Per-client budgets (src/limits/rateLimiter.ts): a burst of `capacity`, refilled over `windowMs`. */
  rateLimits: Record<BudgetName, Budget>;
  /** How views are counted (VIEW_WINDOW_MS, VIEWS_ANONYMOUS, VIEWS_COUNT_AUTHOR, VIEWS_EXACT_UP_TO, VIEW_DIGEST_SECRET). */
  views: ViewRules;
  /** Proxies in front of Tally whose X-Forwarded-For entries are trusted (0: the peer's address). */
  trustProxyHops: number;
  /** Abuse limits on GraphQL documents and requests. */
  limits: {
    depth: number;
    aliases: number;
    cost: number;
    /** Anonymous queries that cost less than this are not charged to the `reads` budget. */
    readsMinCost: number;
    tokens: number;
    /** Largest document (its source text, comments included). */
    queryBytes: number;
    bodyBytes: number;
    executionTimeoutMs: number;
  };
  /** In-process caches of what clients sent, bounded by the heap they hold (estimated, src/graphql/). */
  documentCaches: {
    /** Parsed and validated documents (Apollo's document store). */
    parsedBytes: number;
    /** graphql-jit's compiled plans. */
    compiledBytes: number;
    /** Runs of a document on graphql-js before graphql-jit compiles it. */
    compileAfter: number;
  };
  /** Connection limits of the HTTP server: slow or idle clients are cut, and connections are capped. */
  http: {
    /** Time to receive a request's headers, from the moment its connection opened (or the last response). */
    headersTimeoutMs: number;
    /** Time to receive a whole request, body included. */
    requestTimeoutMs: number;
    /** How long a kept-alive connection may wait for its next request. */
    keepAliveTimeoutMs: number;
    /** A connection with no traffic either way for this long is closed (longer than any execution). */
    idleTimeoutMs: number;
    /** Connections open at once; more are refused until some close. */
    maxConnections: number;
  };
  /** Account erasure: its background batches and how processes learn of one. */
  erasure: {
    /** Facts, posts or rows one batch handles. */
    batchSize: number;
    /** The share of its time (percent) one user's erasure may be working, spread evenly. */
    busyPercent: number;
    /** How often a process re-reads the erasure list (in case it missed an announcement). */
    refreshMs: number;
  };
  /** What becomes of a deleted entity a product owns: its facts are removed after a while. */
  deletedEntities: {
    /** How long its facts and counters are kept after the deletion (they still count for its likers and owner). */
    retentionMs: number;
    /** How often a worker looks for deleted entities past their retention. */
    purgeIntervalMs: number;
    /** Facts one look removes at most. */
    purgeBatch: number;
  };
  /** Live counts over WebSocket (GraphQL subscriptions, graphql-transport-ws). */
  websocket: {
    /** Subscriptions one connection may hold at once. */
    maxSubscriptions: number;
    /** Ids one subscription may watch (at most 100, as in queries). */
    maxIds: number;
    /** Connections one user (or, anonymous, one address) may hold at once. */
    maxConnectionsPerClient: number;
    /** Largest message a client may send; a larger one closes the socket (1009). */
    maxMessageBytes: number;
    /** Time a client has to send connection_init after connecting (else 4408). */
    initTimeoutMs: number;
    /** Pings go out this often; a socket that answered none since the last one is closed. */
    pingIntervalMs: number;
    /** Bytes queued for a socket that is not reading before it is closed (1013). */
    maxBufferedBytes: number;
    /** How long a push may wait for a socket that is not reading before it is closed (1013). */
    stallMs: number;
  };
  /**
   * How often an API process pings its announcements connection; two unanswered and it stops
   * trusting its caches and says it is not ready (src/services/announcements.ts).
   */
  announcementHeartbeatMs: number;
  /** How long /readyz waits for every dependency before answering 503. */
  readinessTimeoutMs: number;
  /**
   * Where Prometheus reads /metrics: on the API port (port null) or a listener of its own, so
   * the API port need not show it to the public.
   */
  metricsEndpoint: { port: number | null; host: string; path: string };
  /** On SIGTERM, how long /readyz reports "draining" (so load balancers stop routing) before the listener closes. */
  shutdownDelayMs: number;
  /** The automatic persisted query store: how long a document stays after its last registration, and its bounds. */
  persistedQueries: {
    ttlS: number;
    /** Larger documents run, but are not stored. */
    maxDocumentBytes: number;
    maxDocuments: number;
    maxBytes: number;
  };
  /** Who executes operations: graphql-jit (compiled once per document) or graphql-js. */
  executor: 'jit' | 'graphql-js';
  /** The schema served: Tally's own graph, or Tally's fields as a Federation 2 subgraph of a product's graph. */
  schemaMode: SchemaMode;
  /** Where consumers read events: the Redis outbox streams, or Kafka (fed by the relay). */
  eventLog: EventLogKind;
  kafka: KafkaConfig;
}

/** GRAPHQL_SCHEMA: Tally's own graph, or its fields as a Federation 2 subgraph of a product's graph. */
export type SchemaMode = 'standalone' | 'subgraph';

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

/** The claims a bearer token must have beyond its signature and subject (src/auth/jwt.ts). */
export interface TokenRules {
  /** A token without `exp` would work for good. */
  requireExp: boolean;
  /** The `iss` a token must name; null: not checked. */
  issuer: string | null;
  /** The `aud` a token must name (one of its audiences); null: not checked. */
  audience: string | null;
}

export const DEFAULT_TOKEN_RULES: TokenRules = { requireExp: true, issuer: null, audience: null };

export const DEV_JWT_SECRET = 'tally-dev-secret-do-not-use-in-production';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/** The REACTIONS setting (throws on a bad one; loadConfig reports it at start). */
export function reactionsSetting(env: NodeJS.ProcessEnv): readonly Reaction[] {
  return env.REACTIONS?.trim() ? parseReactions(env.REACTIONS) : DEFAULT_REACTIONS;
}

/** The ENTITY_TYPES setting (throws on a bad one; loadConfig reports it at start). */
export function entityTypesSetting(env: NodeJS.ProcessEnv): readonly OwnerTypeSpec[] {
  return env.ENTITY_TYPES?.trim() ? parseEntityTypes(env.ENTITY_TYPES) : [];
}

/**
 * This process's reactions, their rule and its owner types, for the registry built at import
 * (src/domain/kinds.ts). A bad setting reads as the default here: loadConfig refuses it
 * (exit 78) before the registry is used.
 */
export function deploymentKinds(): { reactions: readonly Reaction[]; rules: KindRules; entityTypes: readonly OwnerTypeSpec[] } {
  const rules = { oneReactionPerUser: process.env.REACTIONS_PER_USER === 'one' };
  const orDefault = <T>(read: () => T, fallback: T): T => {
    try {
      return read();
    } catch {
      return fallback;
    }
  };
  return {
    reactions: orDefault(() => reactionsSetting(process.env), DEFAULT_REACTIONS),
    rules,
    entityTypes: orDefault(() => entityTypesSetting(process.env), []),
  };
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const problems: string[] = [];
  const oneOf = <T extends string>(name: string, allowed: readonly T[], fallback: T): T => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    if ((allowed as readonly string[]).includes(raw)) return raw as T;
    problems.push(`${name} must be one of ${allowed.join(', ')} (got "${raw}")`);
    return fallback;
  };
  const integer = (name: string, fallback: number, min: number, max: number): number => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    const n = Number(raw);
    if (Number.isInteger(n) && n >= min && n <= max) return n;
    problems.push(`${name} must be an integer between ${min} and ${max} (got "${raw}")`);
    return fallback;
  };
  const url = (name: string, fallback: string, protocols: string[]): string => {
    const raw = env[name] || fallback;
    try {
      const parsed = new URL(raw);
      if (!protocols.includes(parsed.protocol)) {
        problems.push(`${name} must use ${protocols.join(' or ')} (got "${parsed.protocol}")`);
      }
    } catch {
      problems.push(`${name} is not a valid URL`);
    }
    return raw;
  };

  /** A comma-separated host:port list (empty when unset). */
  const hostPorts = (name: string): string[] => {
    const entries = (env[name] ?? '')
      .split(',')
      .map((e) => e.trim())
      .filter(Boolean);
    for (const entry of entries) {
      const port = Number(/^(?:\[[\da-fA-F:.]+\]|[^\s:[\]]+):(\d{1,5})$/.exec(entry)?.[1]);
      if (!(port >= 1 && port <= 65535)) problems.push(`${name} must be a comma-separated host:port list (got "${entry}")`);
    }
    return entries;
  };
  const budget = (capacityName: string, capacity: number, windowName: string, windowMs: number): Budget => ({
    capacity: integer(capacityName, capacity, 1, 1_000_000),
    windowMs: integer(windowName, windowMs, 100, 86_400_000),
  });
  const memberId = (): string => {
    const raw = env.MEMBER_ID;
    if (raw === undefined || raw === '') return `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
    if (!/^[\w.:-]{1,100}$/.test(raw)) problems.push(`MEMBER_ID must be 1 to 100 letters, digits, '_', '.', ':' or '-' (got "${raw}")`);
    return raw;
  };
  const metricsPath = (): string => {
    const raw = env.METRICS_PATH || '/metrics';
    if (!/^\/[\w./-]*$/.test(raw) || ['/graphql', '/healthz', '/readyz'].includes(raw) || raw.startsWith('/graphiql/')) {
      problems.push(`METRICS_PATH must be a path of its own, like /metrics (got "${raw}")`);
    }
    return raw;
  };
  const parsed = <T>(name: string, read: (env: NodeJS.ProcessEnv) => T, fallback: T): T => {
    try {
      return read(env);
    } catch (error) {
      problems.push(`${name}: ${(error as Error).message}`);
      return fallback;
    }
  };
  // A key of its own: a user token must never verify as a service credential, nor the reverse.
  const serviceSecret = (): string | null => {
    const raw = env.SERVICE_SECRET ?? '';
    if (raw === '') return null;
    if (raw.length < 32) problems.push('SERVICE_SECRET must be at least 32 characters');
    if (raw === (env.JWT_SECRET || DEV_JWT_SECRET)) problems.push('SERVICE_SECRET must differ from JWT_SECRET');
    return raw;
  };
  const flag = (name: string, fallback: boolean): boolean => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    if (raw === 'true' || raw === '1') return true;
    if (raw === 'false' || raw === '0') return false;
    problems.push(`${name} must be true or false (got "${raw}")`);
    return fallback;
  };
  const saslConfig = (): KafkaConfig['sasl'] => {
    const mechanism = env.KAFKA_SASL_MECHANISM;
    if (!mechanism) return null;
    if (mechanism !== 'plain' && mechanism !== 'scram-sha-256' && mechanism !== 'scram-sha-512') {
      problems.push(`KAFKA_SASL_MECHANISM must be plain, scram-sha-256 or scram-sha-512 (got "${mechanism}")`);
      return null;
    }
    if (!env.KAFKA_SASL_USERNAME || !env.KAFKA_SASL_PASSWORD) {
      problems.push('KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD are required with KAFKA_SASL_MECHANISM');
    }
    return { mechanism, username: env.KAFKA_SASL_USERNAME ?? '', password: env.KAFKA_SASL_PASSWORD ?? '' };
  };

  const nodeEnv = oneOf<NodeEnv>('NODE_ENV', ['production', 'development', 'test'], 'development');
  let jwtSecret = env.JWT_SECRET ?? '';
  if (jwtSecret === '') {
    if (nodeEnv === 'production') problems.push('JWT_SECRET is required when NODE_ENV=production');
    jwtSecret = DEV_JWT_SECRET;
  } else if (jwtSecret.length < 32) {
    // HS256 keys shorter than the hash output are brute-forceable offline.
    problems.push('JWT_SECRET must be at least 32 characters');
  }

  const config: Config = {
    nodeEnv,
    role: oneOf<Role>('ROLE', ['all', 'api', 'worker'], 'all'),
    host: env.HOST || '0.0.0.0',
    port: integer('PORT', 4000, 0, 65535),
    databaseUrl: url('DATABASE_URL', 'postgresql://postgres@127.0.0.1:5432/tally', ['postgresql:', 'postgres:']),
    databaseTimeouts: {
      queryTimeoutMs: integer('DATABASE_QUERY_TIMEOUT_MS', DATABASE_DEFAULT_TIMEOUTS.queryTimeoutMs, 100, 3_600_000),
      connectTimeoutMs: integer('DATABASE_CONNECT_TIMEOUT_MS', DATABASE_DEFAULT_TIMEOUTS.connectTimeoutMs, 100, 600_000),
      keepAliveMs: integer('DATABASE_KEEPALIVE_MS', DATABASE_DEFAULT_TIMEOUTS.keepAliveMs, 1000, 3_600_000),
    },
    redisUrl: url('REDIS_URL', 'redis://127.0.0.1:6379', ['redis:', 'rediss:']),
    redisClusterNodes: hostPorts('REDIS_CLUSTER_NODES'),
    redisTimeouts: {
      commandTimeoutMs: integer('REDIS_COMMAND_TIMEOUT_MS', REDIS_DEFAULT_TIMEOUTS.commandTimeoutMs, 100, 600_000),
      keepAliveMs: integer('REDIS_KEEPALIVE_MS', REDIS_DEFAULT_TIMEOUTS.keepAliveMs, 1000, 3_600_000),
    },
    redisKeyPrefix: env.REDIS_KEY_PREFIX ?? '',
    reactions: parsed('REACTIONS', reactionsSetting, DEFAULT_REACTIONS),
    oneReactionPerUser: oneOf('REACTIONS_PER_USER', ['many', 'one'], 'many') === 'one',
    entityTypes: parsed('ENTITY_TYPES', entityTypesSetting, []),
    jwtSecret,
    serviceSecret: serviceSecret(),
    tokenRules: {
      requireExp: flag('JWT_REQUIRE_EXP', DEFAULT_TOKEN_RULES.requireExp),
      issuer: env.JWT_ISSUER || null,
      audience: env.JWT_AUDIENCE || null,
    },
    cursorSecret: env.CURSOR_SECRET || jwtSecret,
    logLevel: oneOf('LOG_LEVEL', LOG_LEVELS, nodeEnv === 'test' ? 'silent' : 'info'),
    graphiql: flag('GRAPHIQL', nodeEnv !== 'production'),
    partitions: integer('PARTITIONS', 16, 1, 1024),
    aggregatorBatchSize: integer('AGGREGATOR_BATCH_SIZE', 500, 1, 10_000),
    // Counts promise freshness within a second at p99: that second also holds the aggregator's
    // poll, the fold and the read, so the flush runs twice in it (docs/performance.md, hot post).
    flushIntervalMs: integer('FLUSH_INTERVAL_MS', 500, 50, 60_000),
    flushPartitionsPerJob: integer('FLUSH_PARTITIONS_PER_JOB', 4, 1, 1024),
    eventRetentionMs: integer('EVENT_RETENTION_MS', 3_600_000, 0, 30 * 24 * 3_600_000),
    // Renewed every third of it: a dead member's partitions move within this long.
    consumerLeaseMs: integer('CONSUMER_LEASE_MS', 3000, 500, 300_000),
    memberId: memberId(),
    postCacheTtlMs: integer('POST_CACHE_TTL_MS', 30_000, 0, 3_600_000),
    feedCacheTtlMs: integer('FEED_CACHE_TTL_MS', 1000, 0, 60_000),
    jobLockMs: integer('JOB_LOCK_MS', 30_000, 1000, 600_000),
    rebuildLockMs: integer('REBUILD_LOCK_MS', 5000, 100, 600_000),
    reconcileIntervalMs: integer('RECONCILE_INTERVAL_MS', 300_000, 1000, 86_400_000),
    reconcileSample: integer('RECONCILE_SAMPLE', 200, 0, 100_000),
    userVerifyIntervalMs: integer('USER_VERIFY_INTERVAL_MS', 300_000, 1000, 86_400_000),
    userVerifySample: integer('USER_VERIFY_SAMPLE', 200, 0, 100_000),
    rateLimits: {
      changes: budget('RATE_LIMIT_CHANGES', 30, 'RATE_LIMIT_WINDOW_MS', 10_000),
      writes: budget('RATE_LIMIT_WRITES', 10, 'RATE_LIMIT_WRITES_WINDOW_MS', 60_000),
      listPages: budget('RATE_LIMIT_LIST_PAGES', 200, 'RATE_LIMIT_LIST_PAGES_WINDOW_MS', 10_000),
      // About one 100-post feed page a second per address, or five queries at MAX_QUERY_COST per 10 s.
      reads: budget('RATE_LIMIT_READS', 100_000, 'RATE_LIMIT_READS_WINDOW_MS', 10_000),
      // A page of 20 posts every two seconds, a minute long.
      views: budget('RATE_LIMIT_VIEWS', 600, 'RATE_LIMIT_VIEWS_WINDOW_MS', 60_000),
    },
    views: {
      windowMs: integer('VIEW_WINDOW_MS', 3_600_000, 1000, 30 * 86_400_000),
      anonymous: oneOf('VIEWS_ANONYMOUS', ['off', 'address'], 'off'),
      countAuthor: flag('VIEWS_COUNT_AUTHOR', false),
      exactUpTo: integer('VIEWS_EXACT_UP_TO', 1000, 1, 100_000),
      persistIntervalMs: integer('VIEWS_PERSIST_INTERVAL_MS', 1000, 100, 3_600_000),
      digestSecret: env.VIEW_DIGEST_SECRET || createHash('sha256').update(`tally views:${jwtSecret}`).digest('base64url'),
    },
    trustProxyHops: integer('TRUST_PROXY_HOPS', 0, 0, 10),
    limits: {
      depth: integer('MAX_QUERY_DEPTH', 10, 2, 100),
      aliases: integer('MAX_ALIASES', 100, 1, 10_000),
      // A 100-post feed page with counts, viewer state and authors costs ~8,500; 100 aliases of it, ~850,000.
      cost: integer('MAX_QUERY_COST', 20_000, 10, 10_000_000),
      // A 20-post page (~1,700) costs an anonymous client nothing (no Redis call).
      readsMinCost: integer('RATE_LIMIT_READS_MIN_COST', 2000, 0, 10_000_000),
      tokens: integer('MAX_QUERY_TOKENS', 5000, 100, 1_000_000),
      queryBytes: integer('MAX_QUERY_BYTES', 32 * 1024, 1024, 16 * 1024 * 1024),
      bodyBytes: integer('MAX_BODY_BYTES', 1024 * 1024, 1024, 100 * 1024 * 1024),
      executionTimeoutMs: integer('EXECUTION_TIMEOUT_MS', 10_000, 1, 600_000),
    },
    documentCaches: {
      parsedBytes: integer('DOCUMENT_CACHE_BYTES', 32 * 1024 * 1024, 1024 * 1024, 4 * 1024 * 1024 * 1024),
      compiledBytes: integer('COMPILED_CACHE_BYTES', 64 * 1024 * 1024, 1024 * 1024, 4 * 1024 * 1024 * 1024),
      compileAfter: integer('JIT_COMPILE_AFTER', 2, 1, 1000),
    },
    http: {
      headersTimeoutMs: integer('HTTP_HEADERS_TIMEOUT_MS', 10_000, 100, 600_000),
      requestTimeoutMs: integer('HTTP_REQUEST_TIMEOUT_MS', 30_000, 100, 3_600_000),
      keepAliveTimeoutMs: integer('HTTP_KEEP_ALIVE_TIMEOUT_MS', 5000, 100, 3_600_000),
      idleTimeoutMs: integer('HTTP_IDLE_TIMEOUT_MS', 60_000, 1000, 3_600_000),
      maxConnections: integer('HTTP_MAX_CONNECTIONS', 10_000, 1, 1_000_000),
    },
    erasure: {
      batchSize: integer('ERASURE_BATCH_SIZE', 200, 1, 10_000),
      busyPercent: integer('ERASURE_BUSY_PERCENT', 5, 1, 100),
      refreshMs: integer('ERASURE_REFRESH_MS', 5000, 100, 600_000),
    },
    deletedEntities: {
      retentionMs: integer('DELETED_ENTITY_RETENTION_MS', 7 * 24 * 3_600_000, 0, 365 * 24 * 3_600_000),
      purgeIntervalMs: integer('ENTITY_PURGE_INTERVAL_MS', 60_000, 1000, 86_400_000),
      purgeBatch: integer('ENTITY_PURGE_BATCH', 1000, 1, 100_000),
    },
    websocket: {
      maxSubscriptions: integer('WS_MAX_SUBSCRIPTIONS', 20, 1, 1000),
      maxIds: integer('WS_MAX_IDS', 100, 1, 100),
      maxConnectionsPerClient: integer('WS_MAX_CONNECTIONS_PER_CLIENT', 10, 1, 100_000),
      maxMessageBytes: integer('WS_MAX_MESSAGE_BYTES', 64 * 1024, 1024, 16 * 1024 * 1024),
      initTimeoutMs: integer('WS_INIT_TIMEOUT_MS', 5000, 100, 600_000),
      pingIntervalMs: integer('WS_PING_INTERVAL_MS', 15_000, 100, 600_000),
      maxBufferedBytes: integer('WS_MAX_BUFFERED_BYTES', 1024 * 1024, 1024, 1024 * 1024 * 1024),
      stallMs: integer('WS_STALL_MS', 30_000, 100, 3_600_000),
    },
    shutdownDelayMs: integer('SHUTDOWN_DELAY_MS', 0, 0, 120_000),
    // Deletions and erasures are in force everywhere within a second: deaf for 2 heartbeats at most.
    announcementHeartbeatMs: integer('ANNOUNCEMENT_HEARTBEAT_MS', 500, 50, 60_000),
    readinessTimeoutMs: integer('READINESS_TIMEOUT_MS', 2000, 100, 60_000),
    metricsEndpoint: {
      port: env.METRICS_PORT ? integer('METRICS_PORT', 0, 0, 65535) : null,
      host: env.METRICS_HOST || env.HOST || '0.0.0.0',
      path: metricsPath(),
    },
    persistedQueries: {
      ttlS: integer('PERSISTED_QUERY_TTL_S', 7 * 24 * 3600, 60, 365 * 24 * 3600),
      maxDocumentBytes: integer('PERSISTED_QUERY_MAX_DOCUMENT_BYTES', 32 * 1024, 100, 1024 * 1024),
      maxDocuments: integer('PERSISTED_QUERY_MAX_DOCUMENTS', 10_000, 1, 10_000_000),
      maxBytes: integer('PERSISTED_QUERY_MAX_BYTES', 16 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
    },
    executor: oneOf('GRAPHQL_EXECUTOR', ['jit', 'graphql-js'] as const, 'jit'),
    schemaMode: oneOf<SchemaMode>('GRAPHQL_SCHEMA', ['standalone', 'subgraph'], 'standalone'),
    eventLog: oneOf<EventLogKind>('EVENT_LOG', ['redis', 'kafka'], 'redis'),
    kafka: {
      brokers: (env.KAFKA_BROKERS ?? '')
        .split(',')
        .map((b) => b.trim())
        .filter(Boolean),
      topic: env.KAFKA_TOPIC || 'counter-events',
      entityTopic: env.KAFKA_ENTITY_TOPIC || 'entity-lifecycle',
      clientId: env.KAFKA_CLIENT_ID || 'tally',
      groupPrefix: env.KAFKA_GROUP_PREFIX ?? '',
      createTopic: flag('KAFKA_CREATE_TOPIC', false),
      topicPartitions: integer('KAFKA_TOPIC_PARTITIONS', 16, 1, 10_000),
      idempotent: flag('KAFKA_IDEMPOTENT', true),
      // Brokers refuse less than their group.min.session.timeout.ms (6 s by default).
      sessionTimeoutMs: integer('KAFKA_SESSION_TIMEOUT_MS', 10_000, 3000, 600_000),
      ssl: flag('KAFKA_SSL', false),
      sasl: saslConfig(),
    },
  };
  if (config.eventLog === 'kafka' && config.kafka.brokers.length === 0) {
    problems.push('KAFKA_BROKERS is required when EVENT_LOG=kafka (comma-separated host:port list)');
  }
  if (config.http.idleTimeoutMs <= config.limits.executionTimeoutMs) {
    problems.push('HTTP_IDLE_TIMEOUT_MS must be longer than EXECUTION_TIMEOUT_MS (a connection is quiet while its request runs)');
  }
  if (config.http.headersTimeoutMs > config.http.requestTimeoutMs) {
    problems.push('HTTP_HEADERS_TIMEOUT_MS must not exceed HTTP_REQUEST_TIMEOUT_MS');
  }
  if (config.rateLimits.reads.capacity < config.limits.cost) {
    problems.push('RATE_LIMIT_READS must be at least MAX_QUERY_COST (an anonymous query costing the most must fit the budget)');
  }
  if (config.rateLimits.views.capacity < MAX_VIEWS_PER_REQUEST) {
    // A page's budget is taken whole: a page the bucket could never hold would fail, not wait.
    problems.push(`RATE_LIMIT_VIEWS must be at least ${MAX_VIEWS_PER_REQUEST} (a recordViews of the most ids must fit the budget)`);
  }
  if (config.persistedQueries.maxDocumentBytes > config.persistedQueries.maxBytes) {
    problems.push('PERSISTED_QUERY_MAX_DOCUMENT_BYTES must not exceed PERSISTED_QUERY_MAX_BYTES');
  }
  if (/[{}\s]/.test(config.redisKeyPrefix)) {
    problems.push('REDIS_KEY_PREFIX must not contain braces or whitespace (braces would break hash tags)');
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze(config);
}
