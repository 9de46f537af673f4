import type { PostResolvers } from '../generated.js';

export const Post: PostResolvers = {
  id: (post) => String(post.id),
  author: async (post, _, { loaders }) => {
    const author = await loaders.user.load(post.authorId);
    // A post row always references its author (foreign key); a miss means a broken store.
    if (!author) throw new Error(`author ${post.authorId} of post ${post.id} is missing`);
    return author;
  },
  counts: (post, _, { loaders }) => loaders.counts.load(post.id),
  myState: (post, _, { viewer, loaders }) => (viewer ? loaders.viewerState.load(post.id) : null),
};
