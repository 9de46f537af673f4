// Parent side of bench/lib/liveClientProcess.ts: one load-generator process of the live scenario.
import { entryOf, startChild } from './child.js';
import type { Mark, PollReport, SocketReport, SocketSpec } from './liveClientProcess.js';

export type { Mark, PollReport, SocketReport, SocketSpec };
export type LiveClients = Awaited<ReturnType<typeof startLiveClients>>;

/** `openFiles`: the open-files limit it needs (one per socket or poller, and some). */
export async function startLiveClients(name: string, openFiles: number) {
  const child = await startChild(`live clients ${name}`, process.execPath, entryOf('liveClientProcess'), {
    openFiles,
    readyWithinMs: 30_000,
  });
  return {
    name,
    pid: child.pid,
    open: (url: string, query: string, sockets: SocketSpec[], record: boolean) =>
      child.call<number>('open', { url, query, sockets, record }),
    mark: () => child.call<Mark>('mark'),
    sockets: () => child.call<SocketReport>('sockets'),
    closeAll: () => child.call<number>('closeAll'),
    startPolling: (url: string, query: string, pollers: SocketSpec[], intervalMs: number) =>
      child.call<number>('startPolling', { url, query, pollers, intervalMs }),
    stopPolling: () => child.call<PollReport>('stopPolling'),
    /** Ends the process (its sockets with it); never throws. */
    stop: child.stop,
  };
}
