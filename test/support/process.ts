// Runs Tally's entry points as real child processes (what `npm start` and the CLIs do).
import { type ChildProcess, spawn } from 'node:child_process';
import { projectPath } from '../../src/paths.js';

export interface Spawned {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
  /** Resolves with the first stdout/stderr text matching `pattern`. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
}

// Children still running when the test process ends (a failed test) are killed with it.
const running = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/**
 * Runs a TypeScript entry point in ONE node process (`node --import tsx`), not through the
 * tsx binary, which would put a second process between the test and the code: a SIGKILL
 * must hit the process that holds the locks.
 */
export function spawnTsx(script: string, args: string[], env: Record<string, string>): Spawned {
  const child = spawn(process.execPath, ['--import', 'tsx', projectPath(script), ...args], {
    cwd: projectPath(),
    env: { ...process.env, ...env },
    stdio: 'pipe',
  });
  let text = '';
  const listeners = new Set<() => void>();
  const onData = (chunk: Buffer) => {
    text += chunk.toString();
    for (const listener of listeners) listener();
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  running.add(child);
  const exited = new Promise<number | null>((resolve) =>
    child.on('exit', (code) => {
      running.delete(child);
      resolve(code);
    }),
  );
  return {
    child,
    output: () => text,
    exited,
    waitFor(pattern, timeoutMs = 20_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const match = text.match(pattern);
          if (!match) return;
          listeners.delete(check);
          clearTimeout(timer);
          resolve(match);
        };
        const timer = setTimeout(() => {
          listeners.delete(check);
          reject(new Error(`timed out waiting for ${pattern}; output so far:\n${text}`));
        }, timeoutMs);
        listeners.add(check);
        check();
      });
    },
  };
}

/**
 * Starts `src/main.ts` (what `npm start` runs) in production as `role`, on a free port, with
 * `env` on top (the stores, a JWT secret, settings); resolves once it listens, with its URL.
 */
export async function startTallyProcess(
  role: 'api' | 'worker' | 'all',
  env: Record<string, string>,
): Promise<{ proc: Spawned; url: string }> {
  const proc = spawnTsx('src/main.ts', [], { NODE_ENV: 'production', LOG_LEVEL: 'info', HOST: '127.0.0.1', PORT: '0', ROLE: role, ...env });
  const [, url] = await proc.waitFor(/"url":"(http:\/\/[^"]+)\/graphql"/, 30_000);
  return { proc, url: url! };
}

/**
 * An API process and a worker with `env`, as a split deployment runs them; `stop` ends both
 * (SIGTERM), then `after` (what the test set up for them, such as a proxy).
 */
export async function startApiAndWorker(
  env: Record<string, string>,
  after: () => Promise<void> = async () => {},
): Promise<{ api: string; stop(): Promise<void> }> {
  const started = await Promise.all([startTallyProcess('api', env), startTallyProcess('worker', env)]);
  const processes = started.map((s) => s.proc);
  return {
    api: started[0]!.url,
    async stop() {
      for (const proc of processes) proc.child.kill('SIGTERM');
      await Promise.all(processes.map((p) => p.exited));
      await after();
    },
  };
}
