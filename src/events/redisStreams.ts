// The embedded event log: one Redis stream per partition (the outbox the Lua write script
// appends to), read through consumer groups. Each partition is read by one member at a
// time (see partitionAssignment); a batch is acknowledged only after its handler resolved;
// a new owner first reclaims what the previous one left pending (XAUTOCLAIM), in order.
// Reads are fenced by the lease (lua/readLeasedStream-2.lua): a member that lost it without
// noticing yet reads nothing more, so a partition's entries are taken by one member, in order.
import type { Logger } from 'pino';
import type { RedisClient } from '../redis/client.js';
import { callOnKey } from '../redis/keyedCommand.js';
import { type Keys, META } from '../redis/keys.js';
import { createScripts, type ScriptedRedis, type StreamEntry } from '../redis/scripts.js';
import { decodeOutboxEntry } from './outboxCodec.js';
import { trimOutbox } from './outboxTrimmer.js';
import { createPartitionAssignment } from './partitionAssignment.js';
import { createStopSignal } from './stopSignal.js';
import type { BatchHandler, EventLog, GroupLag, LogEntry, Subscription } from './types.js';

export const OUTBOX_SOURCE = 'ob';
const HISTORY_PAGE = 2000;

export interface RedisStreamsOptions {
  redis: ScriptedRedis;
  keys: Keys;
  logger: Logger;
  batchSize: number;
  leaseMs: number;
  /** This process's consumer name in every group (see Config.memberId). */
  memberId: string;
  retentionMs: number;
  /** Wait between reads of an idle partition. */
  idlePollMs?: number;
  trimIntervalMs?: number;
}

const ERROR_BACKOFF_MS = [100, 500, 2000, 5000];

