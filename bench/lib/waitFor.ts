// The bench's one polling wait: asks `probe` every `everyMs` until it answers something other
// than undefined, and resolves with that; throws `what` after `timeoutMs`.
import { setTimeout as sleep } from 'node:timers/promises';

export async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs: number, everyMs = 250): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = await probe();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`${what} within ${timeoutMs / 1000} s`);
    await sleep(everyMs);
  }
}

/** Resolves once `read` gave the same answer (by JSON) for `quietMs`, with that answer; throws after `timeoutMs`. */
export function waitForQuiet<T>(what: string, read: () => Promise<T>, quietMs: number, timeoutMs: number, everyMs = 250): Promise<T> {
  let last: string | null = null;
  let since = Date.now();
  return waitFor(
    what,
    async () => {
      const value = await read();
      const now = JSON.stringify(value);
      if (now !== last) [last, since] = [now, Date.now()];
      return Date.now() - since >= quietMs ? value : undefined;
    },
    timeoutMs,
    everyMs,
  );
}
