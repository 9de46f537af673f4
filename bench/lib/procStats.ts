// The bench's one /proc reader: CPU time and memory of whole processes (every thread), and open-files limits.
import { readdirSync, readFileSync } from 'node:fs';
import { Redis } from 'ioredis';

const CLOCK_TICKS = 100; // USER_HZ
const read = (path: string) => readFileSync(path, 'utf8');
const orNaN = (f: () => number) => {
  try {
    return f();
  } catch {
    return Number.NaN; // the process is gone
  }
};

/** utime + stime in seconds, and with `children` cutime + cstime too (the fields follow the command name, which may hold spaces). */
export function cpuSeconds(pid: number | string, children = false): number {
  const stat = read(`/proc/${pid}/stat`);
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return fields.slice(11, children ? 15 : 13).reduce((sum, ticks) => sum + Number(ticks) / CLOCK_TICKS, 0);
}

const postgresCpuSeconds = () =>
  readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .map((pid) => orNaN(() => (read(`/proc/${pid}/comm`).startsWith('postgres') ? cpuSeconds(pid, true) : 0)))
    .reduce((sum, cpu) => (Number.isNaN(cpu) ? sum : sum + cpu), 0);

export async function localRedisPid(url: string): Promise<number | null> {
  const redis = new Redis(url, { lazyConnect: true });
  try {
    await redis.connect();
    const pid = Number(/process_id:(\d+)/.exec(await redis.info('server'))?.[1]);
    return pid > 0 && read(`/proc/${pid}/comm`).includes('redis') ? pid : null;
  } catch {
    return null;
  } finally {
    redis.disconnect();
  }
}

export async function idle(pid: number, timeoutMs = 120_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (let last = cpuSeconds(pid); Date.now() < deadline; ) {
    await new Promise((r) => setTimeout(r, 1000));
    const cpu = cpuSeconds(pid);
    if (cpu - last < 0.1) return true;
    last = cpu;
  }
  return false;
}

/** Seconds the main thread waited on a run queue (ready, no core free); NaN without scheduler statistics. */
const mainThreadWaitSeconds = (pid: number) => orNaN(() => Number(read(`/proc/${pid}/task/${pid}/schedstat`).trim().split(/\s+/)[1]) / 1e9);

function machineSeconds(): { machine: number; steal: number } {
  const [user, nice, system, , , irq, softirq, steal] = read('/proc/stat').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  return { machine: (user! + nice! + system! + irq! + softirq!) / CLOCK_TICKS, steal: steal! / CLOCK_TICKS };
}

export const rssBytes = (pid: number) => orNaN(() => Number(/^VmRSS:\s+(\d+) kB/m.exec(read(`/proc/${pid}/status`))?.[1] ?? NaN) * 1024);

/** This process's open-files limit (children inherit it). */
export function openFilesLimit(): { soft: number; hard: number } {
  const line = /^Max open files\s+(\S+)\s+(\S+)/m.exec(read('/proc/self/limits'));
  const parse = (x: string | undefined) => (x === undefined || x === 'unlimited' ? Number.POSITIVE_INFINITY : Number(x));
  return { soft: parse(line?.[1]), hard: parse(line?.[2]) };
}

/** `command args` with at least `files` open files: as is, or through `sh -c 'ulimit -n …; exec …'` (same pid and IPC). */
export function withOpenFiles(command: string, args: readonly string[], files: number): [string, string[]] {
  const { soft, hard } = openFilesLimit();
  if (files <= soft) return [command, [...args]];
  if (files > hard)
    throw new Error(`a process here needs ${files} open files, above the hard limit ${hard} (ulimit -Hn); raise it and run again`);
  return ['sh', ['-c', `ulimit -n ${files} && exec "$@"`, 'sh', command, ...args]];
}

/** CPU seconds of a scenario's processes now, compared by cpuBetween; `generator` = this process and `clients`. */
export function readCpu(pids: { api: number; worker: number; redis: number | null; clients?: readonly number[]; postgres?: boolean }) {
  const own = process.cpuUsage();
  return {
    ...{ at: Date.now(), api: cpuSeconds(pids.api), apiWaited: mainThreadWaitSeconds(pids.api), worker: cpuSeconds(pids.worker) },
    ...{ redis: pids.redis === null ? null : cpuSeconds(pids.redis), postgres: pids.postgres ? postgresCpuSeconds() : null },
    generator: (own.user + own.system) / 1e6 + (pids.clients ?? []).reduce((s, pid) => s + cpuSeconds(pid), 0),
    ...machineSeconds(),
  };
}

export function cpuBetween(a: ReturnType<typeof readCpu>, b: ReturnType<typeof readCpu>) {
  const { at, ...after } = b;
  const used = Object.entries(after).map(([part, x]) => [part, x === null ? null : x - a[part as keyof typeof after]!]);
  return { windowS: (at - a.at) / 1000, ...(Object.fromEntries(used) as typeof after) };
}
