// The memory scenario's Redis side: keys found by SCAN, their MEMORY USAGE and OBJECT
// ENCODING read 1,000 per pipeline, layouts written one pipeline per group.
import type { Redis } from 'ioredis';

export type Pipeline = ReturnType<Redis['pipeline']>;

export async function scanKeys(redis: Redis, pattern: string): Promise<string[]> {
  const found: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    found.push(...batch);
    cursor = next;
  } while (cursor !== '0');
  return found;
}

/** Runs `command` for every key, 1,000 per pipeline; the replies in key order. */
export async function perKey<T>(redis: Redis, names: readonly string[], command: (key: string) => (string | number)[]): Promise<T[]> {
  const replies: T[] = [];
  for (let i = 0; i < names.length; i += 1000) {
    const pipeline = redis.pipeline();
    for (const key of names.slice(i, i + 1000)) pipeline.call(...(command(key) as [string, ...(string | number)[]]));
    for (const [error, reply] of (await pipeline.exec())!) {
      if (error) throw error;
      replies.push(reply as T);
    }
  }
  return replies;
}

export const memoryOf = async (redis: Redis, names: readonly string[]) =>
  (await perKey<number | null>(redis, names, (key) => ['MEMORY', 'USAGE', key, 'SAMPLES', 0])).reduce<number>((s, b) => s + (b ?? 0), 0);

export async function unlinkAll(redis: Redis, names: readonly string[]) {
  for (let i = 0; i < names.length; i += 1000) await redis.unlink(...names.slice(i, i + 1000));
}

/** Bytes of `names` and their count by encoding (added to `encodings`), then deleted. */
export async function measureAndDelete(redis: Redis, names: string[], encodings: Record<string, number>): Promise<number> {
  const bytes = await memoryOf(redis, names);
  for (const encoding of await perKey<string>(redis, names, (key) => ['OBJECT', 'ENCODING', key])) {
    encodings[encoding] = (encodings[encoding] ?? 0) + 1;
  }
  await unlinkAll(redis, names);
  return bytes;
}

/** Writes each group in one pipeline; the keys written. */
export async function build<T>(redis: Redis, groups: T[][], write: (pipeline: Pipeline, item: T) => string[]): Promise<string[]> {
  const written = new Set<string>();
  for (const group of groups) {
    const pipeline = redis.pipeline();
    for (const item of group) for (const key of write(pipeline, item)) written.add(key);
    for (const [error] of (await pipeline.exec())!) if (error) throw error;
  }
  return [...written];
}

export const inGroups = <T>(items: readonly T[], size: number) =>
  Array.from({ length: Math.ceil(items.length / size) }, (_, i) => items.slice(i * size, (i + 1) * size));
