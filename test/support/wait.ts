// Waiting for eventually consistent state without fixed sleeps: poll until `check` returns
// a value that `done` accepts, or fail with the last value seen.
export async function waitFor<T>(
  check: () => Promise<T>,
  done: (value: T) => boolean,
  { timeoutMs = 10_000, intervalMs = 50, what = 'condition' } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T;
  for (;;) {
    last = await check();
    if (done(last)) return last;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; last: ${JSON.stringify(last)}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** Polls until `check` resolves true. */
export const waitUntil = (check: () => Promise<boolean>, options: { timeoutMs?: number; what?: string } = {}) =>
  waitFor(check, Boolean, { intervalMs: 20, ...options }).then(() => undefined);
