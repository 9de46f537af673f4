// One subscription's queue of pushes, as the async iterator graphql-ws reads. It holds at
// most one push per entity: a newer push for an entity whose last one the socket has not
// taken yet replaces it (drop to latest), so a slow client costs bounded memory and still
// ends on the newest values. A push left waiting longer than `stallMs` means the socket
// does not read: `onStall` is called (the socket is closed with 1013).

export interface LiveStreamOptions<T> {
  stallMs: number;
  /** Whether a push may still go out when the socket takes it (an erasure may have begun since it was queued). */
  stillVisible?: (value: T) => boolean;
  /** A push the socket took (it is being sent). */
  onTaken?: (value: T) => void;
  onStall: () => void;
  /** A push replaced before the socket took it. */
  onDropped?: () => void;
  /** Called once when the subscription ends (the client completed it, or the socket closed). */
  onEnd: () => void;
}

export class LiveStream<T> implements AsyncIterableIterator<T> {
  private readonly pending = new Map<number, T>();
  private waiting: ((result: IteratorResult<T>) => void) | null = null;
  private ended = false;
  private stalledSince: number | null = null;

  constructor(private readonly options: LiveStreamOptions<T>) {}

  /** Queues the newest push for entity `id`. */
  offer(id: number, value: T): void {
    if (this.ended || !this.visible(value)) return;
    if (this.waiting) {
      const resolve = this.waiting;
      this.waiting = null;
      this.options.onTaken?.(value);
      resolve({ value, done: false });
      return;
    }
    if (this.pending.delete(id)) this.options.onDropped?.();
    this.pending.set(id, value);
    this.stalledSince ??= Date.now();
  }

  /** Whether a push has waited for the socket longer than allowed (checked by the registry). */
  checkStall(now: number): void {
    if (this.stalledSince !== null && now - this.stalledSince > this.options.stallMs) this.options.onStall();
  }

  next(): Promise<IteratorResult<T>> {
    for (const [id, value] of this.pending) {
      this.pending.delete(id);
      if (!this.visible(value)) continue;
      this.stalledSince = this.pending.size > 0 ? Date.now() : null;
      this.options.onTaken?.(value);
      return Promise.resolve({ value, done: false });
    }
    this.stalledSince = null;
    if (this.ended) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve) => {
      this.waiting = resolve;
    });
  }

  private visible(value: T): boolean {
    return this.options.stillVisible?.(value) ?? true;
  }

  return(): Promise<IteratorResult<T>> {
    this.end();
    return Promise.resolve({ value: undefined, done: true });
  }

  /** Ends the stream: pending pushes are dropped, a waiting reader is released. */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.pending.clear();
    this.waiting?.({ value: undefined, done: true });
    this.waiting = null;
    this.options.onEnd();
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<T> {
    return this;
  }
}
