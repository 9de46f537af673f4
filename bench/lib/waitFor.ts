// The bench's one polling wait.
import { setTimeout as sleep } from 'node:timers/promises';

/** Asks `probe` every `everyMs` until it answers other than undefined; throws `what` after `timeoutMs`. */
export async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs: number, everyMs = 250): Promise<T> {
  for (const deadline = Date.now() + timeoutMs; ; await sleep(everyMs)) {
    const found = await probe();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`${what} within ${timeoutMs / 1000} s`);
  }
}

/** Resolves once `read` gave the same answer (by JSON) for `quietMs`, with that answer. */
export function waitForQuiet<T>(what: string, read: () => Promise<T>, quietMs: number, timeoutMs: number): Promise<T> {
  let [last, since] = ['', Date.now()];
  const quiet = async () => {
    const value = await read();
    const now = JSON.stringify(value);
    if (now !== last) [last, since] = [now, Date.now()];
    return Date.now() - since >= quietMs ? value : undefined;
  };
  return waitFor(what, quiet, timeoutMs);
}
