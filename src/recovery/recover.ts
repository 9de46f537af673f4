// Rebuilds Redis from PostgreSQL after Redis lost its data. Started automatically by a
// worker process that notices (src/recovery/recoveryWatch.ts), or by `npm run recover`; one
// process runs it at a time (a lock in Redis), and its progress is saved, so whoever takes
// over after a crash resumes where it stopped:
//
//   1. entities  every entity with facts in PostgreSQL is restored (src/recovery/entityRestore.ts:
//                its facts, then its packed counters from them), unless a write restored it already;
//   2. users     every user's counters are cached again from PostgreSQL (where they are exact);
//   3. done      every partition is marked ready: Redis answers for all of them again.
//
// The service keeps serving meanwhile: an entity not restored yet is read from PostgreSQL,
// and a write restores its entity first.

import { randomUUID } from 'node:crypto';
import type { UserCounters } from '../counters/userCounters.js';
import type { FactStore } from '../db/facts.js';
import type { UserCounterStore } from '../db/userCounters.js';
import type { EntityRef, EntityType } from '../domain/entities.js';
import { TYPES } from '../domain/kinds.js';
import type { Logger } from '../log.js';
import type { Keys } from '../redis/keys.js';
import { createScripts, type ScriptedRedis } from '../redis/scripts.js';
import type { EntityRestorer } from './entityRestore.js';
import type { Readiness } from './readiness.js';

export interface RecoveryProgress {
  step: 'entities' | 'users' | 'done';
  done: number;
  total: number;
}

export type RecoveryOutcome = 'recovered' | 'not needed' | 'running elsewhere' | 'stopped';

/** Where the entity step is: the type being walked and the last id restored. */
interface SavedProgress {
  type: EntityType;
  after: number;
  done: number;
  total: number;
}

const PAGE = 500;
const CONCURRENCY = 8;
const LOCK_MS = 30_000;
/** Entity types with facts, in the order the entity step walks them (the registry's). */
const ENTITY_TYPES: EntityType[] = TYPES.all.map((type) => type.name);

export interface RecoveryDeps {
  redis: ScriptedRedis;
  keys: Keys;
  facts: FactStore;
  readiness: Readiness;
  restorer: EntityRestorer;
  userStore: UserCounterStore;
  userCounters: UserCounters;
  logger: Logger;
  /** See EntityRestoreDeps.durableLogSettled: the walk over PostgreSQL's entities waits for it. */
  durableLogSettled: () => Promise<boolean>;
  pageSize?: number | undefined;
}

/** Thrown between pages when the process shuts down: the saved progress lets anyone resume. */
class Stopped extends Error {}

export function createRecovery(deps: RecoveryDeps) {
  const { redis, keys, facts, readiness } = deps;
  const scripts = createScripts(redis, keys);
  const pageSize = deps.pageSize ?? PAGE;

  async function restoreEntities(
    notReady: Set<number>,
    restart: boolean,
    renew: () => Promise<void>,
    report: (p: RecoveryProgress) => void,
  ) {
    const saved = restart ? null : (JSON.parse((await redis.get(keys.recoveryProgress())) ?? 'null') as SavedProgress | null);
    let done = saved?.done ?? 0;
    const total = saved?.total ?? (await facts.entityTotal());
    report({ step: 'entities', done, total });
    for (const type of ENTITY_TYPES.slice(saved ? ENTITY_TYPES.indexOf(saved.type) : 0)) {
      let after = saved?.type === type ? saved.after : 0;
      for (;;) {
        const ids = await facts.entityPage(type, after, pageSize);
        if (ids.length === 0) break;
        const entities: EntityRef[] = ids.map((id) => ({ type, id })).filter((e) => notReady.has(keys.partitionOf(e)));
        for (let i = 0; i < entities.length; i += CONCURRENCY) {
          await Promise.all(entities.slice(i, i + CONCURRENCY).map((e) => deps.restorer.restore(e, 60_000)));
        }
        after = ids.at(-1)!;
        done += ids.length;
        await redis.set(keys.recoveryProgress(), JSON.stringify({ type, after, done, total } satisfies SavedProgress));
        await renew();
        report({ step: 'entities', done, total: Math.max(total, done) });
      }
    }
  }

  async function recacheUsers(renew: () => Promise<void>, report: (p: RecoveryProgress) => void) {
    let after = 0;
    let done = 0;
    for (;;) {
      const rows = await deps.userStore.page(after, pageSize);
      if (rows.length === 0) return;
      await deps.userCounters.cache(rows);
      done += rows.length;
      after = rows.at(-1)!.userId;
      await renew();
      report({ step: 'users', done, total: done });
    }
  }

  return {
    /**
     * Runs (or resumes) a recovery if Redis needs one and no other process is running one;
     * `restart` ignores saved progress.
     */
    async run(
      options: { restart?: boolean; onProgress?: (p: RecoveryProgress) => void; shouldStop?: () => boolean } = {},
    ): Promise<RecoveryOutcome> {
      const report = options.onProgress ?? (() => {});
      const notReady = new Set(await readiness.notReady());
      if (notReady.size === 0) return 'not needed';
      const lock = keys.recoveryLock();
      const holder = randomUUID();
      if ((await redis.set(lock, holder, 'PX', LOCK_MS, 'NX')) !== 'OK') return 'running elsewhere';
      // Between pages: keep the lock, and stop there when the process shuts down.
      const renew = async () => {
        if (options.shouldStop?.()) throw new Stopped();
        if (!(await scripts.renewLease(lock, holder, LOCK_MS))) throw new Error('lost the recovery lock');
      };
      try {
        const started = Date.now();
        deps.logger.warn({ partitions: [...notReady] }, 'recovering Redis from PostgreSQL');
        // Entities whose facts are still on their way to PostgreSQL would be missed by the walk.
        while (!(await deps.durableLogSettled())) {
          await renew();
          await new Promise((resolve) => setTimeout(resolve, 200));
        }
        await restoreEntities(notReady, options.restart ?? false, renew, report);
        await recacheUsers(renew, report);
        await readiness.markAllReady();
        await redis.del(keys.recoveryProgress());
        deps.logger.warn({ ms: Date.now() - started }, 'recovered: Redis answers for every partition again');
        report({ step: 'done', done: 0, total: 0 });
        return 'recovered';
      } catch (error) {
        if (error instanceof Stopped) return 'stopped';
        throw error;
      } finally {
        await scripts.releaseLease(lock, holder);
      }
    },

    /** The saved progress of a recovery running (or interrupted) anywhere, for `npm run recover` to follow. */
    async progress(): Promise<{ done: number; total: number } | null> {
      const saved = await redis.get(keys.recoveryProgress());
      if (saved === null) return null;
      const { done, total } = JSON.parse(saved) as SavedProgress;
      return { done, total };
    },
  };
}

export type Recovery = ReturnType<typeof createRecovery>;
