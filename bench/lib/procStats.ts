// CPU time and resident memory of a process under test, read from Linux's /proc (the whole
// process: every thread, the main one and libuv's and V8's), and the open-files limit a
// process with thousands of sockets needs.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

let ticks: number | null = null;
/** Clock ticks per second of /proc/<pid>/stat's times (USER_HZ, 100 on Linux). */
function clockTicks(): number {
  if (ticks === null) {
    try {
      ticks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticks = 100;
    }
  }
  return ticks;
}

/** User + system CPU seconds the process has used so far (10 ms resolution). */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name, which is in parentheses and may hold spaces: state is
  // field 3, utime field 14 and stime field 15 of the whole line.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / clockTicks();
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
  return { busy: (user! + nice! + system! + irq! + softirq!) / clockTicks(), steal: steal! / clockTicks() };
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
