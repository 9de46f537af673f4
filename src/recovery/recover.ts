// Rebuilds Redis from PostgreSQL after Redis lost its data (`npm run recover`):
//
//   1. facts   every active relation fact in PostgreSQL is set again (page by page,
//              progress saved in Redis, so an interrupted run resumes);
//   2. replay  every event in the outboxes (all changes since Redis came back) is applied
//              again in order: they are newer than anything PostgreSQL had, so they win;
//   3. counts  every entity's counters are rebuilt from the facts, with the watermark
//              that keeps in-flight events from being counted twice;
//   4. users   every user's counters are cached again from PostgreSQL (where they are exact);
//   5. done    recovery mode ends: reads go back to Redis.
//
// Every step writes absolute states, so running it again (or resuming it) is safe; the
// service keeps serving meanwhile, reading counts and viewer state from PostgreSQL.
import { createRebuilder } from '../counters/rebuild.js';
import type { UserCounters } from '../counters/userCounters.js';
import type { FactCursor, FactStore } from '../db/facts.js';
import type { UserCounterStore } from '../db/userCounters.js';
import { decodeOutboxEntry } from '../events/outboxCodec.js';
import type { Logger } from '../log.js';
import type { Keys } from '../redis/keys.js';
import type { ScriptedRedis } from '../redis/scripts.js';
import { POST } from '../relations/kinds.js';
import { createRecoveryFlag } from './recoveryFlag.js';

export interface RecoveryProgress {
  step: 'facts' | 'replay' | 'counts' | 'users' | 'done';
  done: number;
  total: number;
}

interface SavedProgress {
  cursor: FactCursor | null;
  done: number;
}

const PAGE = 2000;

export interface RecoveryDeps {
  redis: ScriptedRedis;
  keys: Keys;
  facts: FactStore;
  userStore: UserCounterStore;
  userCounters: UserCounters;
  logger: Logger;
  pageSize?: number;
}

export function createRecovery(deps: RecoveryDeps) {
  const { redis, keys, facts } = deps;
  const pageSize = deps.pageSize ?? PAGE;
  const flag = createRecoveryFlag(redis, keys);
  const rebuilder = createRebuilder({ redis, keys, lockMs: 10_000 });

  /** Sets one relation fact to an absolute state, stored the way setRelation stores it. */
  function setFact(metric: string, entity: { type: string; id: number }, userId: number, active: boolean) {
    return redis.writeFact(
      keys.chunkIndex(metric, entity), keys.prefix, keys.partitionTag(keys.partitionOf(entity)),
      keys.relationBase(metric, entity), userId, active ? 1 : 0,
    );
  }

  async function restoreFacts(restart: boolean, report: (p: RecoveryProgress) => void) {
    const saved = restart ? null : (JSON.parse((await redis.get(keys.recoveryProgress())) ?? 'null') as SavedProgress | null);
    let cursor = saved?.cursor ?? null;
    let done = saved?.done ?? 0;
    const total = await facts.activeTotal();
    report({ step: 'facts', done, total });
    for (;;) {
      const page = await facts.activePage(cursor, pageSize);
      if (page.length === 0) break;
      // Auto-pipelining sends the page's writes together.
      await Promise.all(page.map((f) => setFact(f.kind, { type: f.entityType, id: f.entityId }, f.userId, true)));
      const last = page.at(-1)!;
      cursor = [last.userId, last.entityType, last.entityId, last.kind];
      done += page.length;
      await redis.set(keys.recoveryProgress(), JSON.stringify({ cursor, done } satisfies SavedProgress));
      report({ step: 'facts', done, total: Math.max(total, done) });
    }
  }

  /** Applies every outbox event again, in order, until a read finds nothing newer. */
  async function replayOutboxes(report: (p: RecoveryProgress) => void): Promise<Set<number>> {
    const touched = new Set<number>();
    let done = 0;
    for (let p = 0; p < keys.partitions; p++) {
      let start = '-';
      for (;;) {
        const entries = (await redis.xrange(keys.outbox(p), start, '+', 'COUNT', pageSize)) as [string, string[]][];
        if (entries.length === 0) break;
        // In stream order: a later change of the same fact must land last.
        for (const [id, fields] of entries) {
          const event = decodeOutboxEntry(id, p, fields);
          if (!event) continue;
          await setFact(event.metric, { type: event.entityType, id: event.entityId }, event.userId, event.delta > 0);
          if (event.entityType === POST) touched.add(event.entityId);
        }
        start = `(${entries.at(-1)![0]}`;
        done += entries.length;
        report({ step: 'replay', done, total: done });
      }
    }
    return touched;
  }

  async function rebuildCounts(touched: Set<number>, report: (p: RecoveryProgress) => void) {
    let done = 0;
    const rebuild = async (ids: number[]) => {
      await Promise.all(ids.map((id) => rebuilder.rebuild({ type: POST, id })));
      done += ids.length;
      report({ step: 'counts', done, total: done });
    };
    let after = 0;
    for (;;) {
      const ids = await facts.entityPage(POST, after, pageSize);
      if (ids.length === 0) break;
      await rebuild(ids);
      for (const id of ids) touched.delete(id);
      after = ids.at(-1)!;
    }
    const rest = [...touched];
    for (let i = 0; i < rest.length; i += pageSize) await rebuild(rest.slice(i, i + pageSize));
  }

  async function recacheUsers(report: (p: RecoveryProgress) => void) {
    let after = 0;
    let done = 0;
    for (;;) {
      const rows = await deps.userStore.page(after, pageSize);
      if (rows.length === 0) return;
      await deps.userCounters.cache(rows);
      done += rows.length;
      after = rows.at(-1)!.userId;
      report({ step: 'users', done, total: done });
    }
  }

  return {
    /** Runs (or resumes) a recovery; `restart` ignores saved progress. */
    async run(options: { restart?: boolean; onProgress?: (p: RecoveryProgress) => void } = {}) {
      const report = options.onProgress ?? (() => {});
      await flag.set();
      await restoreFacts(options.restart ?? false, report);
      const touched = await replayOutboxes(report);
      await rebuildCounts(touched, report);
      await recacheUsers(report);
      await flag.clear();
      await redis.del(keys.recoveryProgress());
      report({ step: 'done', done: 0, total: 0 });
    },
  };
}
