import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorCodes, startTestApp, type TestApp } from '../support/app.js';

let t: TestApp;
const sql: string[] = [];

beforeAll(async () => {
  // The erasure list's refresh (a query every ERASURE_REFRESH_MS) must not land inside a counted page.
  t = await startTestApp({ ERASURE_REFRESH_MS: '600000' }, { db: { onQuery: (q) => sql.push(q) } });
  const db = t.app.db;
  await db.user.createMany({ data: Array.from({ length: 10 }, (_, i) => ({ id: 100 + i, name: `author ${i}` })) });
  // 60 posts in groups of 3 sharing a createdAt, so the id tie-break is exercised.
  const base = Date.UTC(2026, 10, 1);
  await db.post.createMany({
    data: Array.from({ length: 60 }, (_, i) => ({
      authorId: 100 + (i % 10),
      title: `post ${i}`,
      body: '',
      createdAt: new Date(base + Math.floor(i / 3) * 60_000),
    })),
  });
  await db.post.updateMany({ where: { title: { in: ['post 7', 'post 31'] } }, data: { deletedAt: new Date() } });
});
afterAll(() => t.stop());

const FEED = `query($first: Int, $after: String) {
  feed(first: $first, after: $after) {
    edges { cursor node { id title createdAt author { id } } }
    pageInfo { hasNextPage endCursor }
  }
}`;

async function expectedOrder(): Promise<string[]> {
  const rows = await t.app.db.post.findMany({ where: { deletedAt: null }, orderBy: [{ createdAt: 'desc' }, { id: 'desc' }] });
  return rows.map((r) => String(r.id));
}

describe('feed', () => {
  it('pages newest first across every page with no gaps or repeats', async () => {
    const seen: string[] = [];
    let after: string | null = null;
    let pages = 0;
    for (;;) {
      const res: any = await t.gql(FEED, { first: 7, after });
      expect(res.errors).toBeUndefined();
      const { edges, pageInfo } = res.data.feed;
      seen.push(...edges.map((e: any) => e.node.id));
      pages += 1;
      expect(pageInfo.endCursor).toBe(edges.at(-1)?.cursor ?? null);
      if (!pageInfo.hasNextPage) break;
      after = pageInfo.endCursor;
      expect(pages).toBeLessThan(20);
    }
    expect(seen).toEqual(await expectedOrder());
    expect(seen).toHaveLength(58);
    expect(pages).toBe(9);
  });

  it('uses 20 by default and accepts 1 and 100', async () => {
    const byDefault = await t.gql(FEED, {});
    expect(byDefault.data.feed.edges).toHaveLength(20);
    expect((await t.gql(FEED, { first: 1 })).data.feed.edges).toHaveLength(1);
    const all = await t.gql(FEED, { first: 100 });
    expect(all.data.feed.edges).toHaveLength(58);
    expect(all.data.feed.pageInfo.hasNextPage).toBe(false);
  });

  it.each([0, -1, 101, 1000])('refuses first=%d with BAD_USER_INPUT', async (first) => {
    expect(errorCodes(await t.gql(FEED, { first }))).toEqual(['BAD_USER_INPUT']);
  });

  it('refuses garbage and tampered cursors with BAD_USER_INPUT', async () => {
    const page = await t.gql(FEED, { first: 2 });
    const cursor: string = page.data.feed.pageInfo.endCursor;
    const bytes = Buffer.from(cursor, 'base64url');
    bytes[bytes.length - 1]! ^= 1; // the last byte of the encrypted position
    const tampered = bytes.toString('base64url');
    for (const after of ['garbage', '', tampered, `${cursor}x`, 'eyJ9.AAAA']) {
      expect(errorCodes(await t.gql(FEED, { after })), after).toEqual(['BAD_USER_INPUT']);
    }
  });

  it('costs two SQL queries per page (posts, then all their authors), whatever the page size', async () => {
    await t.gql(FEED, { first: 1 }); // warm-up: connection setup is not part of a page
    for (const first of [5, 50]) {
      sql.length = 0;
      const res = await t.gql(FEED, { first });
      expect(res.data.feed.edges).toHaveLength(first);
      expect(sql, `first=${first}`).toHaveLength(2);
    }
  });
});
