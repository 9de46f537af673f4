// The bench's one table printer, its ratio lines with their targets, and the results JSON with what they were measured on.
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { dirname } from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';
import { inGroups } from './seed.js';

/** A row of the main table; rtAlone, rtLoaded: Redis round trips per request one at a time and at full concurrency. */
export type TableRow = { scenario: string; server: string; check: string; vs: string } & RowLoad;
type RowLoad = { rps: number; p50Ms: number; p99Ms: number; failures: number; rtAlone?: number; rtLoaded?: number; commands?: number };
/** `target`: at least this (at most when `atMost`); `format` prints value and target when they are not ratios. */
export type Ratio = { label: string; value: number; detail: string; target?: number; atMost?: boolean; format?: (x: number) => string };

const meetsTarget = (r: Ratio) => r.target === undefined || (r.atMost ? r.value <= r.target : r.value >= r.target);
export const times = (x: number) => `${x.toFixed(x >= 10 ? 0 : x >= 1 ? 1 : 2)}×`;
const num = (x: number | undefined, digits = 0) => (x === undefined ? '-' : x.toFixed(digits));

export function columns(header: string[], rows: string[][], right: (i: number) => boolean): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const cell = (v: string, i: number) => (right(i) ? v.padStart(widths[i]!) : v.padEnd(widths[i]!));
  const line = (c: string[]) => c.map(cell).join('  ').trimEnd();
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

export function formatTable(rows: TableRow[], ratios: Ratio[]): string {
  const header = 'scenario|server|req/s|p50 ms|p99 ms|failed|Redis RT/req alone|loaded|cmds/req|check|vs baseline'.split('|');
  const cells = rows.map((r) => [
    ...[r.scenario, r.server, num(r.rps), num(r.p50Ms, 1), num(r.p99Ms, 1), String(r.failures)],
    ...[num(r.rtAlone, 2), num(r.rtLoaded, 2), num(r.commands, 1), r.check, r.vs],
  ]);
  const table = columns(header, cells, (i) => i >= 2 && i <= 8);
  return [table, table.split('\n')[1]!, ...ratios.map(ratioLine)].join('\n');
}

export const targetsOf = (ratios: readonly Ratio[]) =>
  ratios
    .filter((r) => r.target !== undefined)
    .map((r) => ({ label: r.label, value: Number(r.value.toFixed(3)), target: r.target, atMost: r.atMost ?? false, met: meetsTarget(r) }));

export function ratioLine(r: Ratio): string {
  const show = r.format ?? times;
  const target =
    r.target === undefined ? '' : `  [target ${r.atMost ? '≤' : '≥'} ${show(r.target)}: ${meetsTarget(r) ? 'met' : 'NOT MET'}]`;
  return `${r.label} = ${show(r.value)}${target}  (${r.detail})`;
}

export const versus = (label: string, run: Throughput, base: Throughput, target?: number, extra = ''): Ratio => ({
  label,
  value: run.rps / base.rps,
  detail: `req/s; p99 ${run.p99Ms} ms vs ${base.p99Ms} ms${extra}`,
  ...(target !== undefined && { target }),
});
type Throughput = { rps: number; p99Ms: number };

type PerRequest = { roundTrips: number; commands: number } | null;
export const redisCells = (alone: PerRequest, loaded: PerRequest) => ({
  ...(alone && { rtAlone: alone.roundTrips }),
  ...(loaded && { rtLoaded: loaded.roundTrips, commands: loaded.commands }),
});

export async function writeResults(path: string, results: unknown): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, `${JSON.stringify(results, null, 2)}\n`);
}

export const loadAverage = () => os.loadavg().map((x) => Number(x.toFixed(2)));

export async function redisSettings(redis: Redis, names: string[]) {
  const version = /redis_version:(\S+)/.exec(await redis.info('server'))?.[1] ?? 'unknown';
  return { version, ...Object.fromEntries(inGroups((await redis.call('CONFIG', 'GET', ...names)) as string[], 2)) };
}

export async function machineInfo(databaseUrl: string, redisUrl: string) {
  const redis = new Redis(redisUrl);
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    const settings = async (names: string[]) =>
      Object.fromEntries(await Promise.all(names.map(async (name) => [name, (await db.query(`SHOW ${name}`)).rows[0]?.[name] as string])));
    const [cpus, platform] = [os.cpus(), `${os.platform()} ${os.release()} ${os.arch()}`];
    return {
      ...{ date: new Date().toISOString(), node: process.version, cpus: cpus.length, cpuModel: cpus[0]?.model ?? 'unknown', platform },
      ...{ memoryGiB: Math.round(os.totalmem() / 2 ** 30), loadAverageStart: loadAverage() },
      redis: await redisSettings(redis, ['appendonly', 'appendfsync', 'save']),
      postgres: { version: (await settings(['server_version'])).server_version, ...(await settings(['synchronous_commit', 'fsync'])) },
    };
  } finally {
    redis.disconnect();
    await db.end();
  }
}