export function createRedisStreamsLog(options: RedisStreamsOptions): EventLog {
  const { redis, keys, logger, batchSize } = options;
  const idlePollMs = options.idlePollMs ?? 50;
  const trimIntervalMs = options.trimIntervalMs ?? 10_000;

  async function ensureGroup(stream: string, group: string) {
    try {
      // From 0: a group created after events were written still sees every retained one.
      await callOnKey(redis, stream, 'XGROUP', 'CREATE', stream, group, '0', 'MKSTREAM');
    } catch (error) {
      if (!String((error as Error).message).startsWith('BUSYGROUP')) throw error;
    }
  }

  function toEntries(partition: number, raw: StreamEntry[]): { entries: LogEntry[]; ids: string[] } {
    const entries: LogEntry[] = [];
    for (const [id, fields] of raw) {
      const event = decodeOutboxEntry(id, partition, fields);
      if (event) entries.push({ position: id, event });
      else logger.error({ partition, id }, 'skipping an outbox entry Tally cannot decode');
    }
    return { entries, ids: raw.map(([id]) => id) };
  }

  function subscribe(group: string, handler: BatchHandler): Subscription {
    // The same name after a restart (MEMBER_ID): its pending entries and leases are its own.
    const consumer = options.memberId;

    /** Works one partition until stopped: reclaim what is pending, then read new entries. */
    function runPartition(partition: number): () => Promise<void> {
      const stream = keys.outbox(partition);
      const signal = createStopSignal();
      let lastTrim = 0;

      const scripts = createScripts(redis, keys);
      const read = (what: { claim: string } | 'new') =>
        scripts.readLeasedStream({ partition, group, member: consumer, read: what, count: batchSize });

      /** What the previous owner left pending, from `cursor`; null when the lease is not ours (any more). */
      async function reclaimPending(cursor: string): Promise<{ next: string; raw: StreamEntry[] } | null> {
        const claimed = await read({ claim: cursor });
        if (!claimed) return null;
        // Entries trimmed while pending come back as ids only: nothing left to handle.
        if (claimed.deleted.length) await redis.xack(stream, group, ...claimed.deleted);
        return { next: claimed.next ?? '0-0', raw: claimed.entries.filter((e): e is StreamEntry => Boolean(e)) };
      }

      /** Entries never delivered to the group; null when the lease is not ours (any more). */
      async function readNew(): Promise<StreamEntry[] | null> {
        return (await read('new'))?.entries ?? null;
      }

      async function loop() {
        let reclaimCursor: string | null = '0-0'; // null once every pending entry was handled
        let failures = 0;
        while (!signal.stopped) {
          try {
            let raw: StreamEntry[] | null;
            if (reclaimCursor !== null) {
              const claimed = await reclaimPending(reclaimCursor);
              raw = claimed?.raw ?? null;
              if (claimed) reclaimCursor = claimed.next === '0-0' ? null : claimed.next;
            } else {
              raw = await readNew();
            }
            if (raw === null) {
              // Another member holds the lease: read nothing until it is ours again (the
              // assignment gives the partition up at its next look), and then start by
              // reclaiming what is pending.
              reclaimCursor = '0-0';
              await signal.sleep(idlePollMs);
              continue;
            }
            if (raw.length > 0) {
              const { entries, ids } = toEntries(partition, raw);
              if (entries.length > 0) await handler({ partition, source: OUTBOX_SOURCE, entries });
              await redis.xack(stream, group, ...ids);
            }
            failures = 0;
            if (Date.now() - lastTrim > trimIntervalMs) {
              lastTrim = Date.now();
              if ((await trimOutbox(redis, stream, options.retentionMs)) > 0) {
                await redis.hset(keys.meta(), META.history, 'trimmed');
              }
            }
            if (raw.length < batchSize && reclaimCursor === null) await signal.sleep(idlePollMs);
          } catch (error) {
            if (String((error as Error).message).startsWith('NOGROUP')) {
              // Redis lost its data (or the stream was deleted): join again and go on.
              logger.warn({ group, partition }, 'consumer group missing; creating it again');
              await ensureGroup(stream, group).catch(() => {});
            } else {
              logger.error({ err: error, group, partition }, 'event batch failed; will retry from the pending entries');
            }
            reclaimCursor = '0-0';
            await signal.sleep(ERROR_BACKOFF_MS[Math.min(failures++, ERROR_BACKOFF_MS.length - 1)]!);
          }
        }
      }

      const running = loop();
      return async () => {
        signal.stop();
        await running;
      };
    }

    const assignment = createPartitionAssignment({
      redis,
      keys,
      group,
      memberId: consumer,
      leaseMs: options.leaseMs,
      logger,
      onAssigned: runPartition,
    });

    return {
      async start() {
        for (let p = 0; p < keys.partitions; p++) await ensureGroup(keys.outbox(p), group);
        await assignment.start();
      },
      stop: () => assignment.stop(),
      assignedPartitions: () => assignment.owned(),
    };
  }

  const lag = () => outboxLag(redis, keys);

  async function readHistory(onEntries: (partition: number, entries: LogEntry[]) => Promise<void>) {
    for (let partition = 0; partition < keys.partitions; partition++) {
      let start = '-';
      for (;;) {
        const raw = (await redis.xrange(keys.outbox(partition), start, '+', 'COUNT', HISTORY_PAGE)) as StreamEntry[];
        if (raw.length === 0) break;
        await onEntries(partition, toEntries(partition, raw).entries);
        start = `(${raw.at(-1)![0]}`;
      }
    }
  }

  return {
    subscribe,
    lag,
    readHistory,
    historyComplete: async () => (await redis.hget(keys.meta(), META.history)) === 'complete',
    close: async () => {}, // uses the connection it was given
  };
}

/** Every group's lag on every outbox stream (XINFO GROUPS): what its members hold and have not read. */
export async function outboxLag(redis: RedisClient, keys: Keys): Promise<GroupLag[]> {
  const perPartition = await Promise.all(
    Array.from({ length: keys.partitions }, async (_, partition) => {
      const stream = keys.outbox(partition);
      if ((await redis.exists(stream)) === 0) return [];
      const groups = (await callOnKey(redis, stream, 'XINFO', 'GROUPS', stream)) as (string | number | null)[][];
      return groups.map((flat) => {
        const g: Record<string, string | number | null> = {};
        for (let i = 0; i + 1 < flat.length; i += 2) g[String(flat[i])] = flat[i + 1] ?? null;
        return {
          group: String(g.name),
          partition,
          pending: Number(g.pending),
          undelivered: g.lag === null || g.lag === undefined ? null : Number(g.lag),
        };
      });
    }),
  );
  return perPartition.flat();
}
