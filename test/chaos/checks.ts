// What Tally says (counts and every user's myState over GraphQL, relation_facts in
// PostgreSQL) compared with the ground truth, and the wait for convergence.
import { gql } from './client.js';
import type { Deployment } from './deployment.js';
import { COUNTS_FIELDS, countsOf, heldOf, MY_STATE_FIELDS, type PostCounts, type PostView } from './postView.js';
import { type FactKey, factKey, type GroundTruth, KINDS, kindNamed, type Loss } from './truth.js';
import type { Actors } from './workload.js';

const PAGE = `query($ids: [ID!]!) { posts(ids: $ids) { id ${COUNTS_FIELDS} ${MY_STATE_FIELDS} } }`;

export interface Observation {
  counts: Map<number, PostCounts>;
  states: Map<FactKey, boolean>;
  /** Reaction facts the post shows otherwise than myState does (postView.ts: heldOf). */
  misshown: Set<FactKey>;
  pg: Map<FactKey, boolean>;
  /** Facts of posts PostgreSQL holds that the workload never touched (users or posts it does not know). */
  pgStrangers: number;
}

/** One full look: every user's page (their myState, and the counts), and PostgreSQL. */
export async function observe(dep: Deployment, actors: Actors): Promise<{ ok: true; obs: Observation } | { ok: false; error: string }> {
  const pages = await Promise.all(
    actors.users.map((user) =>
      gql<PostView[]>(
        actors.apiUrl,
        PAGE,
        { ids: actors.postIds.map(String) },
        { token: actors.tokens.get(user)!, field: 'posts', timeoutMs: 10_000 },
      ),
    ),
  );
  const failed = pages.find((p) => !p.ok);
  if (failed && !failed.ok) return { ok: false, error: `read failed: ${failed.code} ${failed.message}` };
  const states = new Map<FactKey, boolean>();
  const misshown = new Set<FactKey>();
  let counts: Observation['counts'] | null = null;
  for (const [u, page] of pages.entries()) {
    if (!page.ok) continue;
    for (const view of page.data) {
      if (!view?.myState) return { ok: false, error: `post or myState missing in ${JSON.stringify(view)}` };
      const seen = heldOf(actors.users[u]!, view);
      for (const [key, held] of seen.held) states.set(key, held);
      for (const key of seen.misshown) misshown.add(key);
    }
    // Counts are the same for every reader; the first page's are the ones judged.
    counts ??= new Map(page.data.map((v) => [Number(v.id), countsOf(v)]));
  }
  let pg: Awaited<ReturnType<typeof readPg>>;
  try {
    pg = await readPg(dep, actors);
  } catch (error) {
    return { ok: false, error: `PostgreSQL read failed: ${(error as Error).message}` };
  }
  return { ok: true, obs: { counts: counts!, states, misshown, pg: pg.facts, pgStrangers: pg.strangers } };
}

/** relation_facts' post facts; with `actors`, rows of users, posts or kinds the workload does not know are counted apart. */
async function readPg(dep: Deployment, actors?: Actors): Promise<{ facts: Map<FactKey, boolean>; strangers: number }> {
  const { rows } = await dep.pg.query<{ user_id: string; entity_id: string; kind: string; active: boolean }>(
    `SELECT user_id, entity_id, kind, active FROM relation_facts WHERE entity_type = 'post'`,
  );
  const users = new Set(actors?.users);
  const posts = new Set(actors?.postIds);
  const facts = new Map<FactKey, boolean>();
  let strangers = 0;
  for (const r of rows) {
    const [user, post, kind] = [Number(r.user_id), Number(r.entity_id), kindNamed(r.kind)];
    if (kind === undefined || (actors && (!users.has(user) || !posts.has(post)))) {
      strangers++;
      continue;
    }
    facts.set(factKey(user, post, kind), r.active);
  }
  return { facts, strangers };
}

/** Reads relation_facts as it is now (the durable state a Redis loss falls back to). */
export const readPgFacts = async (dep: Deployment) => (await readPg(dep)).facts;

