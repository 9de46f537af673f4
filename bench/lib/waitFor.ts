// The bench's one wait for an answer to stop changing (test/support/wait.ts polls for the rest).
import { waitFor } from '../../test/support/wait.js';

/** Resolves once `read` gave the same answer (by JSON) for `quietMs`, with that answer; rejects after `timeoutMs`. */
export async function waitForQuiet<T>(read: () => Promise<T>, quietMs: number, timeoutMs: number): Promise<T> {
  let [last, since] = ['', Date.now()];
  const quiet = async () => {
    const value = await read();
    const now = JSON.stringify(value);
    if (now !== last) [last, since] = [now, Date.now()];
    return { value, quiet: Date.now() - since >= quietMs };
  };
  return (await waitFor(quiet, (x) => x.quiet, { timeoutMs, intervalMs: 250, what: 'an answer that stops changing' })).value;
}
