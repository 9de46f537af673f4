// Creating and deleting a post: the row and its author's `posts` counter (one transaction),
// then what depends on it: the post's packed counters, the author's cached counters, the caches
// that list or look up posts. The same whether a resolver, a tool or a test calls it.
import type { PostCounters } from '../counters/postCounters.js';
import type { UserCounters } from '../counters/userCounters.js';
import type { FeedCache } from '../db/feedCache.js';
import type { PostCache } from '../db/postCache.js';
import type { PostModel, PostStore } from '../db/posts.js';
import { forbidden, notFound } from '../errors.js';
import { BODY_MAX_CHARS, checkText, TITLE_MAX_CHARS } from '../text.js';
import type { Charge } from './charges.js';
import type { Visibility } from './visibility.js';

export interface PostServiceDeps {
  posts: PostStore;
  postCache: PostCache;
  feedCache: FeedCache;
  postCounters: PostCounters;
  userCounters: UserCounters;
  charge: Charge;
  visibility: Visibility;
  /** Tells every API process to forget the deleted post in its caches. */
  announcePostDeleted: (postId: number) => Promise<void>;
}

export interface NewPost {
  title: string;
  body: string;
}

export function createPostService(deps: PostServiceDeps) {
  return {
    /** A new post by `authorId` (BAD_USER_INPUT for a blank or too long title, a too long body). */
    async create(authorId: number, input: NewPost): Promise<PostModel> {
      const title = checkText(input.title, 'title', 1, TITLE_MAX_CHARS);
      const body = checkText(input.body, 'body', 0, BODY_MAX_CHARS);
      await deps.charge('writes', authorId);
      const { post, counters } = await deps.posts.create(authorId, title, body);
      deps.feedCache.forgetAll();
      await Promise.all([deps.postCounters.initialize(post.id), deps.userCounters.cache(counters, { changed: true })]);
      return post;
    },

    /**
     * Deletes `postId` for `userId`, its author (FORBIDDEN for anyone else, NOT_FOUND when it
     * is not there). The budget is taken first, so probing ids costs as much as deleting.
     */
    async delete(userId: number, postId: number): Promise<PostModel> {
      await deps.charge('writes', userId);
      const post = deps.visibility.post((await deps.posts.liveByIds([postId]))[0]);
      if (!post) throw notFound(`post ${postId} not found`);
      if (post.authorId !== userId) throw forbidden('only the author can delete a post');
      const deleted = await deps.posts.softDelete(postId);
      deps.postCache.forget(postId);
      deps.feedCache.forgetAll();
      await deps.announcePostDeleted(postId);
      if (!deleted) throw notFound(`post ${postId} not found`); // deleted concurrently
      await deps.userCounters.cache(deleted.counters, { changed: true });
      return deleted.post;
    },
  };
}

export type PostService = ReturnType<typeof createPostService>;
