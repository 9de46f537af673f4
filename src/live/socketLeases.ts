// How many WebSocket connections a client (a user, or an anonymous address) holds, counted
// across every API process: a per-process count let one user hold the limit on each replica.
// Each socket takes a place in Redis (lua/leaseSockets-1.lua) that this process renews while
// the socket is open and gives back when it closes; a process that dies stops renewing, so
// its sockets stop counting within one lease.
import type { Logger } from 'pino';
import type { Keys } from '../redis/keys.js';
import { createScripts, type ScriptedRedis } from '../redis/scripts.js';

/** How long a place lasts unless renewed: how long a dead process's sockets still count. */
export const SOCKET_LEASE_MS = 30_000;
/** Socket ids renewed per script call (ARGV stays small). */
const RENEW_CHUNK = 1000;

export function createSocketLeases(deps: { redis: ScriptedRedis; keys: Keys; processId: string; logger: Logger; leaseMs?: number }) {
  const leaseMs = deps.leaseMs ?? SOCKET_LEASE_MS;
  const scripts = createScripts(deps.redis, deps.keys);
  /** This process's sockets, by client. */
  const held = new Map<string, Set<string>>();
  let sequence = 0;

  const renewAll = () => {
    for (const [client, ids] of held) {
      const all = [...ids];
      for (let i = 0; i < all.length; i += RENEW_CHUNK) {
        scripts
          .leaseSockets({ client, leaseMs, max: 0, socketIds: all.slice(i, i + RENEW_CHUNK) })
          .catch((error: unknown) => deps.logger.warn({ err: error }, 'websocket: could not renew socket leases'));
      }
    }
  };
  const renewals = setInterval(renewAll, leaseMs / 3);
  renewals.unref();

  return {
    /**
     * A place for one more socket of `client` if it holds fewer than `max` in the whole
     * deployment: the function that gives it back, or null when there is none.
     */
    async take(client: string, max: number): Promise<(() => void) | null> {
      const id = `${deps.processId}:${++sequence}`;
      if (!(await scripts.leaseSockets({ client, leaseMs, max, socketIds: [id] }))) return null;
      const ids = held.get(client) ?? new Set<string>();
      held.set(client, ids);
      ids.add(id);
      return () => {
        if (!ids.delete(id)) return;
        if (ids.size === 0) held.delete(client);
        deps.redis
          .zrem(deps.keys.clientSockets(client), id)
          .catch((error: unknown) => deps.logger.warn({ err: error }, 'websocket: could not give a socket lease back'));
      };
    },

    /** Stops renewing (the sockets are closing). */
    close(): void {
      clearInterval(renewals);
    },
  };
}

export type SocketLeases = ReturnType<typeof createSocketLeases>;
