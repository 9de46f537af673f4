// A query that times out on a half-open connection takes that connection out of the pool:
// pg itself leaves it waiting for the lost answer, and every later query on it hung (a pool of
// one made that the whole process: node-postgres issue #3399).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type Db } from '../../src/db/client.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { startTcpProxy } from '../support/tcpProxy.js';

let database: TestDatabase;
let proxy: Awaited<ReturnType<typeof startTcpProxy>>;
let db: Db;
let pool: Db;

beforeAll(async () => {
  database = await createTestDatabase();
  const direct = new URL(database.url);
  proxy = await startTcpProxy({ host: direct.hostname, port: Number(direct.port || 5432) });
  const viaProxy = new URL(database.url);
  viaProxy.host = `127.0.0.1:${proxy.port}`;
  const timeouts = { queryTimeoutMs: 500, connectTimeoutMs: 2000, keepAliveMs: 10_000 };
  db = createDb(viaProxy.toString(), { poolSize: 1, timeouts });
  pool = createDb(viaProxy.toString(), { poolSize: 4, timeouts });
});
afterAll(async () => {
  await db.$disconnect();
  await pool.$disconnect();
  proxy.endStall();
  await proxy.cut();
  await database.drop();
});

describe('PostgreSQL deadlines', () => {
  it('fails a query on a half-open connection in time, and the next one runs on a new connection', async () => {
    expect(await db.$queryRaw<{ n: number }[]>`SELECT 1::int AS n`).toEqual([{ n: 1 }]);
    proxy.stall();
    const started = Date.now();
    await expect(db.$queryRaw`SELECT 2`).rejects.toThrow();
    expect(Date.now() - started).toBeLessThan(2000);
    // The pool has one connection: the timed-out one must have left it.
    expect(await db.$queryRaw<{ n: number }[]>`SELECT 3::int AS n`).toEqual([{ n: 3 }]);
    // In a transaction too, once it began (Prisma then rolls back and releases the connection
    // without an error, so the pool would keep it).
    await expect(
      db.$transaction(async (tx) => {
        await tx.$queryRaw`SELECT 4`;
        proxy.stall();
        await tx.$queryRaw`SELECT 5`;
      }),
    ).rejects.toThrow();
    expect(await db.$queryRaw<{ n: number }[]>`SELECT 6::int AS n`).toEqual([{ n: 6 }]);
  });

  it('drops, with the first timed-out query, every idle connection that answered nothing since it was sent', async () => {
    proxy.endStall();
    // Four connections open (four queries at once), then idle in the pool.
    await Promise.all([1, 2, 3, 4].map(() => pool.$queryRaw`SELECT pg_sleep(0.05)::text`));
    proxy.stall();
    await expect(pool.$queryRaw`SELECT 1`).rejects.toThrow('Query read timeout');
    // Each of the other three would have cost a timeout of its own, one query after another.
    const outcomes = [];
    for (const n of [2, 3, 4, 5])
      outcomes.push(
        await pool.$queryRaw<{ n: number }[]>`SELECT ${n}::int AS n`.then(
          (rows) => rows[0]?.n,
          () => 'failed',
        ),
      );
    expect(outcomes).toEqual([2, 3, 4, 5]);
  });
});
