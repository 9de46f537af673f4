// The gateway scenario's product: its subgraph of BENCH_BLOG_POSTS posts (p0, p1, …) and an Apollo Gateway composing it with Tally at
// BENCH_TALLY_URL, Tally's SDL taken with the service credential BENCH_SERVICE_TOKEN (docs/performance.md, "Through a gateway").
import { startBlogSubgraph } from '../../test/support/blogSubgraph.js';
import { startGateway } from '../../test/support/gateway.js';

export async function startProductGateway(env: NodeJS.ProcessEnv) {
  const posts = Array.from({ length: Number(env.BENCH_BLOG_POSTS) }, (_, i) => ({ id: `p${i}`, title: `post ${i}`, authorId: '1' }));
  const blog = await startBlogSubgraph(posts, []);
  const subgraphs = [
    { name: 'blog', url: blog.url },
    { name: 'tally', url: `${env.BENCH_TALLY_URL}/graphql` },
  ];
  const gateway = await startGateway(subgraphs, env.BENCH_SERVICE_TOKEN!);
  return { url: gateway.url.replace(/\/$/, ''), stop: () => gateway.stop().then(blog.stop) };
}
