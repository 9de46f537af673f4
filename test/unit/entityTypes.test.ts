import { describe, expect, it } from 'vitest';
import { createEntityTypes, parseEntityTypes, typenameOf } from '../../src/domain/entityTypes.js';
import { BOOKMARK, createRelationKinds, DEFAULT_REACTIONS, FAV, FOLLOW, LIKE } from '../../src/domain/relations.js';

const kinds = createRelationKinds(DEFAULT_REACTIONS);
const names = (list: readonly { name: string }[]) => list.map((k) => k.name);

describe('ENTITY_TYPES', () => {
  it('names types with their kinds and owners', () => {
    expect(parseEntityTypes('comment; video:like,reactions:unowned ;blog_post:bookmark')).toEqual([
      { name: 'comment', kinds: ['like', 'fav', 'bookmark', 'reactions', 'views'], owned: true },
      { name: 'video', kinds: ['like', 'reactions'], owned: false },
      { name: 'blog_post', kinds: ['bookmark'], owned: true },
    ]);
    expect(typenameOf('blog_post')).toBe('BlogPost');
  });

  it("takes the GraphQL type name the owner's subgraph uses", () => {
    expect(parseEntityTypes('article=Post:like')).toEqual([{ name: 'article', typename: 'Post', kinds: ['like'], owned: true }]);
    expect(createEntityTypes(kinds, parseEntityTypes('article=Post')).get('article').typename).toBe('Post');
  });

  it.each([
    ['Comment', /snake_case/],
    ['a__b', /snake_case/],
    ['comment_', /snake_case/],
    ['x'.repeat(33), /at most 32/],
    ['post', /Tally's own/],
    ['user:like', /Tally's own/],
    ['comment:likes', /unknown kinds likes/],
    ['comment:like:private', /"private" is not "unowned"/],
    ['comment:like:unowned:x', /is not name/],
    ['comment;comment:like', /listed twice/],
    ['article=post', /not a type name/],
    ['article=Post=X', /is not name/],
    ['article=Comment;comment', /listed twice/],
  ])('refuses %s', (setting, message) => {
    expect(() => parseEntityTypes(setting)).toThrow(message);
  });
});

describe('the entity type registry', () => {
  const types = createEntityTypes(kinds, parseEntityTypes('comment;video:like,reactions:unowned'));

  it("keeps Tally's posts and users as they were", () => {
    expect(names(types.kindsOf('post'))).toEqual(names([LIKE, FAV, BOOKMARK, ...kinds.reactions]));
    expect(names(types.kindsOf('user'))).toEqual([FOLLOW.name]);
    expect(types.slotsSpec('post')).toBe(['like:1', 'fav:2', ...kinds.reactions.map((k) => `${k.name}:${k.slot}`)].join(','));
    expect([...types.eventCounted]).toEqual(['post', 'comment', 'video']);
  });

  it("gives an owner type the kinds it names, each in its one slot, and the owner's say", () => {
    expect(types.get('video')).toMatchObject({ typename: 'Video', source: 'owner', owned: false });
    expect(names(types.countedOn('video'))).toEqual(names([LIKE, ...kinds.reactions]));
    expect(types.countedOn('video')[0]!.slot).toBe(LIKE.slot);
    expect(names(types.owned)).toEqual(['comment', 'video']);
    expect(types.has('comment')).toBe(true);
    expect(types.has('photo')).toBe(false);
    expect(() => types.get('photo')).toThrow(/no entity type "photo"/);
  });
});
