// The memory scenario's tables (bytes per relation, bytes per counted entity) and its targets
// from issue 8: Tally ≤ 10 B per relation on sparse and long-tail data, and never more than
// the plain bitmap on dense data.
import { columns, type Ratio, ratioLine, times } from '../lib/report.js';
import { type MemoryResults, RELATION_LAYOUTS, type RelationLayout } from './memory.js';

const BYTES_PER_RELATION_TARGET = 10;
const bytes = (x: number) => `${x.toFixed(x >= 100 ? 0 : x >= 10 ? 1 : 2)} B`;

export function memoryRatios(results: MemoryResults): Ratio[] {
  const ratios: Ratio[] = [];
  for (const row of results.relations) {
    const { tally, plainBitmap } = row.layouts;
    if (row.dataSet.startsWith('dense')) {
      ratios.push({
        label: `Tally / plain bitmap memory, ${row.dataSet}`,
        value: tally.bytes / plainBitmap.bytes,
        detail: `${tally.bytes} B vs ${plainBitmap.bytes} B for ${row.relations} relations`,
        target: 1,
        atMost: true,
      });
    } else {
      ratios.push({
        label: `Tally memory per relation, ${row.dataSet}`,
        value: tally.perRelation,
        format: bytes,
        target: BYTES_PER_RELATION_TARGET,
        atMost: true,
        detail: `plain bitmap ${bytes(plainBitmap.perRelation)}, ${times(plainBitmap.bytes / tally.bytes)} Tally; SET ${bytes(row.layouts.set.perRelation)}, HASH ${bytes(row.layouts.hash.perRelation)}`,
      });
    }
  }
  return ratios;
}

const keyCounts = (keys: Record<string, number>) =>
  Object.entries(keys)
    .map(([k, n]) => `${n} ${k}`)
    .join(', ');

export function memoryTable(results: MemoryResults): string {
  const layouts = Object.keys(RELATION_LAYOUTS) as RelationLayout[];
  const perRelation = columns(
    ['memory per relation', 'posts', 'likes', 'Tally B/like', 'plain bitmap', 'SET', 'HASH', 'Tally / plain', 'Tally keys'],
    results.relations.map((row) => [
      row.dataSet,
      String(row.entities),
      String(row.relations),
      ...layouts.map((l) => bytes(row.layouts[l].perRelation)),
      times(row.layouts.tally.bytes / row.layouts.plainBitmap.bytes),
      keyCounts(row.layouts.tally.keys),
    ]),
    (i) => i >= 1 && i < 8,
  );
  const packed = results.entities.find((e) => e.layout === 'packed')!;
  const perEntity = columns(
    [`memory per counted entity (${packed.entities.toLocaleString('en-US')} posts)`, 'B/entity', 'vs packed', 'keys'],
    results.entities.map((e) => [e.description, bytes(e.perEntity), times(e.bytes / packed.bytes), keyCounts(e.keys)]),
    (i) => i >= 1 && i < 3,
  );
  const note =
    `Keys named as in a deployment without REDIS_KEY_PREFIX, in Redis database ${results.db} (Redis ${results.redis.version}, ` +
    `hash-max-listpack-entries ${results.redis['hash-max-listpack-entries']}, -value ${results.redis['hash-max-listpack-value']}, ` +
    `set-max-intset-entries ${results.redis['set-max-intset-entries']}).`;
  const ratios = memoryRatios(results).map(ratioLine);
  return [perRelation, '', perEntity, note, '', ...ratios].join('\n');
}
