// The account-erasure scenario's world: a victim who likes N distinct posts (default 100,000),
// favourites 1 % of them, has posts of their own, followers and followees; the users who load
// the API while the victim is erased. Posts are written in bulk SQL (their author counters
// rebuilt from the table, each post's Redis counters initialised, as createPost does), every
// like, favourite and follow through Tally's own commands (src/services/commands.ts, as
// `npm run seed` does): each one a fact, an idempotency record and a counter event, which
// the worker process aggregates and its fact persister writes to PostgreSQL.
import { createAuth } from '../../src/auth/jwt.js';
import { loadConfig } from '../../src/config.js';
import { createApi } from '../../src/process/api.js';
import { openParts } from '../../src/process/parts.js';

export const VICTIM = 1;
/** Authors of the bulk posts (users 2..101); the first FOLLOWEES of them are followed by the victim. */
const FIRST_AUTHOR = 2;
const AUTHORS = 100;
const FOLLOWEES = 20;
/** Users who follow the victim (and like the victim's own posts). */
const FIRST_FOLLOWER = 3001;
const FOLLOWERS = 20;
/** Users of the load: they read the feed and like posts while the victim is erased. */
export const FIRST_LOAD_USER = 1001;
export const LOAD_USERS = 1000;
/** The victim's own posts (deleted by the erasure's first phase). */
const VICTIM_POSTS = 5;
/** Requests in flight while seeding (enough to fill the pipelines and the pool, not to queue for long). */
const SEED_WIDTH = 256;

export interface ErasureWorld {
  /** Every post the victim liked, oldest first (the newest ones are on the feed's first pages). */
  likedPostIds: number[];
  favedPostIds: number[];
  victimPostIds: number[];
  authors: number[];
  followees: number[];
  followers: number[];
  loadUsers: number[];
  /** Bearer tokens of the victim and the load users. */
  tokens: Map<number, string>;
  /** The victim's active facts once seeded: likes + favourites + follows. */
  victimFacts: number;
  /** Likes and favourites by users other than the victim, on the liked posts. */
  otherLikes: number;
}

const range = (first: number, n: number) => Array.from({ length: n }, (_, i) => first + i);

/** Runs `work` over `items`, `width` at a time. */
async function inBatches<T>(items: readonly T[], width: number, work: (item: T) => Promise<unknown>) {
  for (let i = 0; i < items.length; i += width) await Promise.all(items.slice(i, i + width).map(work));
}

export async function seedErasureWorld(
  serverEnv: Record<string, string>,
  likes: number,
  log: (line: string) => void,
): Promise<ErasureWorld> {
  const connections = openParts(loadConfig(serverEnv), { name: 'bench-erasure-seed' });
  // An operator's tool: its commands draw from no client's budget (as `npm run seed`).
  const api = createApi(connections, { operator: true });
  const { db } = connections;
  const { commands, userCounters, postCounters } = api.deps;
  try {
    await connections.checkDeployment();
    const authors = range(FIRST_AUTHOR, AUTHORS);
    const followers = range(FIRST_FOLLOWER, FOLLOWERS);
    const loadUsers = range(FIRST_LOAD_USER, LOAD_USERS);
    const everyone = [VICTIM, ...authors, ...followers, ...loadUsers];
    await db.$executeRaw`INSERT INTO users (id, name) SELECT id, 'Bench user ' || id FROM unnest(${everyone}::bigint[]) AS id`;

    // Oldest first, one a second up to now, so ids grow with time and the newest are the feed's first page.
    await db.$executeRaw`
      INSERT INTO posts (author_id, title, body, created_at)
      SELECT ${FIRST_AUTHOR} + g % ${AUTHORS}, 'Bench post ' || g, 'Body of bench post ' || g || '.',
             now() - make_interval(secs => ${likes} - g)
      FROM generate_series(1, ${likes}) AS g
      ORDER BY g`;
    const rows = await db.$queryRaw<{ id: bigint }[]>`SELECT id FROM posts ORDER BY id`;
    const likedPostIds = rows.map((r) => Number(r.id));
    // What createPost does per post, for the bulk: the authors' `posts` counters, each post's packed counters.
    await Promise.all(authors.map((id) => userCounters.rebuild(id)));
    await inBatches(likedPostIds, 1000, (id) => postCounters.initialize(id));
    const victimPostIds: number[] = [];
    for (let i = 0; i < VICTIM_POSTS; i++) {
      const post = await commands.posts.create(VICTIM, { title: `Victim post ${i}`, body: 'Soon gone.' });
      victimPostIds.push(post.id);
    }
    log(`  ${likedPostIds.length} posts in bulk by ${AUTHORS} authors, ${VICTIM_POSTS} by the victim`);

    const started = Date.now();
    let done = 0;
    await inBatches(likedPostIds, SEED_WIDTH * 4, async (postId) => {
      const result = await commands.relations.setOnPost(VICTIM, { postId, kind: 'LIKE', active: true });
      if (!result.changed) throw new Error(`the victim's like of post ${postId} changed nothing`);
      done += 1;
      if (done % 20_000 === 0) log(`  ${done} likes by the victim (${((done * 1000) / (Date.now() - started)).toFixed(0)}/s)`);
    });
    const favedPostIds = likedPostIds.filter((_, i) => i % 100 === 0);
    await inBatches(favedPostIds, SEED_WIDTH, (postId) => commands.relations.setOnPost(VICTIM, { postId, kind: 'FAV', active: true }));
    // Every 10th post is also liked by one author, so an exact count after the erasure is not simply 0.
    const otherLiked = likedPostIds.filter((_, i) => i % 10 === 0);
    await inBatches(otherLiked, SEED_WIDTH, (postId) =>
      commands.relations.setOnPost(FIRST_AUTHOR + ((postId * 7) % AUTHORS), { postId, kind: 'LIKE', active: true }),
    );
    const followees = authors.slice(0, FOLLOWEES);
    await Promise.all(followees.map((followeeId) => commands.relations.follow(VICTIM, { followeeId, active: true })));
    await Promise.all(followers.map((userId) => commands.relations.follow(userId, { followeeId: VICTIM, active: true })));
    await Promise.all(
      followers.flatMap((userId) =>
        victimPostIds.map((postId) => commands.relations.setOnPost(userId, { postId, kind: 'LIKE', active: true })),
      ),
    );
    log(
      `  ${likedPostIds.length} likes, ${favedPostIds.length} favourites and ${followees.length} follows by the victim in ${((Date.now() - started) / 1000).toFixed(0)} s through the like path; ${otherLiked.length} likes by others; ${followers.length} followers`,
    );

    const auth = createAuth(serverEnv.JWT_SECRET!);
    const tokens = new Map<number, string>();
    for (const id of [VICTIM, ...loadUsers]) tokens.set(id, await auth.sign(id));
    return {
      likedPostIds,
      favedPostIds,
      victimPostIds,
      authors,
      followees,
      followers,
      loadUsers,
      tokens,
      victimFacts: likedPostIds.length + favedPostIds.length + followees.length,
      otherLikes: otherLiked.length,
    };
  } finally {
    api.stop();
    await connections.close();
  }
}
