// The feed's cursor: the (createdAt, id) position of the last post of a page.
import type { FeedPosition } from '../../db/posts.js';
import { badInput } from '../../errors.js';
import type { CursorCodec } from '../cursor.js';
import type { PostModel } from '../models.js';

const KIND = 'feed';

export const feedCursor = (codec: CursorCodec, post: PostModel) =>
  codec.encode(KIND, [post.createdAt.getTime(), post.id]);

export function feedPosition(codec: CursorCodec, cursor: string): FeedPosition {
  const payload = codec.decode(KIND, cursor);
  if (Array.isArray(payload) && payload.length === 2 && payload.every(Number.isSafeInteger)) {
    return { createdAt: new Date(payload[0]), id: payload[1] };
  }
  throw badInput('invalid cursor', { argumentName: 'after' });
}
