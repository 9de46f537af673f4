// `npm run backfill -- FILE`: registers (or deletes) the entities a product already has, from a
// file of entity lifecycle messages, one JSON per line (the format of docs/adopting.md), as
// the workers apply them from the event log: by version, so a line applied twice changes
// nothing. For millions of lines:
//   --rate N       at most N lines a second (default 2000), so reads and likes keep their pace
//   --batch N      lines per write (default 500, at most 1000)
//   --from-start   ignore the saved position and read the file from its first line
// After each batch the position is saved beside the file (FILE.backfill): an interrupted run
// started again goes on from there. Progress goes to stderr, the totals to stdout.
import { open, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { loadConfig } from '../config.js';
import { createEntityLifecycle, type LifecycleOutcome } from '../consumers/entityLifecycle.js';
import { TYPES } from '../domain/kinds.js';
import type { LifecycleRecord } from '../events/lifecycleSources.js';
import { createApi } from '../process/api.js';
import { openParts } from '../process/parts.js';
import { MAX_ENTITIES_PER_CALL } from '../services/entities.js';
import { createProgressBar } from './progress.js';

const USAGE = 'usage: npm run backfill -- FILE [--rate LINES_PER_S] [--batch LINES] [--from-start]';
const READ_BYTES = 1 << 20;

interface Saved {
  /** Bytes of the file applied so far (always at a line's end). */
  offset: number;
  lines: number;
  counts: Record<string, number>;
}

function option(name: string, fallback: number, max: number): number {
  const at = process.argv.indexOf(name);
  if (at < 0) return fallback;
  const value = Number(process.argv[at + 1]);
  if (!Number.isSafeInteger(value) || value < 1 || value > max) {
    console.error(`${name} takes a whole number from 1 to ${max}\n${USAGE}`);
    process.exit(2);
  }
  return value;
}

/** The file's lines from `offset`, in batches of `size`, each with the offset just past its last line. */
async function* batchesOf(file: string, offset: number, size: number): AsyncGenerator<{ lines: string[]; end: number }> {
  const handle = await open(file, 'r');
  try {
    let position = offset;
    let rest = Buffer.alloc(0);
    let lines: string[] = [];
    let lineEnd = offset;
    for (;;) {
      const chunk = Buffer.alloc(READ_BYTES);
      const { bytesRead } = await handle.read(chunk, 0, READ_BYTES, position);
      if (bytesRead === 0) break;
      position += bytesRead;
      let buffer = Buffer.concat([rest, chunk.subarray(0, bytesRead)]);
      for (let newline = buffer.indexOf(10); newline >= 0; newline = buffer.indexOf(10)) {
        lineEnd += newline + 1;
        const line = buffer.subarray(0, newline).toString('utf8').trim();
        buffer = buffer.subarray(newline + 1);
        if (line) lines.push(line);
        if (lines.length === size) {
          yield { lines, end: lineEnd };
          lines = [];
        }
      }
      rest = buffer;
    }
    const last = rest.toString('utf8').trim();
    if (last) lines.push(last);
    if (lines.length > 0 || rest.length > 0) yield { lines, end: lineEnd + rest.length };
  } finally {
    await handle.close();
  }
}

const file = process.argv.slice(2).find((a, i, all) => !a.startsWith('--') && !['--rate', '--batch'].includes(all[i - 1] ?? ''));
if (!file) {
  console.error(USAGE);
  process.exit(2);
}
const rate = option('--rate', 2000, 1_000_000);
const batchSize = option('--batch', 500, MAX_ENTITIES_PER_CALL);
const savedPath = `${file}.backfill`;

const size = (await stat(file)).size;
let saved: Saved = { offset: 0, lines: 0, counts: {} };
if (!process.argv.includes('--from-start')) {
  saved = await readFile(savedPath, 'utf8').then(
    (text) => JSON.parse(text) as Saved,
    () => saved,
  );
}
if (TYPES.owned.length === 0) {
  console.error('backfill: ENTITY_TYPES names no type: there is nothing to register');
  process.exit(2);
}

const parts = openParts(loadConfig(), { name: 'tally-backfill' });
const api = createApi(parts, { operator: true });
const { entities } = api.deps.commands;
const counts = saved.counts;
const apply = createEntityLifecycle({
  applyRegistrations: entities.applyRegistrations,
  applyDeletions: entities.applyDeletions,
  counted: (op: string, outcome: LifecycleOutcome, n: number) => {
    const name = outcome === 'rejected' ? 'rejected' : `${op} ${outcome}`;
    counts[name] = (counts[name] ?? 0) + n;
  },
  logger: parts.logger,
});

const bar = createProgressBar('backfill');
const started = Date.now();
const startLines = saved.lines;
let lines = startLines;
try {
  if (saved.offset > 0)
    console.error(`backfill: going on from line ${saved.lines + 1} (byte ${saved.offset} of ${size}); --from-start to read it all again`);
  for await (const batch of batchesOf(file, saved.offset, batchSize)) {
    const records: LifecycleRecord[] = batch.lines.map((value, i) => ({ position: `line ${lines + i + 1}`, value }));
    await apply(records);
    lines += batch.lines.length;
    saved = { offset: batch.end, lines, counts };
    // Written whole, then renamed: a kill never leaves half a position.
    await writeFile(`${savedPath}.tmp`, JSON.stringify(saved));
    await rename(`${savedPath}.tmp`, savedPath);
    bar.update('bytes', batch.end, size);
    // Paced: this run's lines may not run ahead of `rate` a second.
    const ahead = started + ((lines - startLines) / rate) * 1000 - Date.now();
    if (ahead > 0) await new Promise((resolve) => setTimeout(resolve, ahead));
  }
  bar.end();
  const seconds = (Date.now() - started) / 1000;
  console.log(JSON.stringify({ lines, seconds: Number(seconds.toFixed(1)), ...counts }));
} catch (error) {
  bar.end();
  console.error(`backfill failed at line ${lines + 1}: ${(error as Error).message}; run it again to go on from there`);
  process.exitCode = 1;
} finally {
  api.stop();
  await parts.close();
}
