// Group commit: batches that arrive while a write is in flight go together in the next one.
// The fact persister's partition loops each hand over a few facts at a time; written one
// transaction per batch, a commit (and its WAL flush) per handful of facts made PostgreSQL
// the busiest process of an account erasure. Idle, a batch is written at once; busy, the
// batches waiting share one transaction of at most `maxItems`.

interface Waiting<T> {
  items: T[];
  resolve: () => void;
  reject: (error: unknown) => void;
}

/** Returns `join(items)`: resolves once a write holding `items` succeeded, rejects if it failed. */
export function createGroupCommit<T>(write: (items: T[]) => Promise<void>, maxItems: number) {
  const queue: Waiting<T>[] = [];
  let writing = false;

  async function drain() {
    writing = true;
    while (queue.length > 0) {
      const group: Waiting<T>[] = [queue.shift()!];
      let size = group[0]!.items.length;
      while (queue.length > 0 && size + queue[0]!.items.length <= maxItems) {
        const next = queue.shift()!;
        size += next.items.length;
        group.push(next);
      }
      try {
        await write(group.flatMap((w) => w.items));
        for (const w of group) w.resolve();
      } catch (error) {
        for (const w of group) w.reject(error);
      }
    }
    writing = false;
  }

  return (items: T[]): Promise<void> =>
    new Promise((resolve, reject) => {
      queue.push({ items, resolve, reject });
      if (!writing) void drain();
    });
}