export interface Verdict {
  /** Facts whose myState is not what the truth says (an acknowledged change Tally does not show). */
  lost: number;
  /** Lost facts the stated exception covers: changed within the durable copy's lag before a loss. */
  lostWithinLag: number;
  /** Longest time between such a change's acknowledgement and the loss. */
  lagMs: number | null;
  /** Facts at risk at a loss (their truth then was not in the durable copy), and the longest such lag: the durable copy's lag. */
  atRisk: number;
  atRiskLagMs: number | null;
  /** Count units above the truly active facts, and below them, summed over posts and kinds. */
  doubled: number;
  short: number;
  /** (user, post) pairs whose myState differs from the truth. */
  wrongState: number;
  /** Facts where relation_facts differs from the truth (plus rows the workload never wrote). */
  pgMismatches: number;
  /** Posts whose counts are not (yet) known to include every acknowledged change. */
  countsNotCurrent: number;
  details: string[];
}

/**
 * The state Tally must end in. Normally the truth; after a Redis loss, a fact "at risk" (its
 * truth at the loss is not in the durable copy) that no later change touched may instead be
 * in its durable state: that is the stated exception, reported as lost within the lag.
 */
function expectedState(
  truth: GroundTruth,
  loss: Loss | null,
  key: FactKey,
  observed: boolean | undefined,
): { state: boolean; withinLag: boolean; lag: number } {
  const state = truth.state(key);
  if (!loss || observed === undefined || observed === state) return { state, withinLag: false, lag: 0 };
  const acks = truth.acksOf(key);
  const touchedAfter = acks.some((a) => a.ackedAt >= loss.restartAt);
  const known = loss.known.get(key) ?? false;
  if (touchedAfter || known === state || observed !== known) return { state, withinLag: false, lag: 0 };
  // The lost change is the last one acknowledged before the loss.
  const lostAck = acks.filter((a) => a.ackedAt < loss.restartAt).at(-1);
  const lag = lostAck ? loss.at - lostAck.ackedAt : 0;
  if (loss.boundMs !== undefined && lag > loss.boundMs) return { state, withinLag: false, lag: 0 };
  return { state: known, withinLag: true, lag };
}

export function judge(truth: GroundTruth, loss: Loss | null, obs: Observation, actors: Actors, countsSince: number): Verdict {
  const v: Verdict = {
    lost: 0,
    lostWithinLag: 0,
    lagMs: null,
    atRisk: 0,
    atRiskLagMs: null,
    doubled: 0,
    short: 0,
    wrongState: 0,
    pgMismatches: obs.pgStrangers,
    countsNotCurrent: 0,
    details: [],
  };
  if (obs.pgStrangers > 0) v.details.push(`PostgreSQL holds ${obs.pgStrangers} post facts the workload never wrote`);
  if (loss) {
    for (const key of truth.facts()) {
      if (truth.stateBefore(key, loss.restartAt) === (loss.known.get(key) ?? false)) continue;
      v.atRisk++;
      const lastBefore = truth
        .acksOf(key)
        .filter((a) => a.ackedAt < loss.restartAt)
        .at(-1);
      if (lastBefore) v.atRiskLagMs = Math.max(v.atRiskLagMs ?? 0, loss.at - lastBefore.ackedAt);
    }
  }
  const expected = new Map<FactKey, boolean>();
  for (const user of actors.users) {
    for (const post of actors.postIds) {
      let pairWrong = false;
      for (const kind of KINDS) {
        const key = factKey(user, post, kind);
        const observed = obs.states.get(key);
        if (truth.unknown.has(key)) {
          // An operation never acknowledged: either state is possible; judge the rest by what is there.
          expected.set(key, observed ?? false);
          continue;
        }
        const e = expectedState(truth, loss, key, observed);
        expected.set(key, e.state);
        if (e.withinLag) {
          v.lostWithinLag++;
          v.lagMs = Math.max(v.lagMs ?? 0, e.lag);
        }
        if (observed !== e.state || obs.misshown.has(key)) {
          v.lost++;
          pairWrong = true;
          const how = obs.misshown.has(key) ? ' (reactionGroups show it otherwise)' : '';
          if (v.details.length < 20) v.details.push(`lost: ${key} is ${observed}${how}, truth ${e.state}`);
        }
      }
      if (pairWrong) v.wrongState++;
    }
  }
  for (const post of actors.postIds) {
    const c = obs.counts.get(post);
    if (!c) continue;
    if (c.asOf === null || c.asOf < countsSince) v.countsNotCurrent++;
    for (const [kind, count] of c.byKind) {
      const want = actors.users.filter((u) => expected.get(factKey(u, post, kind))).length;
      if (count > want) v.doubled += count - want;
      if (count < want) v.short += want - count;
      if (count !== want && v.details.length < 30)
        v.details.push(
          `count: post ${post} ${kind} is ${count}, truth ${want} (asOf ${c.asOf === null ? 'null' : new Date(c.asOf).toISOString()})`,
        );
    }
  }
  for (const [key, want] of expected) {
    if ((obs.pg.get(key) ?? false) !== want) {
      v.pgMismatches++;
      if (v.details.length < 40) v.details.push(`PostgreSQL: ${key} is ${obs.pg.get(key) ?? 'absent'}, truth ${want}`);
    }
  }
  return v;
}

