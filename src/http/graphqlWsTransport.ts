// graphql-ws's protocol on `ws` sockets: what graphql-ws's own `useServer` does (keep-alive
// pings, messages in, close), but a push does not wait for its write to finish unless the
// socket is backed up, and the frames one socket gets in a tick are corked into one write.
// A flush pass that changes the 20 posts a socket watches then costs it one write, not 20
// in turn. A socket that does not read backs up: its pushes wait in its LiveStream (newest
// per entity) until it drains or is closed with 1013.
import type { Duplex } from 'node:stream';
import { CloseCode, handleProtocols, makeServer, type ServerOptions } from 'graphql-ws';
import type { Logger } from 'pino';
import { WebSocket, type WebSocketServer } from 'ws';

export interface TransportOptions {
  /** Ping interval; a socket that has not answered the last ping by the next is closed. */
  keepAliveMs: number;
  logger: Logger;
}

export function serveGraphqlWs<E>(options: ServerOptions<Record<string, unknown>, E>, wss: WebSocketServer, transport: TransportOptions) {
  const server = makeServer(options);
  const { logger } = transport;
  wss.options.handleProtocols = handleProtocols;

  // Sockets corked this tick, uncorked together once the tick's pushes are queued.
  const corked = new Set<Duplex>();
  const uncorkAll = () => {
    for (const raw of corked) raw.uncork();
    corked.clear();
  };
  const corkForTick = (raw: Duplex) => {
    if (corked.has(raw)) return;
    if (corked.size === 0) setImmediate(uncorkAll);
    corked.add(raw);
    raw.cork();
  };

  /** Resolves once `raw` has written its backlog, or the socket closed. */
  const drained = (raw: Duplex, socket: WebSocket) =>
    new Promise<void>((resolve) => {
      const done = () => {
        raw.off('drain', done);
        socket.off('close', done);
        resolve();
      };
      raw.once('drain', done);
      socket.once('close', done);
    });

  return {
    /** Serves the protocol on an upgraded socket; `raw` is the TCP socket under it. */
    open(socket: WebSocket, raw: Duplex, extra: E): void {
      // A client that resets its connection is routine: the socket closes next.
      socket.on('error', (error) => logger.debug({ err: error }, 'websocket error'));

      let pongWait: NodeJS.Timeout | null = null;
      const pings = setInterval(() => {
        if (socket.readyState !== WebSocket.OPEN || pongWait) return;
        pongWait = setTimeout(() => {
          // Pushes still unwritten: the peer is there but does not read (our ping waits behind
          // them), the 1013 of a stalled socket; it sees the close frame if it reads again
          // within ws's close timeout. Nothing unwritten: the peer is gone.
          if (socket.bufferedAmount > 0) socket.close(1013, 'the client does not read its pushes');
          else socket.terminate();
        }, transport.keepAliveMs);
        socket.once('pong', () => {
          if (pongWait) clearTimeout(pongWait);
          pongWait = null;
        });
        socket.ping();
      }, transport.keepAliveMs);

      const closed = server.opened(
        {
          protocol: socket.protocol,
          send(data) {
            if (socket.readyState !== WebSocket.OPEN) return;
            corkForTick(raw);
            socket.send(data);
            if (raw.writableNeedDrain) return drained(raw, socket);
          },
          close: (code, reason) => socket.close(code, reason),
          onMessage: (handle) =>
            socket.on('message', async (data) => {
              try {
                await handle(String(data));
              } catch (error) {
                logger.error({ err: error }, 'websocket: a message could not be handled');
                socket.close(CloseCode.InternalServerError, 'Internal server error');
              }
            }),
        },
        extra,
      );

      socket.once('close', (code, reason) => {
        clearInterval(pings);
        if (pongWait) clearTimeout(pongWait);
        void closed(code, String(reason));
      });
    },
  };
}
