// Recording views: which of the posts (or of the entities a product owns) a client showed
// count a view now, by the deployment's rules (src/domain/views.ts), added to their counters:
// in one step on a single Redis (lua/recordViews-3.lua); on a Cluster in two, the viewer's
// window (lua/claimViews-1.lua), then the entities' buffers, one call per partition
// (lua/addViews-1.lua). A view whose recording fails between the two is lost, never counted twice.
import type { OwnedEntity } from '../db/entities.js';
import type { EntityCache } from '../db/entityCache.js';
import type { PostCache } from '../db/postCache.js';
import type { PostModel } from '../db/posts.js';
import { type EntityRef, POST } from '../domain/entities.js';
import { TYPES } from '../domain/kinds.js';
import type { ViewRules } from '../domain/views.js';
import { badInput, notFound } from '../errors.js';
import type { AllOrNothingBudget, Client } from '../limits/rateLimiter.js';
import type { Keys } from '../redis/keys.js';
import { commandGroups } from '../redis/partition.js';
import type { Scripts } from '../redis/scripts.js';
import { ownerType } from './entities.js';
import type { ViewerDigests } from './viewerDigests.js';
import type { Visibility } from './visibility.js';

export interface ViewServiceDeps {
  postCache: PostCache;
  entityCache: EntityCache;
  visibility: Visibility;
  scripts: Scripts;
  keys: Keys;
  viewRules: ViewRules;
  viewerDigests: ViewerDigests;
  /** The `views` budget, a token per id (RATE_LIMITED); null where nothing is charged (an operator's process). */
  viewsBudget: AllOrNothingBudget | null;
  /** Whether each script call must stay in one partition (a Redis Cluster). */
  perPartition: boolean;
}

/** A post's view as recorded, or the NOT_FOUND of a post that is missing or deleted. */
export type RecordedView = { post: PostModel; counted: boolean } | Error;
/** The same for an entity a product owns. */
export type RecordedEntityView = { entity: OwnedEntity; counted: boolean } | Error;

/** What a view is of: the entity, and its owner (whose own views count only with VIEWS_COUNT_AUTHOR). */
interface Seen {
  ref: EntityRef;
  ownerId: number | null;
}

/** How targets are looked up: from this process's cache without waiting, or at all. */
interface Lookup<K, T> {
  fresh: (key: K) => T | null | undefined;
  get: (key: K) => Promise<T | null>;
}

