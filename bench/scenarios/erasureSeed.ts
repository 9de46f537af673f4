// The account-erasure scenario's world, the victim's likes, favourites and follows through
// Tally's commands (bench/lib/seed.ts): docs/performance.md, "Account erasure".
import { inBatches, openSeeder, range } from '../lib/seed.js';

export const VICTIM = 1;
/** Authors of the bulk posts; the victim follows the first FOLLOWEES of them. */
const AUTHORS = range(2, 100);
const FOLLOWEES = 20;
/** Users who follow the victim (and like the victim's own posts). */
const FOLLOWERS = range(3001, 20);
/** Users of the load: they read the feed and like posts while the victim is erased. */
const LOAD_USERS = range(1001, 1000);
const VICTIM_POSTS = 5;
/** Commands in flight while seeding. */
const SEED_WIDTH = 256;

export type ErasureWorld = Awaited<ReturnType<typeof seedErasureWorld>>;

export async function seedErasureWorld(serverEnv: Record<string, string>, likes: number, log: (line: string) => void) {
  const seeder = await openSeeder(serverEnv);
  const { db, deps, commands } = seeder;
  try {
    await seeder.addUsers([VICTIM, ...AUTHORS, ...FOLLOWERS, ...LOAD_USERS], 'Bench user');
    // Oldest first, one a second up to now, so ids grow with time and the newest are the feed's first page.
    await db.$executeRaw`
      INSERT INTO posts (author_id, title, body, created_at)
      SELECT ${AUTHORS[0]} + g % ${AUTHORS.length}, 'Bench post ' || g, 'Body of bench post ' || g || '.',
             now() - make_interval(secs => ${likes} - g)
      FROM generate_series(1, ${likes}) AS g
      ORDER BY g`;
    const likedPostIds = (await db.$queryRaw<{ id: bigint }[]>`SELECT id FROM posts ORDER BY id`).map((r) => Number(r.id));
    // What createPost does per post, for the bulk: the authors' `posts` counters, each post's packed counters.
    await Promise.all(AUTHORS.map((id) => deps.userCounters.rebuild(id)));
    await inBatches(likedPostIds, 1000, (id) => deps.postCounters.initialize(id));
    const victimPosts = await Promise.all(range(0, VICTIM_POSTS).map((i) => seeder.post(VICTIM, `Victim post ${i}`)));
    log(`  ${likedPostIds.length} posts in bulk by ${AUTHORS.length} authors, ${VICTIM_POSTS} by the victim`);

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
    await inBatches(otherLiked, SEED_WIDTH, (postId) => seeder.like(AUTHORS[(postId * 7) % AUTHORS.length]!, postId));
    const followees = AUTHORS.slice(0, FOLLOWEES);
    const follow = (userId: number, followeeId: number) => commands.relations.follow(userId, { followeeId, active: true });
    await Promise.all(followees.map((followeeId) => follow(VICTIM, followeeId)));
    await Promise.all(FOLLOWERS.map((userId) => follow(userId, VICTIM)));
    await Promise.all(FOLLOWERS.flatMap((userId) => victimPosts.map((post) => seeder.like(userId, post.id))));
    log(
      `  ${likedPostIds.length} likes, ${favedPostIds.length} favourites and ${followees.length} follows by the victim in ${((Date.now() - started) / 1000).toFixed(0)} s through the like path; ${otherLiked.length} likes by others; ${FOLLOWERS.length} followers`,
    );

    const tokens = new Map<number, string>();
    await inBatches([VICTIM, ...LOAD_USERS], 100, async (id) => tokens.set(id, await deps.auth.sign(id)));
    return {
      /** Every post the victim liked, oldest first. */
      likedPostIds,
      favs: favedPostIds.length,
      /** The users whose counts are checked: the authors (among them the followees) and the followers. */
      checkedUserIds: [...AUTHORS, ...FOLLOWERS],
      loadUsers: LOAD_USERS,
      tokens,
      /** The victim's active facts once seeded: likes + favourites + follows. */
      victimFacts: likedPostIds.length + favedPostIds.length + followees.length,
      otherLikes: otherLiked.length,
    };
  } finally {
    await seeder.close();
  }
}
