// Counts writes to a connection's socket. With auto-pipelining every command issued in one
// tick goes out in a single write, so this is the number of round trips the process started
// (tests assert on it; metrics export it).
import type { Redis } from 'ioredis';

type Writable = { write: (...args: unknown[]) => boolean; tallyCounted?: boolean };

export function trackRoundTrips(redis: Redis): { readonly count: number } {
  let count = 0;
  const instrument = () => {
    const stream = (redis as unknown as { stream?: Writable }).stream;
    if (!stream || stream.tallyCounted) return;
    const write = stream.write.bind(stream);
    stream.write = (...args: unknown[]) => {
      count += 1;
      return write(...args);
    };
    stream.tallyCounted = true;
  };
  redis.on('connect', instrument); // every reconnect brings a new socket
  instrument();
  return {
    get count() {
      return count;
    },
  };
}
