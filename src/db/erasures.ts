// The erasure list: one row per erased user, kept after every other row of theirs is gone
// (only the id and the erasure's progress), so nothing that rebuilds state from history or
// from PostgreSQL brings them back.
import type { Db } from './client.js';

export type ErasureStateName = 'ERASING' | 'DONE';

/** Where an erasure's batches are (saved after each batch, so a crashed worker resumes). */
export interface ErasureProgress {
  phase?: string;
  /** Per-partition outbox ends the fact persister must pass before facts are read. */
  settleAt?: string[];
  /** Keyset position inside the phase. */
  after?: string;
  done?: Record<string, number>;
}

export interface ErasureRow {
  userId: number;
  state: ErasureStateName;
  requestedAt: Date;
  finishedAt: Date | null;
  progress: ErasureProgress;
}

const toRow = (r: { userId: bigint; state: string; requestedAt: Date; finishedAt: Date | null; progress: unknown }): ErasureRow => ({
  userId: Number(r.userId),
  state: r.state as ErasureStateName,
  requestedAt: r.requestedAt,
  finishedAt: r.finishedAt,
  progress: (r.progress ?? {}) as ErasureProgress,
});

export function createErasureStore(db: Db) {
  return {
    /** Records the erasure (once: a second call finds the first); whether this call started it. */
    async start(userId: number): Promise<{ row: ErasureRow; started: boolean }> {
      const created = await db.erasure.createMany({ data: [{ userId }], skipDuplicates: true });
      const row = await db.erasure.findUniqueOrThrow({ where: { userId } });
      return { row: toRow(row), started: created.count === 1 };
    },

    async get(userId: number): Promise<ErasureRow | null> {
      const row = await db.erasure.findUnique({ where: { userId } });
      return row && toRow(row);
    },

    /** Erasures still running, oldest first. */
    async running(): Promise<ErasureRow[]> {
      return (await db.erasure.findMany({ where: { state: 'ERASING' }, orderBy: { requestedAt: 'asc' } })).map(toRow);
    },

    /** Erasures requested since `since` (any state): what another process may not have heard of. */
    async requestedSince(since: Date): Promise<ErasureRow[]> {
      return (await db.erasure.findMany({ where: { requestedAt: { gte: since } } })).map(toRow);
    },

    /** Every user on the erasure list (running or done). */
    async allIds(): Promise<Set<number>> {
      return new Set((await db.erasure.findMany({ select: { userId: true } })).map((r) => Number(r.userId)));
    },

    async saveProgress(userId: number, progress: ErasureProgress): Promise<void> {
      await db.erasure.update({ where: { userId }, data: { progress: progress as object } });
    },

    async finish(userId: number, progress: ErasureProgress): Promise<void> {
      await db.erasure.update({ where: { userId }, data: { state: 'DONE', finishedAt: new Date(), progress: progress as object } });
    },
  };
}

export type ErasureStore = ReturnType<typeof createErasureStore>;
