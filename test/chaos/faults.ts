// The faults, one row each. A fault runs while the load runs (at a fraction of it), or
// between two load phases; it returns when it is over, and after a Redis data loss also how
// to learn what Tally could still know (read once the load is over).
import { cpSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { freePort } from '../support/redisServer.js';
import { readPgFacts } from './checks.js';
import { gql } from './client.js';
import { CHECKS_APPLICATION_NAME, type Deployment, type DeploymentOptions, JWT_SECRET } from './deployment.js';
import { readTopicFacts, rewindGroups } from './kafka.js';
import { heldOf, MY_STATE_FIELDS, type PostView } from './postView.js';
import { startOwnedRedis } from './redisProcess.js';
import { createTallyProcess } from './tallyProcess.js';
import type { FactKey, GroundTruth, Loss } from './truth.js';
import type { Actors } from './workload.js';

export interface FaultContext {
  dep: Deployment;
  actors: Actors;
  truth: GroundTruth;
  /** A scratch folder of the row's own (AOF files and their copy). */
  workDir: string;
  note(text: string): void;
}

export interface FaultResult {
  endedAt: number;
  /** What the fault saw go wrong while it ran (the row fails with them). */
  problems?: string[];
  /** After a Redis data loss: what Tally could still know, resolved once the load is over. */
  loss?: () => Promise<Loss>;
}

export interface Fault {
  name: string;
  title: string;
  /** mid-load: injected once `at` of the load is done; between-phases: after the load converged, before a second load. */
  when: 'mid-load' | 'between-phases';
  at?: number;
  redisArgs?(workDir: string): string[];
  /** How the row's deployment differs: a Redis Cluster, proxies in front of Redis or PostgreSQL, settings. */
  deployment?: Pick<DeploymentOptions, 'redis' | 'redisVia' | 'pgVia' | 'env'>;
  inject(ctx: FaultContext): Promise<FaultResult>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The single redis-server (every fault but the Cluster's runs on one). */
function ownRedis(dep: Deployment) {
  if (!dep.redis) throw new Error('this fault needs the single redis-server, not a Cluster');
  return dep.redis;
}
const AGG = 'counter-agg';
const FACTS = 'counter-facts';
const RELAY = 'counter-relay';
/** Redis documents everysec as losing up to 1 s of writes, 2 s when fsync falls behind. */
export const AOF_BOUND_MS = 2000;

/** relation_facts once the persister stopped writing to it (two equal reads 250 ms apart). */
async function settledPgFacts(dep: Deployment, capMs: number): Promise<{ facts: Map<FactKey, boolean>; settledMs: number }> {
  const start = Date.now();
  let last = JSON.stringify([...(await readPgFacts(dep))]);
  for (;;) {
    await sleep(250);
    const facts = await readPgFacts(dep);
    const now = JSON.stringify([...facts]);
    if (now === last || Date.now() - start > capMs) return { facts, settledMs: Date.now() - start };
    last = now;
  }
}

/** The fact persister's backlog (events of `counter-facts` pending or undelivered), from a worker's /metrics. */
async function persisterBacklog(dep: Deployment): Promise<number | null> {
  for (const worker of dep.workers) {
    try {
      const text = await (await fetch(`${worker.url}/metrics`, { signal: AbortSignal.timeout(1000) })).text();
      let sum = 0;
      for (const m of text.matchAll(/^tally_event_log_lag\{([^}]*)\} (\d+)/gm))
        if (m[1]!.includes('group="counter-facts"')) sum += Number(m[2]);
      return sum;
    } catch {
      // try the other worker
    }
  }
  return null;
}

/** SHUTDOWN NOSAVE, a snapshot of what PostgreSQL holds, then an empty Redis on the same port. */
async function loseRedisData(ctx: FaultContext): Promise<FaultResult> {
  const { dep } = ctx;
  const backlog = await persisterBacklog(dep);
  const at = Date.now();
  await ownRedis(dep).shutdownNoSave();
  // With EVENT_LOG=redis the persister reads the lost Redis: PostgreSQL is frozen once the
  // transaction in flight (if any) commits. With Kafka it may still write from the topic.
  const snapshot = await settledPgFacts(dep, 5000);
  await sleep(Math.max(0, 1000 - (Date.now() - at)));
  const restartAt = Date.now();
  await ownRedis(dep).restart();
  ctx.note(`fact persister backlog just before the loss: ${backlog ?? 'unknown'} events (tally_event_log_lag, counter-facts)`);
  ctx.note(
    `Redis down ${restartAt - at} ms; PostgreSQL held ${[...snapshot.facts.values()].filter(Boolean).length} active facts at the loss (settled after ${snapshot.settledMs} ms)`,
  );
  return {
    endedAt: Date.now(),
    loss: async () => {
      if (!dep.kafka) return { at, restartAt, known: snapshot.facts, source: 'PostgreSQL at the loss' };
      // Kafka holds every event the relay sent before the loss: the persister writes them
      // after it too, so they are durable knowledge as well (newer than PostgreSQL's copy).
      const topic = await readTopicFacts(dep.kafka.brokers, dep.kafka.topic, restartAt);
      const known = new Map([...snapshot.facts, ...topic]);
      return { at, restartAt, known, source: 'PostgreSQL at the loss + the Kafka topic up to it' };
    },
  };
}

/**
 * Redis with AOF everysec, SIGKILLed and restarted from its AOF. A copy of the files taken
 * before the restart is read later through a throwaway API process: what Redis came back with.
 */
async function killAofRedis(ctx: FaultContext): Promise<FaultResult> {
  const { dep } = ctx;
  const at = Date.now();
  await ownRedis(dep).kill();
  const copy = join(ctx.workDir, 'aof-at-kill');
  cpSync(join(ctx.workDir, 'aof'), copy, { recursive: true });
  const restartAt = Date.now();
  await ownRedis(dep).restart();
  ctx.note(`Redis SIGKILLed, restarted from its AOF after ${restartAt - at} ms`);
  return {
    endedAt: Date.now(),
    loss: async () => {
      const { known, replayable } = await readAofCopy(ctx, copy);
      return { at, restartAt, known, replayable, boundMs: AOF_BOUND_MS, source: 'the AOF Redis restarted from' };
    },
  };
}

async function readAofCopy(ctx: FaultContext, dir: string): Promise<{ known: Map<FactKey, boolean>; replayable: Set<string> }> {
  const { dep, actors } = ctx;
  const side = await startOwnedRedis({ extraArgs: ['--appendonly', 'yes', '--dir', dir], logFile: join(dep.logDir, 'redis-aof-copy.log') });
  const reader = createTallyProcess({
    name: 'aof-reader',
    port: await freePort(),
    env: {
      NODE_ENV: 'production',
      HOST: '127.0.0.1',
      ROLE: 'api',
      DATABASE_URL: dep.database.url,
      REDIS_URL: side.url,
      REDIS_KEY_PREFIX: dep.keys.prefix,
      JWT_SECRET,
      LOG_LEVEL: 'warn',
      RATE_LIMIT_LIST_PAGES: '1000000',
    },
    logFile: join(dep.logDir, 'aof-reader.log'),
  });
  try {
    await reader.start();
    const known = new Map<FactKey, boolean>();
    const PAGE = `query($ids: [ID!]!) { posts(ids: $ids) { id reactionGroups { content count viewerHasReacted } ${MY_STATE_FIELDS} } }`;
    for (const user of actors.users) {
      const page = await gql<PostView[]>(
        reader.url,
        PAGE,
        { ids: actors.postIds.map(String) },
        { token: actors.tokens.get(user)!, field: 'posts' },
      );
      if (!page.ok) throw new Error(`reading the AOF copy failed: ${page.code} ${page.message}`);
      for (const p of page.data) for (const [key, held] of heldOf(user, p).held) known.set(key, held);
    }
    // Operations whose first result survived in the AOF: a retry replays it.
    const replayable = await side.admin(async (redis) => {
      const ops = ctx.truth.acks.map((a) => a.op);
      const pipeline = redis.pipeline();
      for (const op of ops) pipeline.exists(dep.keys.idempotency({ type: 'post', id: op.post }, op.user, op.idempotencyKey));
      const replies = (await pipeline.exec()) ?? [];
      return new Set(ops.filter((_, i) => replies[i]?.[1] === 1).map((op) => op.idempotencyKey));
    });
    return { known, replayable };
  } finally {
    await reader.stop(5000);
    await reader.dispose();
    await side.stop();
  }
}

/** How long the half-open rows stall: longer than any deadline the row's settings give a connection (BullMQ's: command timeout + 10 s). */
const STALL_MS = 15_000;
const COUNTS_AS_OF = 'query($ids: [ID!]!) { posts(ids: $ids) { id counts { asOf } } }';

const sameFacts = (a: Map<FactKey, boolean>, b: Map<FactKey, boolean>) => a.size === b.size && [...a].every(([k, v]) => b.get(k) === v);

/**
 * The proxy in front of Redis or PostgreSQL stalls: every connection open through it stays
 * open and carries nothing (a NAT or proxy that lost its state); new ones work. Before the
 * stall ends (which drops the stalled connections, as such a network does in the end) Tally
 * must have carried on without them, on connections it opened by itself: changes
 * acknowledged, counts flushed, facts persisted. Else the end of the stall fixed it, not Tally.
 */
async function halfOpen(ctx: FaultContext, which: 'redis' | 'pg'): Promise<FaultResult> {
  const { dep, actors, truth, note } = ctx;
  const proxy = dep.proxies[which];
  if (!proxy) throw new Error(`this fault needs the deployment's ${which} through a proxy`);
  const pgAtStall = await readPgFacts(dep);
  const at = Date.now();
  proxy.stall();
  await sleep(STALL_MS);
  // What Tally did meanwhile, seen over the suite's own (direct) connections.
  const acked = truth.acks.filter((a) => a.ackedAt > at).length;
  const counts = await gql<{ counts: { asOf: string | null } }[]>(
    actors.apiUrl,
    COUNTS_AS_OF,
    { ids: actors.postIds.map(String) },
    { field: 'posts', timeoutMs: 5000 },
  );
  const oldestAsOf = counts.ok ? Math.min(...counts.data.map((p) => (p.counts.asOf ? Date.parse(p.counts.asOf) : 0))) : null;
  const persisted = !sameFacts(pgAtStall, await readPgFacts(dep));
  proxy.endStall();
  const problems: string[] = [];
  if (acked === 0) problems.push('no change was acknowledged during the stall');
  if (oldestAsOf === null || oldestAsOf <= at)
    problems.push(
      `no post's counts flushed during the stall (${counts.ok ? `oldest asOf ${new Date(oldestAsOf!).toISOString()}` : counts.message})`,
    );
  if (!persisted) problems.push('relation_facts did not change during the stall');
  note(
    `${which} connections stalled ${STALL_MS / 1000} s: ${acked} changes acknowledged meanwhile; counts flushed up to ${
      oldestAsOf && oldestAsOf > at ? `${((oldestAsOf - at) / 1000).toFixed(1)} s into it` : 'before it'
    }; relation_facts ${persisted ? 'written' : 'not written'} during it`,
  );
  return { endedAt: Date.now(), problems };
}

export const FAULTS: Fault[] = [
  {
    name: 'worker-kill',
    title: 'worker kill -9 mid-load, restarted after 2 s',
    when: 'mid-load',
    at: 0.3,
    async inject({ dep, note }) {
      await dep.workers[0]!.kill9();
      await sleep(2000);
      await dep.workers[0]!.start();
      note('worker-1 killed and back');
      return { endedAt: Date.now() };
    },
  },
  {
    name: 'workers-kill-loop',
    title: 'both workers kill -9, restarted after 2 s, 3 times',
    when: 'mid-load',
    at: 0.1,
    async inject({ dep, note }) {
      for (let round = 1; round <= 3; round++) {
        await Promise.all(dep.workers.map((w) => w.kill9()));
        await sleep(2000);
        await Promise.all(dep.workers.map((w) => w.start()));
        note(`round ${round}: both workers killed and back`);
      }
      return { endedAt: Date.now() };
    },
  },
  {
    name: 'api-kill',
    title: 'API kill -9 mid-load, restarted',
    when: 'mid-load',
    at: 0.3,
    async inject({ dep, note }) {
      const at = Date.now();
      await dep.api.kill9();
      await dep.api.start();
      note(`API down ${Date.now() - at} ms`);
      return { endedAt: Date.now() };
    },
  },
  {
    name: 'redis-loss-mid-load',
    title: 'Redis SHUTDOWN NOSAVE mid-load, restarted empty',
    when: 'mid-load',
    at: 0.3,
    inject: loseRedisData,
  },
  {
    name: 'redis-loss-after-load',
    title: 'Redis SHUTDOWN NOSAVE after the load converged, restarted empty, then every fact unset and set again',
    when: 'between-phases',
    inject: loseRedisData,
  },
  {
    name: 'redis-pause',
    title: 'Redis CLIENT PAUSE 3000 ALL mid-load',
    when: 'mid-load',
    at: 0.3,
    async inject({ dep }) {
      await ownRedis(dep).admin((r) => r.call('CLIENT', 'PAUSE', '3000', 'ALL'));
      await sleep(3000);
      return { endedAt: Date.now() };
    },
  },
  {
    name: 'pg-lock',
    title: 'LOCK TABLE relation_facts ACCESS EXCLUSIVE for 12 s mid-load',
    when: 'mid-load',
    at: 0.2,
    async inject({ dep }) {
      const client = new pg.Client({ connectionString: dep.database.url });
      await client.connect();
      try {
        await client.query('BEGIN');
        await client.query('LOCK TABLE relation_facts IN ACCESS EXCLUSIVE MODE');
        await sleep(12_000);
        await client.query('ROLLBACK');
      } finally {
        await client.end();
      }
      return { endedAt: Date.now() };
    },
  },
  {
    name: 'counters-corruption',
    title: "posts' packed counters overwritten with garbage every 250 ms for 3 s",
    when: 'mid-load',
    at: 0.3,
    async inject({ dep, actors, note }) {
      let writes = 0;
      const until = Date.now() + 3000;
      await ownRedis(dep).admin(async (redis) => {
        while (Date.now() < until) {
          for (const id of actors.postIds) {
            // A wrong-length string (packed counters are whole 4-byte slots): malformed, never a plausible count.
            await redis.set(dep.keys.counters({ type: 'post', id }), 'garbage'.repeat(1 + (writes % 3)));
            writes++;
          }
          await sleep(250);
        }
      });
      note(`${writes} garbage writes`);
      return { endedAt: Date.now() };
    },
  },
  {
    name: 'consumer-rewind',
    title: 'consumer groups rewound to the start of the log mid-load',
    when: 'mid-load',
    at: 0.4,
    async inject({ dep, note }) {
      const streams = Array.from({ length: dep.keys.partitions }, (_, p) => dep.keys.outbox(p));
      const setId = (groups: string[]) =>
        ownRedis(dep).admin(async (redis) => {
          let done = 0;
          for (const stream of streams)
            for (const group of groups)
              done += (await redis.call('XGROUP', 'SETID', stream, group, '0').then(
                () => 1,
                () => 0,
              )) as number;
          return done;
        });
      if (!dep.kafka) {
        note(`XGROUP SETID 0 on ${await setId([AGG, FACTS])} stream groups (${AGG}, ${FACTS})`);
        return { endedAt: Date.now() };
      }
      // Kafka refuses to move a group's offsets while it has members: the consumers stop
      // (cleanly, as an operator would), the offsets go back to the earliest, and the relay's
      // outbox group is rewound too, so Kafka also receives every event a second time.
      await Promise.all(dep.workers.map((w) => w.stop()));
      const { brokers, topic, groupPrefix } = dep.kafka;
      await rewindGroups(brokers, topic, [groupPrefix + AGG, groupPrefix + FACTS]);
      const relayed = await setId([RELAY]);
      await Promise.all(dep.workers.map((w) => w.start()));
      note(
        `workers stopped; Kafka offsets of ${AGG} and ${FACTS} reset to the earliest; ${RELAY} rewound on ${relayed} streams; workers restarted`,
      );
      return { endedAt: Date.now() };
    },
  },
  {
    name: 'redis-aof-kill',
    title: 'Redis (AOF everysec) SIGKILL mid-load, restarted from its AOF',
    when: 'mid-load',
    at: 0.3,
    redisArgs: (workDir) => {
      mkdirSync(join(workDir, 'aof'), { recursive: true });
      return ['--appendonly', 'yes', '--appendfsync', 'everysec', '--dir', join(workDir, 'aof')];
    },
    inject: killAofRedis,
  },
  {
    name: 'redis-half-open',
    title: `the processes' Redis connections half-open for ${STALL_MS / 1000} s mid-load (a proxy stops forwarding on them)`,
    when: 'mid-load',
    at: 0.2,
    // 2 s instead of 5 s: BullMQ's connections give up after it + 10 s, within the stall.
    deployment: { redisVia: 'proxy', env: { REDIS_COMMAND_TIMEOUT_MS: '2000' } },
    inject: (ctx) => halfOpen(ctx, 'redis'),
  },
  {
    name: 'pg-half-open',
    title: `the processes' PostgreSQL connections half-open for ${STALL_MS / 1000} s mid-load (a proxy stops forwarding on them)`,
    when: 'mid-load',
    at: 0.2,
    // 3 s instead of 30 s: a stalled query (and its connection) is given up within the stall.
    deployment: { pgVia: 'proxy', env: { DATABASE_QUERY_TIMEOUT_MS: '3000', DATABASE_CONNECT_TIMEOUT_MS: '3000' } },
    inject: (ctx) => halfOpen(ctx, 'pg'),
  },
  {
    name: 'pg-terminate-backend',
    title: 'every PostgreSQL session of the processes ended (pg_terminate_backend) mid-load, 3 times 1 s apart',
    when: 'mid-load',
    at: 0.3,
    async inject({ dep, note }) {
      // A connection of its own; the checks' pool (named) is spared.
      const client = new pg.Client({ connectionString: dep.database.url });
      await client.connect();
      const ended: number[] = [];
      try {
        for (let round = 0; round < 3; round++) {
          if (round > 0) await sleep(1000);
          const { rows } = await client.query<{ ended: boolean }>(
            `SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity
              WHERE datname = $1 AND pid <> pg_backend_pid() AND application_name IS DISTINCT FROM $2`,
            [dep.database.name, CHECKS_APPLICATION_NAME],
          );
          ended.push(rows.filter((r) => r.ended).length);
        }
      } finally {
        await client.end();
      }
      note(`sessions ended: ${ended.join(', ')}`);
      return { endedAt: Date.now() };
    },
  },
  {
    name: 'redis-client-kill',
    title: 'every Redis connection of the processes killed (CLIENT KILL TYPE normal, pubsub) mid-load, 3 times 1 s apart',
    when: 'mid-load',
    at: 0.3,
    async inject({ dep, note }) {
      const killed = await ownRedis(dep).admin(async (redis) => {
        const counts: string[] = [];
        for (let round = 0; round < 3; round++) {
          if (round > 0) await sleep(1000);
          // SKIPME yes: not this admin connection.
          const normal = await redis.call('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes');
          const pubsub = await redis.call('CLIENT', 'KILL', 'TYPE', 'pubsub', 'SKIPME', 'yes');
          counts.push(`${normal} + ${pubsub}`);
        }
        return counts;
      });
      note(`connections killed (normal + pubsub): ${killed.join(', ')}`);
      return { endedAt: Date.now() };
    },
  },
  {
    name: 'redis-cluster-failover',
    title: 'Redis Cluster (3 masters, a replica each): CLUSTER FAILOVER of one master, then of another, mid-load',
    when: 'mid-load',
    at: 0.2,
    deployment: { redis: 'cluster' },
    async inject({ dep, note }) {
      if (!dep.cluster) throw new Error('this fault needs the deployment on a Redis Cluster');
      for (const shard of [0, 1]) {
        if (shard > 0) await sleep(2000);
        const started = Date.now();
        const { from, to } = await dep.cluster.failover(shard);
        note(`shard ${shard}: master ${from} handed over to its replica ${to} in ${Date.now() - started} ms`);
      }
      return { endedAt: Date.now() };
    },
  },
];

export const FAULT_NAMES = FAULTS.map((f) => f.name);
