// A stop flag that also cuts short any sleep in progress, so loops exit promptly on shutdown.
export function createStopSignal() {
  let stopped = false;
  const wakers = new Set<() => void>();
  return {
    get stopped() {
      return stopped;
    },
    stop() {
      stopped = true;
      for (const wake of wakers) wake();
      wakers.clear();
    },
    /** Resolves after `ms`, or at once when stopped. */
    sleep(ms: number): Promise<void> {
      if (stopped) return Promise.resolve();
      return new Promise((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          wakers.delete(wake);
          resolve();
        };
        const timer = setTimeout(wake, ms);
        wakers.add(wake);
      });
    },
  };
}

export type StopSignal = ReturnType<typeof createStopSignal>;
