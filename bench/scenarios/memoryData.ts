// The memory scenario's data sets (post id -> likers in arrival order), fixed seeds.
import { random, shuffled } from '../../prisma/random.js';
import { range } from '../lib/seed.js';

export type DataSet = { name: string; description: string; likers: Map<number, number[]> };

/** `count` distinct ids from `draw`, in drawing order. */
function distinct(count: number, draw: () => number): number[] {
  const ids = new Set<number>();
  while (ids.size < count) ids.add(draw());
  return [...ids];
}

const dense = (n: number): DataSet => ({
  name: `dense ${n.toLocaleString('en-US')}`,
  description: `users 1..${n} (one 32,768-id chunk) like one post, in random order`,
  likers: new Map([[1, shuffled(range(1, n), random(n))]]),
});

function sparse(): DataSet {
  const rand = random(100_000_000);
  const likers = new Map(range(1, 1000).map((post) => [post, distinct(100, () => 1 + Math.floor(rand() * 1e8))]));
  return { name: 'sparse', description: '1,000 posts x 100 likers drawn uniformly among user ids 1..10^8', likers };
}

function longTail(): DataSet {
  const rand = random(10_000_000);
  const ranks = shuffled(range(1, 10_000), rand);
  const likes = (rank: number) => Math.max(1, Math.round(30_000 * rank ** -1.1));
  return {
    name: 'long tail',
    description: '10,000 posts, likes by rank r = max(1, round(30,000 r^-1.1)); likers among 10^7 ids, density ∝ 1/√id',
    likers: new Map(ranks.map((rank, i) => [i + 1, distinct(likes(rank), () => 1 + Math.floor(1e7 * rand() ** 2))])),
  };
}

/** Each data set, built when its turn comes (the long tail alone holds ~10^5 ids). */
export const DATA_SETS = [() => dense(100), () => dense(5_000), () => dense(32_000), sparse, longTail];
