// `npm run seed`: a small, realistic demo world (40 users, 300 posts over the last 30 days,
// likes and favourites with a long tail, a follow graph). Deterministic, and safe to run twice: users are
// upserted, posts are only written when the demo authors have none yet, and likes go through
// the real write path with absolute states, so a second run changes nothing.
import { loadConfig } from '../src/config.js';
import { KINDS } from '../src/domain/kinds.js';
import { FAV, LIKE } from '../src/domain/relations.js';
import type { ApiDeps } from '../src/graphql/apiDeps.js';
import { createApi } from '../src/process/api.js';
import { openParts, type Parts } from '../src/process/parts.js';
import { random, shuffled } from './random.js';

/** A reaction, the registry's first ones more often (as 👍 and ❤️ are on real posts). */
const reactionFor = (rand: () => number) => KINDS.reactions[Math.floor(rand() ** 2 * KINDS.reactions.length)]!;

const FIRST = [
  'Ada',
  'Linus',
  'Grace',
  'Alan',
  'Margaret',
  'Ken',
  'Barbara',
  'Dennis',
  'Frances',
  'Edsger',
  'Radia',
  'Guido',
  'Hedy',
  'Tim',
  'Katherine',
  'Donald',
  'Sophie',
  'Bjarne',
  'Joan',
  'Niklaus',
];
const LAST = [
  'Lovelace',
  'Hopper',
  'Turing',
  'Hamilton',
  'Thompson',
  'Liskov',
  'Ritchie',
  'Allen',
  'Dijkstra',
  'Perlman',
  'Lamarr',
  'Johnson',
  'Knuth',
  'Wilson',
  'Clarke',
  'Wirth',
];
const TOPICS = [
  'sourdough',
  'trail running',
  'mechanical keyboards',
  'film photography',
  'rust',
  'houseplants',
  'chess openings',
  'espresso',
  'bouldering',
  'synthesizers',
  'urban sketching',
  'type systems',
  'birdwatching',
  'bread baking',
  'night skies',
  'vinyl records',
];
const OPENERS = [
  'Thoughts on',
  'A week of',
  'What I learned from',
  'Getting started with',
  'Why I keep coming back to',
  'The hidden joy of',
  'Notes on',
  'Mistakes I made with',
];
const SENTENCES = [
  'It started as a weekend experiment and quietly took over my evenings.',
  'The first attempt was a disaster, the third one was surprisingly good.',
  'Most advice online skips the boring part, which turns out to be the important part.',
  'I kept a small notebook the whole time, and the patterns only showed up in hindsight.',
  'If you try this, go slower than you think you need to.',
  'Happy to share the details if anyone is curious.',
  'Next month I want to push this further and write up the results.',
];

export const DEMO_USERS = 40;
const DEMO_POSTS = 300;
const DAY_MS = 24 * 3600 * 1000;

async function seed() {
  const parts = openParts(loadConfig(), { name: 'tally-seed' });
  // An operator's tool: its likes go through the same commands as a client's, uncharged.
  const api = createApi(parts, { operator: true });
  const { db } = parts;
  const rand = random(2026);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(rand() * list.length)]!;
  const userIds = Array.from({ length: DEMO_USERS }, (_, i) => i + 1);

  try {
    for (const id of userIds) {
      const name = `${FIRST[(id - 1) % FIRST.length]} ${LAST[(id * 7) % LAST.length]}`;
      // Half the demo users share their likes, so `likers` and `likedPosts` have something to show.
      await db.user.upsert({ where: { id }, create: { id, name, likesPublic: id % 2 === 0 }, update: {} });
    }

    const existing = await db.post.count({ where: { authorId: { in: userIds } } });
    if (existing > 0) {
      console.log(`demo posts already present (${existing}); left as they are`);
    } else {
      const now = Date.now();
      // Oldest first, so ids grow with time like real traffic.
      const posts = Array.from({ length: DEMO_POSTS }, () => ({
        authorId: pick(userIds),
        title: `${pick(OPENERS)} ${pick(TOPICS)}`,
        body: Array.from({ length: 2 + Math.floor(rand() * 4) }, () => pick(SENTENCES)).join(' '),
        createdAt: new Date(now - Math.floor(rand() * 30 * DAY_MS)),
      })).sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime());
      await db.post.createMany({ data: posts });
      console.log(`created ${posts.length} demo posts`);
    }

    // Posts were written in bulk (spread over a month), past the per-post counter updates:
    // count them from the tables.
    await Promise.all(userIds.map((id) => api.deps.userCounters.rebuild(id)));
    const changed = await seedRelations(parts, api.deps);
    console.log(`demo world ready: ${DEMO_USERS} users, ${changed} likes, favourites, reactions and follows set`);
  } finally {
    api.stop();
    await parts.close();
  }
}

/** Likes and favourites on the demo posts: most get a handful, a few get most users. */
async function seedRelations(parts: Parts, { commands, postCounters }: ApiDeps): Promise<number> {
  await parts.checkDeployment();
  const { db } = parts;
  const posts = await db.post.findMany({ where: { authorId: { lte: DEMO_USERS }, deletedAt: null }, orderBy: { id: 'asc' } });
  let changed = 0;
  for (const row of posts) {
    const postId = Number(row.id);
    await postCounters.initialize(postId);
    const rand = random(postId); // per post, so a second run makes the same choices
    const likers = Math.floor(rand() ** 3 * DEMO_USERS);
    const favers = Math.floor(likers * rand() * 0.4);
    const users = shuffled(
      Array.from({ length: DEMO_USERS }, (_, i) => i + 1),
      rand,
    );
    const writes = users.slice(0, likers).map((userId, i) => [
      commands.relations.setOnPost(userId, { postId, relation: LIKE, active: true }),
      ...(i < favers ? [commands.relations.setOnPost(userId, { postId, relation: FAV, active: true })] : []),
      // About half the likers also react, mostly with the first few reactions.
      ...(rand() < 0.5 ? [commands.relations.setOnPost(userId, { postId, relation: reactionFor(rand), active: true })] : []),
    ]);
    for (const result of await Promise.all(writes.flat())) if (result.changed) changed += 1;
  }
  // A follow graph: each demo user follows about a fifth of the others.
  for (let userId = 1; userId <= DEMO_USERS; userId++) {
    const rand = random(100_000 + userId);
    const followees = Array.from({ length: DEMO_USERS }, (_, i) => i + 1).filter((id) => id !== userId && rand() < 0.2);
    const results = await Promise.all(followees.map((followeeId) => commands.relations.follow(userId, { followeeId, active: true })));
    changed += results.filter((r) => r.changed).length;
  }
  return changed;
}

await seed();
