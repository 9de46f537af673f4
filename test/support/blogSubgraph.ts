// A product's own subgraph, as a team that adopts Tally runs one: it owns posts, comments and
// users (title, body, author) in its own store, and knows nothing of likes or reactions.
import { ApolloServer } from '@apollo/server';
import { startStandaloneServer } from '@apollo/server/standalone';
import { buildSubgraphSchema } from '@apollo/subgraph';
import { parse } from 'graphql';

export interface BlogPost {
  id: string;
  title: string;
  authorId: string;
}
export interface BlogComment {
  id: string;
  postId: string;
  body: string;
  authorId: string;
}

const typeDefs = parse(`#graphql
  extend schema @link(url: "https://specs.apollo.dev/federation/v2.7", import: ["@key", "@shareable"])

  type Query {
    posts: [Post!]!
  }
  type Post @key(fields: "id") {
    id: ID!
    title: String!
    author: User!
    comments: [Comment!]!
  }
  type Comment @key(fields: "id") {
    id: ID!
    body: String!
    author: User!
  }
  type User @key(fields: "id") {
    id: ID!
    handle: String!
  }
`);

export async function startBlogSubgraph(posts: BlogPost[], comments: BlogComment[]) {
  const user = (id: string) => ({ id, handle: `user-${id}` });
  const server = new ApolloServer({
    schema: buildSubgraphSchema({
      typeDefs,
      resolvers: {
        Query: { posts: () => posts },
        Post: {
          __resolveReference: ({ id }: { id: string }) => posts.find((p) => p.id === id) ?? null,
          author: (post: BlogPost) => user(post.authorId),
          comments: (post: BlogPost) => comments.filter((c) => c.postId === post.id),
        },
        Comment: {
          __resolveReference: ({ id }: { id: string }) => comments.find((c) => c.id === id) ?? null,
          author: (comment: BlogComment) => user(comment.authorId),
        },
        User: { __resolveReference: ({ id }: { id: string }) => user(id) },
      },
    }),
  });
  const { url } = await startStandaloneServer(server, { listen: { port: 0, host: '127.0.0.1' } });
  return { url, stop: () => server.stop() };
}
