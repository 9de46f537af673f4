// At most `max` holds per key, each given back once: the sockets one address has open before
// they send connection_init (src/http/websocket.ts).
export function createHoldsPerKey(max: number) {
  const held = new Map<string, number>();
  return {
    /** True when `key` holds `max` already. */
    full: (key: string) => (held.get(key) ?? 0) >= max,

    /** Takes one hold of `key`; the function gives it back (calling it again does nothing). */
    hold(key: string): () => void {
      held.set(key, (held.get(key) ?? 0) + 1);
      let holding = true;
      return () => {
        if (!holding) return;
        holding = false;
        const left = held.get(key)! - 1;
        if (left > 0) held.set(key, left);
        else held.delete(key);
      };
    },
  };
}