export const clean = (v: Verdict) => v.lost + v.doubled + v.short + v.wrongState + v.pgMismatches + v.countsNotCurrent === 0;

/**
 * Every acknowledgement's `changed` against the truth. After a loss, the first change of a
 * fact acknowledged after Redis came back is judged against the state Tally could know (the
 * durable copy, or the first result when its idempotency record survived); every later one
 * against the truth.
 */
export interface ChangedVerdict {
  wrong: number;
  /** Of them, answered after Redis came back from a loss. */
  wrongAfterLoss: number;
  judged: number;
  againstKnown: number;
  details: string[];
}

export function judgeChanged(truth: GroundTruth, loss: Loss | null): ChangedVerdict {
  let wrong = 0;
  let wrongAfterLoss = 0;
  let judged = 0;
  let againstKnown = 0;
  const details: string[] = [];
  for (const key of truth.facts()) {
    // (An operation never acknowledged stops its user's stream, so no acknowledgement follows it.)
    let before = false;
    let firstAfterLoss = true;
    for (const ack of truth.acksOf(key)) {
      let reference = before;
      if (loss && ack.ackedAt >= loss.restartAt && firstAfterLoss) {
        firstAfterLoss = false;
        if (!loss.replayable?.has(ack.op.idempotencyKey)) {
          reference = loss.known.get(key) ?? false;
          againstKnown++;
        }
      }
      judged++;
      const want = ack.op.active !== reference;
      if (ack.changed !== want) {
        wrong++;
        if (loss && ack.ackedAt >= loss.restartAt) wrongAfterLoss++;
        if (details.length < 20)
          details.push(
            `changed: ${key} set ${ack.op.active} at ${new Date(ack.ackedAt).toISOString()} answered ${ack.changed}, expected ${want}`,
          );
      }
      before = ack.op.active;
    }
  }
  return { wrong, wrongAfterLoss, judged, againstKnown, details };
}

export interface Convergence {
  converged: boolean;
  /** From `from` until every check passed; null when they did not within the cap. */
  ms: number | null;
  verdict: Verdict | null;
  readErrors: number;
  lastError: string | null;
}

/**
 * Polls until every check passes (or the cap); the last look is the one reported. Looks are
 * taken from `from` on while `loss` (what Tally could know, read from Kafka or an AOF copy)
 * is still being worked out, and judged once it is: the time to converge is when the look
 * that passed was taken.
 */
export async function converge(
  dep: Deployment,
  actors: Actors,
  truth: GroundTruth,
  loss: Promise<Loss | null>,
  options: { from: number; countsSince: number; capMs: number; intervalMs?: number },
): Promise<Convergence> {
  const deadline = options.from + options.capMs;
  const looks: { at: number; look: Awaited<ReturnType<typeof observe>> }[] = [];
  let polling = true;
  const poller = (async () => {
    while (polling) {
      const look = await observe(dep, actors);
      looks.push({ at: Date.now(), look });
      if (Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, options.intervalMs ?? 500));
    }
    polling = false;
  })();
  const knownLoss = await loss.catch((error: unknown) => {
    polling = false;
    throw error;
  });
  let verdict: Verdict | null = null;
  let readErrors = 0;
  let lastError: string | null = null;
  try {
    for (let i = 0; ; ) {
      if (i < looks.length) {
        const { at, look } = looks[i++]!;
        if (look.ok) {
          verdict = judge(truth, knownLoss, look.obs, actors, options.countsSince);
          if (clean(verdict)) return { converged: true, ms: Math.max(0, at - options.from), verdict, readErrors, lastError };
        } else {
          readErrors++;
          lastError = look.error;
        }
      } else if (!polling) {
        return { converged: false, ms: null, verdict, readErrors, lastError };
      } else {
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  } finally {
    polling = false;
    await poller;
  }
}
