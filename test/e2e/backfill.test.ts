// `npm run backfill`: registering the entities a product already has from a file, as a
// separate process, paced, with its progress shown and saved, so a run killed part way goes
// on from where it stopped and every entity ends registered once, with its owner.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestApp, TEST_JWT_SECRET, type TestApp } from '../support/app.js';
import { TEST_REDIS_URL } from '../support/env.js';
import { spawnTsx } from '../support/process.js';
import { waitFor } from '../support/wait.js';

vi.hoisted(() => {
  process.env.ENTITY_TYPES = 'comment;video:like,reactions:unowned';
});
const ENTITIES = 12_000;
const RATE = 3000;
const ownerOf = (i: number) => (i % 50) + 1;

let t: TestApp;
let dir: string;
beforeAll(async () => {
  t = await startTestApp({ ENTITY_TYPES: process.env.ENTITY_TYPES! });
  dir = await mkdtemp(join(tmpdir(), 'tally-backfill-'));
});
afterAll(async () => {
  await t.stop();
  await rm(dir, { recursive: true, force: true });
});

const cliEnv = () => ({
  DATABASE_URL: t.db.url,
  REDIS_URL: TEST_REDIS_URL,
  REDIS_KEY_PREFIX: t.app.config.redisKeyPrefix,
  JWT_SECRET: TEST_JWT_SECRET,
  ENTITY_TYPES: process.env.ENTITY_TYPES!,
  LOG_LEVEL: 'silent',
});

describe('npm run backfill', () => {
  it('registers every line once, paced, and goes on from its saved position after a kill', async () => {
    const lines: string[] = [];
    for (let i = 0; i < ENTITIES; i++) {
      lines.push(JSON.stringify({ v: 1, op: 'register', type: 'comment', id: `b-${i}`, ownerId: String(ownerOf(i)), version: '1' }));
      if (i === 100) lines.push('not json', JSON.stringify({ v: 1, op: 'register', type: 'photo', id: 'x', version: '1' }));
      if (i === 200) lines.push(lines[0]!); // a line twice: the second changes nothing
    }
    lines.push(JSON.stringify({ v: 1, op: 'register', type: 'video', id: 'b-v', version: 1 }));
    const file = join(dir, 'entities.ndjson');
    await writeFile(file, `${lines.join('\n')}\n`);
    const registered = () => t.app.db.entity.count({ where: { entityType: { in: ['comment', 'video'] } } });

    // The first run is killed once a few batches are saved.
    const first = spawnTsx('src/cli/backfill.ts', [file, '--rate', String(RATE), '--batch', '500'], cliEnv());
    const savedLines = await waitFor(
      () =>
        readFile(`${file}.backfill`, 'utf8').then(
          (text) => (JSON.parse(text) as { lines: number }).lines,
          () => 0,
        ),
      (n) => n >= 3000,
      { what: 'a saved position', timeoutMs: 30_000 },
    );
    first.child.kill('SIGKILL');
    await first.exited;
    const afterKill = await registered();
    expect(afterKill).toBeGreaterThanOrEqual(savedLines - 3); // two bad lines and a repeat among them
    expect(afterKill).toBeLessThan(ENTITIES);

    const second = spawnTsx('src/cli/backfill.ts', [file, '--rate', String(RATE), '--batch', '500'], cliEnv());
    const resumedAt = Number((await second.waitFor(/going on from line (\d+)/))[1]);
    const started = Date.now();
    expect(await second.exited).toBe(0);
    const elapsedMs = Date.now() - started;
    const output = second.output();
    expect(resumedAt).toBeGreaterThan(savedLines - 500);
    expect(output).toMatch(/backfill bytes .*100%/);
    const totals = JSON.parse(output.split('\n').find((line) => line.startsWith('{'))!);
    expect(totals.lines).toBe(lines.length);
    expect(totals.rejected).toBe(2);
    // Paced: the lines left took at least as long as RATE a second allows.
    expect(elapsedMs).toBeGreaterThanOrEqual(((lines.length - resumedAt) / RATE) * 1000 * 0.9);

    expect(await registered()).toBe(ENTITIES + 1);
    const sample = await t.app.db.entity.findMany({
      where: { key: { in: ['b-0', 'b-4321', `b-${ENTITIES - 1}`] } },
      orderBy: { id: 'asc' },
    });
    expect(sample.map((row) => [row.key, Number(row.ownerId)])).toEqual([
      ['b-0', ownerOf(0)],
      ['b-4321', ownerOf(4321)],
      [`b-${ENTITIES - 1}`, ownerOf(ENTITIES - 1)],
    ]);
    // A backfilled entity takes likes at once.
    const liked = await t.gql(
      `mutation { setEntityRelation(input: { type: "comment", id: "b-4321", active: true }) { changed } }`,
      {},
      { token: await t.token(9) },
    );
    expect(liked.data.setEntityRelation.changed).toBe(true);

    // Done: a third run reads nothing more.
    const third = spawnTsx('src/cli/backfill.ts', [file], cliEnv());
    expect(await third.exited).toBe(0);
    expect(
      JSON.parse(
        third
          .output()
          .split('\n')
          .find((line) => line.startsWith('{'))!,
      ).lines,
    ).toBe(lines.length);
  }, 90_000);
});
