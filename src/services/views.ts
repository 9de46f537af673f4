// Recording views: which of the posts a client showed count a view now, by the deployment's
// rules (src/domain/views.ts), added to the posts' counters in one step per partition
// (lua/claimViews-1.lua for the viewer's window, lua/addViews-2.lua for the posts). A view
// whose recording fails between the two steps is lost, never counted twice.
import type { PostCache } from '../db/postCache.js';
import type { PostModel } from '../db/posts.js';
import { type EntityRef, POST } from '../domain/entities.js';
import type { ViewRules } from '../domain/views.js';
import { notFound } from '../errors.js';
import type { Client } from '../limits/rateLimiter.js';
import type { Keys } from '../redis/keys.js';
import type { Scripts } from '../redis/scripts.js';
import type { ViewerDigests } from './viewerDigests.js';
import type { Visibility } from './visibility.js';

export interface ViewServiceDeps {
  postCache: PostCache;
  visibility: Visibility;
  scripts: Scripts;
  keys: Keys;
  viewRules: ViewRules;
  viewerDigests: ViewerDigests;
  /** Takes `views` tokens of the client's `views` budget, all or none (RATE_LIMITED). */
  chargeViews: (client: Client, views: number) => Promise<void>;
}

/** A post's view as recorded, or the NOT_FOUND of a post that is missing or deleted. */
export type RecordedView = { post: PostModel; counted: boolean } | Error;

export function createViewService(deps: ViewServiceDeps) {
  const { keys, scripts, viewRules: rules } = deps;

  /** Adds the counted views, one script call per partition, each with the viewer's digest. */
  async function add(entities: readonly EntityRef[], digest: string) {
    const byPartition = new Map<number, EntityRef[]>();
    for (const entity of entities) {
      const partition = keys.partitionOf(entity);
      byPartition.set(partition, [...(byPartition.get(partition) ?? []), entity]);
    }
    await Promise.all(
      [...byPartition].map(([partition, group]) =>
        scripts.addViews({ partition, exactUpTo: rules.exactUpTo, views: group.map((entity) => ({ entity, digest })) }),
      ),
    );
  }

  return {
    /** `client`'s views of `postIds` (distinct, in order): which counted, and which posts are not there. */
    async recordOnPosts(client: Client, postIds: readonly number[]): Promise<RecordedView[]> {
      const ids = [...new Set(postIds)];
      await deps.chargeViews(client, ids.length);
      const posts = await Promise.all(ids.map(async (id) => deps.visibility.post(await deps.postCache.get(id))));
      const anonymous = !('userId' in client);
      const counts = (post: PostModel) =>
        anonymous ? rules.anonymous === 'address' : rules.countAuthor || post.authorId !== client.userId;
      const candidates = posts.filter((post): post is PostModel => post !== null && counts(post));
      const counted = new Set<number>();
      if (candidates.length > 0) {
        const window = anonymous ? keys.addressViewWindow(deps.viewerDigests.address(client.address)) : keys.viewWindow(client.userId);
        const entities = candidates.map((post) => ({ type: POST, id: post.id }));
        const claimed = await scripts.claimViews({ window, windowMs: rules.windowMs, entities });
        const won = entities.filter((_, i) => claimed[i]);
        await add(won, anonymous ? '' : deps.viewerDigests.user(client.userId));
        for (const entity of won) counted.add(entity.id);
      }
      return posts.map((post, i) => (post ? { post, counted: counted.has(post.id) } : notFound(`post ${ids[i]} not found`)));
    },
  };
}

export type ViewService = ReturnType<typeof createViewService>;
