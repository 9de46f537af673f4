// The faults, one row each. A fault runs while the load runs (at a fraction of it), or
// between two load phases; it returns when it is over, and after a Redis data loss also how
// to learn what Tally could still know (read once the load is over).
import { cpSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { freePort } from '../support/redisServer.js';
import { readPgFacts } from './checks.js';
import { gql } from './client.js';
import { type Deployment, JWT_SECRET } from './deployment.js';
import { readTopicFacts, rewindGroups } from './kafka.js';
import { startOwnedRedis } from './redisProcess.js';
import { createTallyProcess } from './tallyProcess.js';
import { type FactKey, factKey, type GroundTruth, type Loss } from './truth.js';
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
  inject(ctx: FaultContext): Promise<FaultResult>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
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
  await dep.redis.shutdownNoSave();
  // With EVENT_LOG=redis the persister reads the lost Redis: PostgreSQL is frozen once the
  // transaction in flight (if any) commits. With Kafka it may still write from the topic.
  const snapshot = await settledPgFacts(dep, 5000);
  await sleep(Math.max(0, 1000 - (Date.now() - at)));
  const restartAt = Date.now();
  await dep.redis.restart();
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
  await dep.redis.kill();
  const copy = join(ctx.workDir, 'aof-at-kill');
  cpSync(join(ctx.workDir, 'aof'), copy, { recursive: true });
  const restartAt = Date.now();
  await dep.redis.restart();
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
    const PAGE = 'query($ids: [ID!]!) { posts(ids: $ids) { id myState { liked faved } } }';
    for (const user of actors.users) {
      const page = await gql<{ id: string; myState: { liked: boolean; faved: boolean } }[]>(
        reader.url,
        PAGE,
        { ids: actors.postIds.map(String) },
        { token: actors.tokens.get(user)!, field: 'posts' },
      );
      if (!page.ok) throw new Error(`reading the AOF copy failed: ${page.code} ${page.message}`);
      for (const p of page.data) {
        known.set(factKey(user, Number(p.id), 'LIKE'), p.myState.liked);
        known.set(factKey(user, Number(p.id), 'FAV'), p.myState.faved);
      }
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
    title: 'Redis SHUTDOWN NOSAVE after the load converged, restarted empty, then unlikes and likes',
    when: 'between-phases',
    inject: loseRedisData,
  },
  {
    name: 'redis-pause',
    title: 'Redis CLIENT PAUSE 3000 ALL mid-load',
    when: 'mid-load',
    at: 0.3,
    async inject({ dep }) {
      await dep.redis.admin((r) => r.call('CLIENT', 'PAUSE', '3000', 'ALL'));
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
    name: 'sds-corruption',
    title: "posts' SDS counters overwritten with garbage every 250 ms for 3 s",
    when: 'mid-load',
    at: 0.3,
    async inject({ dep, actors, note }) {
      let writes = 0;
      const until = Date.now() + 3000;
      await dep.redis.admin(async (redis) => {
        while (Date.now() < until) {
          for (const id of actors.postIds) {
            // A wrong-length string (the SDS is 20 bytes): malformed, never a plausible count.
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
        dep.redis.admin(async (redis) => {
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
];

export const FAULT_NAMES = FAULTS.map((f) => f.name);
