// The account-erasure scenario's world: a victim who likes N distinct posts (default 100,000),
// favourites 1 % of them, has posts of their own, followers and followees; the users who load
// the API while the victim is erased. Posts are written in bulk SQL (author counters rebuilt,
// each post's counters initialised, as createPost does); every like, favourite and follow
// through Tally's commands (bench/lib/seed.ts), which the worker process aggregates and persists.
import { createAuth } from '../../src/auth/jwt.js';
import { inBatches, openSeeder, range } from '../lib/seed.js';

export const VICTIM = 1;
/** Authors of the bulk posts (users 2..101); the first FOLLOWEES of them are followed by the victim. */
const FIRST_AUTHOR = 2;
const AUTHORS = 100;
const FOLLOWEES = 20;
/** Users who follow the victim (and like the victim's own posts). */
const FIRST_FOLLOWER = 3001;
const FOLLOWERS = 20;
/** Users of the load: they read the feed and like posts while the victim is erased. */
const FIRST_LOAD_USER = 1001;
const LOAD_USERS = 1000;
const VICTIM_POSTS = 5;
/** Requests in flight while seeding. */
const SEED_WIDTH = 256;

export type ErasureWorld = Awaited<ReturnType<typeof seedErasureWorld>>;

export async function seedErasureWorld(serverEnv: Record<string, string>, likes: number, log: (line: string) => void) {
  const seeder = await openSeeder(serverEnv);
  const { db, deps, commands } = seeder;
  try {
    const authors = range(FIRST_AUTHOR, AUTHORS);
    const followers = range(FIRST_FOLLOWER, FOLLOWERS);
    const loadUsers = range(FIRST_LOAD_USER, LOAD_USERS);
    await seeder.addUsers([VICTIM, ...authors, ...followers, ...loadUsers], 'Bench user');

    // Oldest first, one a second up to now, so ids grow with time and the newest are the feed's first page.
    await db.$executeRaw`
      INSERT INTO posts (author_id, title, body, created_at)
      SELECT ${FIRST_AUTHOR} + g % ${AUTHORS}, 'Bench post ' || g, 'Body of bench post ' || g || '.',
             now() - make_interval(secs => ${likes} - g)
      FROM generate_series(1, ${likes}) AS g
      ORDER BY g`;
    const likedPostIds = (await db.$queryRaw<{ id: bigint }[]>`SELECT id FROM posts ORDER BY id`).map((r) => Number(r.id));
    // What createPost does per post, for the bulk: the authors' `posts` counters, each post's packed counters.
    await Promise.all(authors.map((id) => deps.userCounters.rebuild(id)));
    await inBatches(likedPostIds, 1000, (id) => deps.postCounters.initialize(id));
    const victimPostIds: number[] = [];
    for (let i = 0; i < VICTIM_POSTS; i++) victimPostIds.push((await seeder.post(VICTIM, `Victim post ${i}`)).id);
    log(`  ${likedPostIds.length} posts in bulk by ${AUTHORS} authors, ${VICTIM_POSTS} by the victim`);

    const started = Date.now();
    let done = 0;
    await inBatches(likedPostIds, SEED_WIDTH * 4, async (postId) => {
      if (!(await seeder.like(VICTIM, postId)).changed) throw new Error(`the victim's like of post ${postId} changed nothing`);
      done += 1;
      if (done % 20_000 === 0) log(`  ${done} likes by the victim (${((done * 1000) / (Date.now() - started)).toFixed(0)}/s)`);
    });
    const favedPostIds = likedPostIds.filter((_, i) => i % 100 === 0);
    await inBatches(favedPostIds, SEED_WIDTH, (postId) => seeder.like(VICTIM, postId, 'FAV'));
    // Every 10th post is also liked by one author, so an exact count after the erasure is not simply 0.
    const otherLiked = likedPostIds.filter((_, i) => i % 10 === 0);
    await inBatches(otherLiked, SEED_WIDTH, (postId) => seeder.like(FIRST_AUTHOR + ((postId * 7) % AUTHORS), postId));
    const followees = authors.slice(0, FOLLOWEES);
    const follow = (userId: number, followeeId: number) => commands.relations.follow(userId, { followeeId, active: true });
    await Promise.all(followees.map((followeeId) => follow(VICTIM, followeeId)));
    await Promise.all(followers.map((userId) => follow(userId, VICTIM)));
    await Promise.all(followers.flatMap((userId) => victimPostIds.map((postId) => seeder.like(userId, postId))));
    log(
      `  ${likedPostIds.length} likes, ${favedPostIds.length} favourites and ${followees.length} follows by the victim in ${((Date.now() - started) / 1000).toFixed(0)} s through the like path; ${otherLiked.length} likes by others; ${followers.length} followers`,
    );

    const auth = createAuth(serverEnv.JWT_SECRET!);
    const tokens = new Map<number, string>();
    for (const id of [VICTIM, ...loadUsers]) tokens.set(id, await auth.sign(id));
    return {
      /** Every post the victim liked, oldest first (the newest are on the feed's first pages). */
      likedPostIds,
      favedPostIds,
      authors,
      followers,
      loadUsers,
      /** Bearer tokens of the victim and the load users. */
      tokens,
      /** The victim's active facts once seeded: likes + favourites + follows. */
      victimFacts: likedPostIds.length + favedPostIds.length + followees.length,
      otherLikes: otherLiked.length,
    };
  } finally {
    await seeder.close();
  }
}
