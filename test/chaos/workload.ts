// The known workload: every user runs its own sequential stream of setLikeRelation and
// setReaction calls (one in flight at a time), a fresh idempotency key per operation, and
// retries the SAME operation with the SAME key on network errors, timeouts, 5xx,
// INTERNAL_SERVER_ERROR and RATE_LIMITED until it is acknowledged. Acknowledgements go into
// the ground truth.
import { gql } from './client.js';
import { factKey, type GroundTruth, isReaction, type Op, WORKLOAD_KINDS } from './truth.js';

const SET_RELATION = 'mutation($i: SetLikeRelationInput!) { setLikeRelation(input: $i) { changed active } }';
const SET_REACTION = 'mutation($i: SetReactionInput!) { setReaction(input: $i) { changed active } }';

/** The mutation that sets `op`'s fact: a like or favourite is a `kind`, a reaction a `content`. */
function mutationOf(op: Op) {
  const common = { postId: String(op.post), active: op.active, idempotencyKey: op.idempotencyKey };
  return isReaction(op.kind)
    ? { query: SET_REACTION, field: 'setReaction', input: { ...common, content: op.kind } }
    : { query: SET_RELATION, field: 'setLikeRelation', input: { ...common, kind: op.kind } };
}

/** Small, fast, seedable PRNG (mulberry32): the same seed plans the same workload. */
export function createRng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { next, int: (n: number) => Math.floor(next() * n), bool: () => next() < 0.5 };
}
export type Rng = ReturnType<typeof createRng>;

export interface Actors {
  apiUrl: string;
  users: number[];
  postIds: number[];
  tokens: Map<number, string>;
  /** Makes idempotency keys unique to this row. */
  keyPrefix: string;
}

/** `total` random operations split evenly over the users: random post, workload kind and desired state. */
export function planRandom(rng: Rng, actors: Actors, total: number, phase: number, label: string): Op[][] {
  return actors.users.map((user, u) => {
    const count = Math.floor(total / actors.users.length) + (u < total % actors.users.length ? 1 : 0);
    return Array.from({ length: count }, (_, i) => ({
      user,
      post: actors.postIds[rng.int(actors.postIds.length)]!,
      kind: WORKLOAD_KINDS[rng.int(WORKLOAD_KINDS.length)]!,
      active: rng.bool(),
      idempotencyKey: `${actors.keyPrefix}-${label}-${user}-${i}`,
      phase,
    }));
  });
}

/**
 * Unsets and sets of facts the truth knows (likes, favourites, reactions; after a fault between phases): each pass visits
 * every fact of every user in random order and flips it (3 in 4) or sets it again as it is,
 * so both `changed: true` and `changed: false` answers are exercised.
 */
export function planFlips(rng: Rng, actors: Actors, truth: GroundTruth, passes: number, phase: number, label: string): Op[][] {
  return actors.users.map((user) => {
    const ops: Op[] = [];
    const state = new Map<string, boolean>();
    for (let pass = 0; pass < passes; pass++) {
      const facts = actors.postIds.flatMap((post) => WORKLOAD_KINDS.map((kind) => ({ post, kind })));
      for (let i = facts.length - 1; i > 0; i--) {
        const j = rng.int(i + 1);
        [facts[i], facts[j]] = [facts[j]!, facts[i]!];
      }
      for (const { post, kind } of facts) {
        const key = factKey(user, post, kind);
        const current = state.get(key) ?? truth.state(key);
        const active = rng.next() < 0.75 ? !current : current;
        state.set(key, active);
        ops.push({ user, post, kind, active, idempotencyKey: `${actors.keyPrefix}-${label}-${user}-${ops.length}`, phase });
      }
    }
    return ops;
  });
}

export interface LoadOptions {
  /** Spread each user's operations over about this long (0: as fast as acknowledged). */
  durationMs: number;
  /** An operation not acknowledged within this long is given up (and its user stops). */
  opDeadlineMs: number;
}

export interface LoadRun {
  /** Resolves once this fraction of the operations is done (or the load ended). */
  reached(fraction: number): Promise<void>;
  done: Promise<{ startedAt: number; endedAt: number; ops: number }>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs the planned streams; `errors` counts every failed attempt by code. */
export function runLoad(actors: Actors, plan: Op[][], truth: GroundTruth, errors: Map<string, number>, options: LoadOptions): LoadRun {
  const total = plan.reduce((n, ops) => n + ops.length, 0);
  let finished = 0;
  const waiters: { at: number; resolve: () => void }[] = [];
  const progress = () => {
    for (const w of [...waiters]) {
      if (finished >= w.at) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
    }
  };
  const startedAt = Date.now();

  async function send(op: Op): Promise<boolean> {
    const firstSentAt = Date.now();
    const { query, field, input } = mutationOf(op);
    for (let attempt = 1; ; attempt++) {
      const outcome = await gql<{ changed: boolean; active: boolean }>(
        actors.apiUrl,
        query,
        { i: input },
        { token: actors.tokens.get(op.user)!, field, timeoutMs: 15_000 },
      );
      if (outcome.ok) {
        truth.recordAck({ op, changed: outcome.data.changed, firstSentAt, ackedAt: Date.now(), attempts: attempt });
        return true;
      }
      errors.set(outcome.code, (errors.get(outcome.code) ?? 0) + 1);
      if (!outcome.retryable) {
        // Refused before anything was written: the stream can go on.
        truth.recordUnacked({ op, reason: `refused: ${outcome.code} (${outcome.message})`, firstSentAt }, false);
        return true;
      }
      if (Date.now() - firstSentAt > options.opDeadlineMs) {
        truth.recordUnacked(
          { op, reason: `no acknowledgement within ${options.opDeadlineMs} ms (last: ${outcome.code})`, firstSentAt },
          true,
        );
        return false;
      }
      const backoff = outcome.retryAfterMs ?? Math.min(1000, 25 * 2 ** Math.min(attempt, 6));
      await sleep(backoff * (0.75 + Math.random() * 0.5));
    }
  }

  const done = Promise.all(
    plan.map(async (ops, u) => {
      // Staggered start and a steady pace per user, so the load spans `durationMs` on any machine.
      const interval = ops.length > 0 ? options.durationMs / ops.length : 0;
      for (let i = 0; i < ops.length; i++) {
        const due = startedAt + interval * (i + u / plan.length);
        if (due > Date.now()) await sleep(due - Date.now());
        const goOn = await send(ops[i]!);
        finished++;
        progress();
        if (!goOn) {
          // The fact's state is unknown now; the user's remaining operations are not sent.
          for (const op of ops.slice(i + 1)) {
            truth.recordUnacked(
              { op, reason: 'not sent: an earlier operation of this user was never acknowledged', firstSentAt: 0 },
              false,
            );
          }
          finished += ops.length - i - 1;
          progress();
          return;
        }
      }
    }),
  ).then(() => {
    finished = total;
    progress();
    return { startedAt, endedAt: Date.now(), ops: total };
  });

  return {
    reached: (fraction) =>
      new Promise<void>((resolve) => {
        waiters.push({ at: Math.ceil(fraction * total), resolve });
        progress();
      }),
    done,
  };
}
