// Parent side of bench/lib/liveClientProcess.ts: spawn one load-generator process of the live
// scenario and call its commands over IPC.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { projectPath } from '../../src/paths.js';
import type { Mark, PollReport, SocketReport, SocketSpec } from './liveClientProcess.js';
import { withOpenFiles } from './procStats.js';

export type { Mark, PollReport, SocketReport, SocketSpec };

const compiled = import.meta.url.endsWith('.js');
const entry = compiled
  ? [fileURLToPath(new URL('./liveClientProcess.js', import.meta.url))]
  : ['--import', 'tsx', fileURLToPath(new URL('./liveClientProcess.ts', import.meta.url))];

export interface LiveClients {
  name: string;
  pid: number;
  open(url: string, query: string, sockets: SocketSpec[], record: boolean): Promise<number>;
  mark(): Promise<Mark>;
  sockets(): Promise<SocketReport>;
  closeAll(): Promise<number>;
  startPolling(url: string, query: string, pollers: SocketSpec[], intervalMs: number): Promise<number>;
  stopPolling(): Promise<PollReport>;
  /** Ends the process (its sockets with it); never throws. */
  stop(): Promise<void>;
}

/** `openFiles`: the open-files limit it needs (one per socket or poller, and some). */
export async function startLiveClients(name: string, openFiles: number): Promise<LiveClients> {
  const [command, args] = withOpenFiles(process.execPath, entry, openFiles);
  const child = spawn(command, args, { cwd: projectPath(), stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const pending = new Map<number, { resolve: (v: any) => void; reject: (e: Error) => void }>();
  let nextId = 1;
  const ready = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`live clients ${name} did not start within 30 s`)), 30_000);
    child.on('message', (message: { type?: string; id?: number; result?: unknown; error?: string }) => {
      if (message.type === 'ready') {
        clearTimeout(timer);
        return resolve();
      }
      const waiter = pending.get(message.id!);
      pending.delete(message.id!);
      if (message.error) waiter?.reject(new Error(`live clients ${name}: ${message.error}`));
      else waiter?.resolve(message.result);
    });
    void exited.then((code) => {
      clearTimeout(timer);
      const error = new Error(`live clients ${name} exited with code ${code}`);
      reject(error);
      for (const waiter of pending.values()) waiter.reject(error);
      pending.clear();
    });
  });
  await ready.catch((error: unknown) => {
    child.kill('SIGKILL');
    throw error;
  });

  const call = <T>(cmd: string, callArgs?: unknown) =>
    new Promise<T>((resolve, reject) => {
      if (child.exitCode !== null || child.signalCode !== null) return reject(new Error(`live clients ${name} are gone`));
      const id = nextId++;
      pending.set(id, { resolve, reject });
      child.send({ id, cmd, args: callArgs });
    });

  return {
    name,
    pid: child.pid!,
    open: (url, query, sockets, record) => call('open', { url, query, sockets, record }),
    mark: () => call('mark'),
    sockets: () => call('sockets'),
    closeAll: () => call('closeAll'),
    startPolling: (url, query, pollers, intervalMs) => call('startPolling', { url, query, pollers, intervalMs }),
    stopPolling: () => call('stopPolling'),
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      // Closing the IPC channel makes it drop its sockets and exit; kill it if it does not.
      child.disconnect();
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
