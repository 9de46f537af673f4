// Subscriptions as graphql-js runs them, except that a push whose selection is public (ids,
// counts, names: nothing that depends on the viewer, takes arguments or spends a budget) is
// executed once per pushed value and document, and the result shared by every subscription
// that receives it. A flush pass resolves a post once; without this, 2,000 sockets watching
// it would still execute the same selection 2,000 times.
import {
  createSourceEventStream,
  type DocumentNode,
  type ExecutionArgs,
  type ExecutionResult,
  execute,
  type GraphQLSchema,
  Kind,
  TypeInfo,
  visit,
  visitWithTypeInfo,
} from 'graphql';

import type { GraphQLContext } from './context.js';

type Result = ExecutionResult | Promise<ExecutionResult>;

/**
 * Fields whose value is the same for every viewer, that take no arguments and cost no budget:
 * a selection made only of these (and the subscription's root field) is shared. `Type.*`
 * allows a whole type.
 */
const PUBLIC_FIELDS = new Set([
  'Subscription.*',
  'PostCounts.*',
  'UserCounts.*',
  'Post.id',
  'Post.title',
  'Post.body',
  'Post.createdAt',
  'Post.author',
  'Post.counts',
  'Post.reactionGroups',
  'ReactionGroup.content',
  'ReactionGroup.emoji',
  'ReactionGroup.count',
  'User.id',
  'User.name',
  'User.createdAt',
  'User.likesPublic',
  'User.counts',
]);

const isPublic = (type: string, field: string) =>
  field === '__typename' || PUBLIC_FIELDS.has(`${type}.*`) || PUBLIC_FIELDS.has(`${type}.${field}`);

/**
 * What makes two subscriptions' pushes of the same value identical, or null when they may
 * differ (a field outside PUBLIC_FIELDS). Variables count only where a directive reads them:
 * the root field's arguments choose which values arrive, not how a value resolves.
 */
export function shareKey(schema: GraphQLSchema, document: DocumentNode, operationName?: string | null, variables?: unknown): string | null {
  const typeInfo = new TypeInfo(schema);
  let shareable = true;
  let directiveVariables = false;
  visit(
    document,
    visitWithTypeInfo(typeInfo, {
      Field(node) {
        const parent = typeInfo.getParentType();
        if (!parent || !isPublic(parent.name, node.name.value)) shareable = false;
      },
      Directive(node) {
        if (node.arguments?.some((argument) => argument.value.kind === Kind.VARIABLE)) directiveVariables = true;
      },
    }),
  );
  if (!shareable || !document.loc) return null;
  const values = directiveVariables ? JSON.stringify(variables ?? {}) : '';
  return `${operationName ?? ''}\n${values}\n${document.loc.source.body}`;
}

/**
 * graphql-js's `subscribe`, sharing each push's execution between subscriptions with the same
 * share key. Results are kept per pushed value (a WeakMap: they go with the value). A shared
 * execution runs for no viewer: a public field may still read the viewer where one is given
 * (reactionGroups lists the viewer's reactions), and must not for everyone.
 */
export function createSharedSubscribe() {
  const shared = new WeakMap<object, Map<string, Result>>();
  return async (args: ExecutionArgs) => {
    const source = await createSourceEventStream(args);
    if (!(Symbol.asyncIterator in source)) return source; // errors before the stream started
    const key = shareKey(args.schema, args.document, args.operationName, args.variableValues);
    const run = (value: unknown): Result => {
      if (key === null || typeof value !== 'object' || value === null) return execute({ ...args, rootValue: value });
      let byKey = shared.get(value);
      if (!byKey) {
        byKey = new Map();
        shared.set(value, byKey);
      }
      let result = byKey.get(key);
      if (!result) {
        result = execute({ ...args, rootValue: value, contextValue: { ...(args.contextValue as GraphQLContext), viewer: null } });
        byKey.set(key, result);
      }
      return result;
    };
    return mapStream(source, run);
  };
}

/**
 * `source` with `map` applied to each value. Hand-written rather than an async generator: a
 * generator waiting on its source cannot be returned until the next value arrives, and a
 * completed subscription must let go of its stream at once.
 */
function mapStream<T, R>(source: AsyncIterable<T>, map: (value: T) => R | Promise<R>): AsyncIterableIterator<R> {
  const iterator = source[Symbol.asyncIterator]();
  const done = (): Promise<IteratorResult<R>> => Promise.resolve({ value: undefined, done: true });
  return {
    async next() {
      const step = await iterator.next();
      return step.done ? { value: undefined, done: true } : { value: await map(step.value), done: false };
    },
    async return() {
      await iterator.return?.();
      return done();
    },
    async throw(error?: unknown) {
      await iterator.return?.();
      throw error;
    },
    [Symbol.asyncIterator]() {
      return this;
    },
  };
}
