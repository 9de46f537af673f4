// CPU time and resident memory of the processes under test, read from Linux's /proc (the
// whole process: every thread, the main one and libuv's and V8's), and the open-files limit a
// process with thousands of sockets needs.
import { readdirSync, readFileSync } from 'node:fs';
import { Redis } from 'ioredis';

/** USER_HZ, the unit of /proc's times: 100 on every Linux architecture Node runs on. */
const CLOCK_TICKS = 100;

/** utime, stime, cutime, cstime of /proc/<pid>/stat in seconds (the fields after the command name, which may hold spaces). */
function times(pid: number | string): number[] {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat
    .slice(stat.lastIndexOf(')') + 2)
    .split(' ')
    .slice(11, 15)
    .map((ticks) => Number(ticks) / CLOCK_TICKS);
}

/** User + system CPU seconds the process has used so far (10 ms resolution). */
export function cpuSeconds(pid: number): number {
  const [utime, stime] = times(pid);
  return utime! + stime!;
}

/**
 * CPU seconds of every postgres process of this machine, with what the postmaster's exited
 * children used (cutime + cstime), so a backend that closes during a window still counts.
 */
export function postgresCpuSeconds(): number {
  let sum = 0;
  for (const pid of readdirSync('/proc').filter((entry) => /^\d+$/.test(entry))) {
    try {
      if (readFileSync(`/proc/${pid}/comm`, 'utf8').startsWith('postgres')) sum += times(pid).reduce((a, b) => a + b, 0);
    } catch {
      // gone meanwhile
    }
  }
  return sum;
}

/** The pid of the Redis server at `url` when it runs on this machine, else null. */
export async function localRedisPid(url: string): Promise<number | null> {
  const redis = new Redis(url, { lazyConnect: true });
  try {
    await redis.connect();
    const pid = Number(/process_id:(\d+)/.exec(await redis.info('server'))?.[1]);
    return pid > 0 && readFileSync(`/proc/${pid}/comm`, 'utf8').includes('redis') ? pid : null;
  } catch {
    return null;
  } finally {
    redis.disconnect();
  }
}

/** Resolves once the process used less than 0.1 core over a second; false after `timeoutMs`. */
export async function idle(pid: number, timeoutMs = 120_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  let last = cpuSeconds(pid);
  while (Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 1000));
    const cpu = cpuSeconds(pid);
    if (cpu - last < 0.1) return true;
    last = cpu;
  }
  return false;
}

/**
 * Seconds the process's main thread (a Node process's JavaScript) has spent waiting on a run
 * queue: ready to run, no core free for it. NaN where the kernel keeps no scheduler statistics.
 */
export function mainThreadWaitSeconds(pid: number): number {
  try {
    const [, waitNs] = readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'utf8').trim().split(/\s+/).map(Number);
    return waitNs! / 1e9;
  } catch {
    return Number.NaN;
  }
}

/**
 * CPU seconds of the whole machine since boot, all cores: busy (user, nice, system, irq,
 * softirq; guest time is inside user) and stolen by the hypervisor (steal: this VM wanted to
 * run and could not).
 */
export function machineSeconds(): { busy: number; steal: number } {
  const [user, nice, system, , , irq, softirq, steal] = readFileSync('/proc/stat', 'utf8')
    .split('\n')[0]!
    .trim()
    .split(/\s+/)
    .slice(1)
    .map(Number);
  return { busy: (user! + nice! + system! + irq! + softirq!) / CLOCK_TICKS, steal: steal! / CLOCK_TICKS };
}

/** Resident set size in bytes (VmRSS), or NaN once the process is gone. */
export function rssBytes(pid: number): number {
  try {
    const kb = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb === undefined ? Number.NaN : Number(kb) * 1024;
  } catch {
    return Number.NaN;
  }
}

/** This process's open-files limit (children inherit it): soft and hard. */
export function openFilesLimit(): { soft: number; hard: number } {
  const line = /^Max open files\s+(\S+)\s+(\S+)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
  const parse = (x: string | undefined) => (x === undefined || x === 'unlimited' ? Number.POSITIVE_INFINITY : Number(x));
  return { soft: parse(line?.[1]), hard: parse(line?.[2]) };
}

/**
 * The command and arguments that run `command args` with at least `files` open files: as
 * they are when the soft limit allows it, else through `sh -c 'ulimit -n …; exec …'` (the
 * same pid, environment and IPC channel) when the hard limit does; throws, saying what to
 * raise, when it does not.
 */
export function withOpenFiles(command: string, args: readonly string[], files: number): [string, string[]] {
  const { soft, hard } = openFilesLimit();
  if (files <= soft) return [command, [...args]];
  if (files > hard) {
    throw new Error(`a process here needs ${files} open files, above the hard limit ${hard} (ulimit -Hn); raise it and run again`);
  }
  return ['sh', ['-c', `ulimit -n ${files} && exec "$@"`, 'sh', command, ...args]];
}

/** CPU seconds of a scenario's processes now: read at both ends of a window, compared by cpuBetween. */
export function readCpu(pids: { api: number; worker: number; redis: number | null; clients?: readonly number[]; postgres?: boolean }) {
  const own = process.cpuUsage();
  return {
    at: Date.now(),
    api: cpuSeconds(pids.api),
    apiWaited: mainThreadWaitSeconds(pids.api),
    worker: cpuSeconds(pids.worker),
    redis: pids.redis === null ? null : cpuSeconds(pids.redis),
    postgres: pids.postgres ? postgresCpuSeconds() : null,
    /** The load generator: this process and its client processes. */
    generator: (own.user + own.system) / 1e6 + (pids.clients ?? []).reduce((s, pid) => s + cpuSeconds(pid), 0),
    machine: machineSeconds(),
  };
}

/** CPU seconds spent between two readings, and the window's length. */
export function cpuBetween(a: ReturnType<typeof readCpu>, b: ReturnType<typeof readCpu>) {
  const both = (x: number | null, y: number | null) => (x === null || y === null ? null : y - x);
  return {
    windowS: (b.at - a.at) / 1000,
    api: b.api - a.api,
    apiWaited: b.apiWaited - a.apiWaited,
    worker: b.worker - a.worker,
    redis: both(a.redis, b.redis),
    postgres: both(a.postgres, b.postgres),
    generator: b.generator - a.generator,
    machine: b.machine.busy - a.machine.busy,
    steal: b.machine.steal - a.machine.steal,
  };
}
