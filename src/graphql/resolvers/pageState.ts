// A feed page's posts answer `counts`, `views`, `reactionGroups` and `myState` from one load for
// the whole page, made by the list's resolver and handed to each post: no DataLoader key and
// promise per post and field (they cost a page with reaction groups 11-13 % of its throughput,
// docs/performance.md). Only when every other field the posts select is answered from the
// feed's rows: anything that reads more (an author's counts, likers) would start after the
// page's load, a second round trip where there was one; such a page goes field by field.
import type { FieldNode, GraphQLResolveInfo } from 'graphql';
import { POST } from '../../domain/entities.js';
import { KINDS, TYPES } from '../../domain/kinds.js';
import type { Relation } from '../../domain/relations.js';
import type { GraphQLContext } from '../context.js';
import type { PostModel } from '../models.js';
import { subfieldNodes, subfieldsOf } from '../selection.js';
import { kindsShown } from './post.js';

/** Post fields answered from a feed row or from the page's load. */
const POST_FIELDS = new Set(['__typename', 'id', 'title', 'body', 'createdAt', 'author', 'counts', 'views', 'reactionGroups', 'myState']);
/** Fields of a feed row's author answered from the row. */
const AUTHOR_FIELDS = new Set(['__typename', 'id', 'name', 'createdAt']);

/** What the page loads: the posts' counts, and the viewer's state for these kinds. */
interface PagePlan {
  counts: boolean;
  kinds: readonly Relation[];
  /** The same kinds, as the posts' fields look them up. */
  held: ReadonlySet<Relation>;
}

type Selection = Pick<GraphQLResolveInfo, 'fieldNodes' | 'fragments'>;
const plans = new WeakMap<FieldNode, PagePlan | null>();

function planOf(info: Selection): PagePlan | null {
  const only = info.fieldNodes.length === 1 ? info.fieldNodes[0]! : null;
  if (only && plans.has(only)) return plans.get(only)!;
  const { fragments } = info;
  const posts = subfieldNodes(subfieldNodes(info.fieldNodes, fragments, 'edges'), fragments, 'node');
  const fields = subfieldsOf({ fieldNodes: posts, fragments });
  const authorFields = subfieldsOf({ fieldNodes: subfieldNodes(posts, fragments, 'author'), fragments });
  let plan: PagePlan | null = null;
  if ([...fields].every((f) => POST_FIELDS.has(f)) && [...authorFields].every((f) => AUTHOR_FIELDS.has(f))) {
    const myState = subfieldNodes(posts, fragments, 'myState');
    const shown = new Set([...(myState.length > 0 ? kindsShown({ fieldNodes: myState, fragments }) : [])]);
    if (fields.has('reactionGroups')) for (const kind of TYPES.reactionsOf(POST)) shown.add(kind);
    const kinds = KINDS.all.filter((k) => shown.has(k));
    plan = { counts: fields.has('counts') || fields.has('views') || fields.has('reactionGroups'), kinds, held: new Set(kinds) };
  }
  if (only) plans.set(only, plan);
  return plan;
}

/** The feed's posts, each with what the page's load found for it. */
export async function withPageState(posts: readonly PostModel[], info: Selection, ctx: GraphQLContext): Promise<readonly PostModel[]> {
  const plan = planOf(info);
  const kinds = plan && ctx.viewer ? plan.kinds : [];
  if (!plan || posts.length === 0 || (!plan.counts && kinds.length === 0)) return posts;
  const refs = posts.map((post) => ({ type: POST, id: post.id }));
  const [counts, states] = await Promise.all([
    plan.counts ? ctx.loaders.counts.loadMany(refs) : null,
    kinds.length > 0 ? ctx.loaders.viewerState.loadMany(refs.map((entity) => ({ entity, kinds }))) : null,
  ]);
  return posts.map((post, i) => ({ ...post, page: { counts: counts?.[i], kinds: plan.held, viewerState: states?.[i] } }));
}