export function createViewService(deps: ViewServiceDeps) {
  const { keys, scripts, viewRules: rules, viewsBudget: budget } = deps;

  /**
   * The targets of `keysSeen` (distinct; null: not there) and which count a view by `client` now,
   * those recorded. The budget is taken before any lookup, so a client it refuses costs no
   * PostgreSQL; but when this process knows every target already (a feed's posts), no lookup
   * waits, and the recording script takes it with the views: one round trip for the page.
   */
  async function lookUpAndRecord<K, T>(client: Client, keysSeen: readonly K[], lookup: Lookup<K, T>, seenOf: (target: T) => Seen) {
    const known = keysSeen.map(lookup.fresh);
    const inOneStep = budget !== null && !deps.perPartition && known.every((t) => t !== undefined);
    if (budget && !inOneStep) await budget.take(client, keysSeen.length);
    const targets = inOneStep ? (known as (T | null)[]) : await Promise.all(keysSeen.map(lookup.get));
    const counted = await record(
      client,
      targets.map((t) => (t === null ? null : seenOf(t))),
      inOneStep ? keysSeen.length : 0,
    );
    return { targets, counted };
  }

  /** Which of `seen` (null: not there) count a view by `client` now; records those, taking `charge` tokens of its budget first when not 0. */
  async function record(client: Client, seen: readonly (Seen | null)[], charge: number): Promise<boolean[]> {
    const anonymous = !('userId' in client);
    const counts = (s: Seen) => (anonymous ? rules.anonymous === 'address' : rules.countAuthor || s.ownerId !== client.userId);
    const candidates = seen.filter((s): s is Seen => s !== null && counts(s));
    const counted = new Set<Seen>();
    if (candidates.length > 0 || charge > 0) {
      const window = anonymous ? keys.addressViewWindow(deps.viewerDigests.address(client.address)) : keys.viewWindow(client.userId);
      const digest = anonymous ? '' : deps.viewerDigests.user(client.userId);
      const claim = { window, windowMs: rules.windowMs, digest, entities: candidates.map((s) => s.ref) };
      const won = deps.perPartition ? await claimThenAdd(claim) : await recordInOneStep(client, claim, charge);
      for (const [i, s] of candidates.entries()) if (won[i]) counted.add(s);
    }
    return seen.map((s) => s !== null && counted.has(s));
  }

  /** On a single Redis: `charge` tokens of the budget (when not 0), the window and the buffers, one script; RATE_LIMITED when the budget refused. */
  async function recordInOneStep(client: Client, claim: Claim, charge: number) {
    const { refusedForMs, counted } = await scripts.recordViews({
      ...claim,
      ...(budget && charge > 0 && { budget: { ...budget.bucket(client), wanted: charge } }),
    });
    if (refusedForMs > 0 && budget) throw budget.refused(refusedForMs);
    return counted;
  }

  /** On a Cluster the window and the buffers are in different slots: claim, then add per partition. */
  async function claimThenAdd(claim: Claim) {
    if (claim.entities.length === 0) return [];
    const won = await scripts.claimViews(claim);
    const entities = claim.entities.filter((_, i) => won[i]);
    await Promise.all(
      commandGroups(entities, keys.partitionOf, true).map((group) =>
        scripts.addViews(group.map((i) => ({ entity: entities[i]!, digest: claim.digest }))),
      ),
    );
    return won;
  }

  return {
    /** `client`'s views of `postIds` (distinct, in order): which counted, and which posts are not there. */
    async recordOnPosts(client: Client, postIds: readonly number[]): Promise<RecordedView[]> {
      const ids = [...new Set(postIds)];
      const lookup = {
        fresh: (id: number) => {
          const post = deps.postCache.fresh(id);
          return post === undefined ? undefined : deps.visibility.post(post);
        },
        get: async (id: number) => deps.visibility.post(await deps.postCache.get(id)),
      };
      const { targets, counted } = await lookUpAndRecord(client, ids, lookup, (post) => ({
        ref: { type: POST, id: post.id },
        ownerId: post.authorId,
      }));
      return targets.map((post, i) => (post ? { post, counted: counted[i]! } : notFound(`post ${ids[i]} not found`)));
    },

    /**
     * `client`'s views of entities of `type` by the owner's ids (distinct, in order); BAD_USER_INPUT
     * for a type that is not the product's or counts no views.
     */
    async recordOnEntities(client: Client, type: string, keysSeen: readonly string[]): Promise<RecordedEntityView[]> {
      if (!TYPES.get(ownerType(type)).views) throw badInput(`a ${type} counts no views (ENTITY_TYPES)`, { argumentName: 'type' });
      const ids = [...new Set(keysSeen)];
      const lookup = { fresh: (key: string) => deps.entityCache.fresh(type, key), get: (key: string) => deps.entityCache.get(type, key) };
      const { targets, counted } = await lookUpAndRecord(client, ids, lookup, (entity) => ({
        ref: { type, id: entity.id },
        ownerId: entity.ownerId,
      }));
      return targets.map((entity, i) => (entity ? { entity, counted: counted[i]! } : notFound(`${type} ${ids[i]} not found`)));
    },
  };
}

/** What a viewer's views ask of Redis: their window, its length, the viewer's digest, and the entities that may count. */
interface Claim {
  window: string;
  windowMs: number;
  digest: string;
  entities: readonly EntityRef[];
}

export type ViewService = ReturnType<typeof createViewService>;
