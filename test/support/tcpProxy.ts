// A TCP proxy a test can cut or stall, to take a real dependency away from a running service.

import type { AddressInfo } from 'node:net';
import { connect, createServer, type Socket } from 'node:net';

export async function startTcpProxy(target: { host: string; port: number }) {
  const sockets = new Set<Socket>();
  /** Pairs (client, upstream) opened before the current stall: they forward nothing while it lasts. */
  const stalled = new Set<[Socket, Socket]>();
  const server = createServer((client) => {
    const upstream = connect(target.port, target.host);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => s.destroy());
    }
    client.pipe(upstream).pipe(client);
    (client as Socket & { pair?: [Socket, Socket] }).pair = [client, upstream];
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const pairs = () =>
    [...sockets].flatMap((s) => {
      const pair = (s as Socket & { pair?: [Socket, Socket] }).pair;
      return pair ? [pair] : [];
    });
  return {
    port,
    /** Stops accepting and drops every open connection. */
    async cut() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      });
    },
    /**
     * Half-open: the connections open now stay open but carry nothing either way (what a
     * proxy or NAT that lost its state does); new connections are accepted and work.
     */
    stall() {
      for (const pair of pairs()) {
        const [client, upstream] = pair;
        client.unpipe(upstream);
        upstream.unpipe(client);
        client.pause();
        upstream.pause();
        stalled.add(pair);
      }
    },
    /** Ends a stall: what was held is dropped with its connections (as when the state was lost for good). */
    endStall() {
      for (const [client, upstream] of stalled) {
        client.destroy();
        upstream.destroy();
      }
      stalled.clear();
    },
  };
}

export type TcpProxy = Awaited<ReturnType<typeof startTcpProxy>>;
