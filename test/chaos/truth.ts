// The ground truth, as the clients know it. Each user runs one operation at a time, so for
// every fact (user, post, kind) the client knows the state after each acknowledged change
// and the exact `changed` each acknowledgement must carry: desired ≠ state before.

import { createRelationKinds, DEFAULT_REACTIONS, POST_RELATIONS, type PostRelationKind } from '../../src/domain/relations.js';

/** A fact's kind as the API names it: LIKE, FAV or a reaction's content (THUMBS_UP). */
export type Kind = string;

// The deployment's registry: its processes get no REACTIONS setting (tallyProcess.ts), so GitHub's eight.
const REGISTRY = createRelationKinds(DEFAULT_REACTIONS);
export const REACTIONS: readonly Kind[] = REGISTRY.reactions.map((r) => r.reaction!.content);
/** Every kind a user sets on a post and the checks judge: a kind the workload never sets must read as never set. */
export const KINDS: readonly Kind[] = [...(Object.keys(POST_RELATIONS) as PostRelationKind[]), ...REACTIONS];
/** The kinds the workload sets: likes, favourites and the first, a middle and the last reaction slot. */
export const WORKLOAD_KINDS: readonly Kind[] = ['LIKE', 'FAV', 'THUMBS_UP', 'HEART', 'EYES'];
export const isReaction = (kind: Kind) => REGISTRY.reaction(kind) !== undefined;

// Each kind's name in relation_facts.kind and in events: like, r_heart.
const kindByName = new Map<string, Kind>([
  ...Object.entries(POST_RELATIONS).map(([kind, relation]) => [relation.name, kind] as const),
  ...REGISTRY.reactions.map((relation) => [relation.name, relation.reaction!.content] as const),
]);
/** The kind a relation_facts row or an event names; undefined for one the checks do not judge (a bookmark). */
export const kindNamed = (name: string): Kind | undefined => kindByName.get(name);

/** `<user>|<post>|<kind>` */
export type FactKey = string;
export const factKey = (user: number, post: number, kind: Kind): FactKey => `${user}|${post}|${kind}`;
export const kindOfFact = (key: FactKey): Kind => key.split('|')[2]!;

export interface Op {
  user: number;
  post: number;
  kind: Kind;
  active: boolean;
  /** Fresh per operation; every retry of the operation sends the same one. */
  idempotencyKey: string;
  /** 1 = the warm-up and the main load, 2 = the workload after a fault between phases. */
  phase: number;
}

export interface Ack {
  op: Op;
  changed: boolean;
  firstSentAt: number;
  ackedAt: number;
  attempts: number;
}

/** An operation that never got acknowledged: refused with a final error, out of time, or never sent. */
export interface Unacked {
  op: Op;
  reason: string;
  firstSentAt: number;
}

export class GroundTruth {
  readonly acks: Ack[] = [];
  readonly unacked: Unacked[] = [];
  /** Acknowledgements per fact, in the order the user made them. */
  private readonly byFact = new Map<FactKey, Ack[]>();
  /** Facts an unacknowledged operation may or may not have changed. */
  readonly unknown = new Set<FactKey>();

  recordAck(ack: Ack): void {
    this.acks.push(ack);
    const key = factKey(ack.op.user, ack.op.post, ack.op.kind);
    const list = this.byFact.get(key) ?? [];
    list.push(ack);
    this.byFact.set(key, list);
  }

  /** `mayHaveApplied`: the operation may have changed the fact (it timed out, rather than being refused or never sent). */
  recordUnacked(failure: Unacked, mayHaveApplied: boolean): void {
    this.unacked.push(failure);
    if (mayHaveApplied) this.unknown.add(factKey(failure.op.user, failure.op.post, failure.op.kind));
  }

  /** Every fact the workload changed or may have changed. */
  facts(): FactKey[] {
    return [...new Set([...this.byFact.keys(), ...this.unknown])];
  }

  acksOf(key: FactKey): readonly Ack[] {
    return this.byFact.get(key) ?? [];
  }

  /** The state after every acknowledged change (false: never set). */
  state(key: FactKey): boolean {
    return this.acksOf(key).at(-1)?.op.active ?? false;
  }

  /** The state after the changes acknowledged before `t`. */
  stateBefore(key: FactKey, t: number): boolean {
    let state = false;
    for (const ack of this.acksOf(key)) if (ack.ackedAt < t) state = ack.op.active;
    return state;
  }

  lastAckAt(): number {
    return this.acks.reduce((max, a) => Math.max(max, a.ackedAt), 0);
  }
}

/**
 * Redis lost (some of) its data: what Tally could still know afterwards. `known` is the
 * durable state of each fact at the loss (PostgreSQL, the Kafka topic, or the AOF); facts
 * whose truth at the loss differs from it are "at risk" and may be lost.
 */
export interface Loss {
  /** When Redis was stopped. */
  at: number;
  /** Just before Redis was started again: every change acknowledged before it was made before the loss. */
  restartAt: number;
  known: Map<FactKey, boolean>;
  /** Idempotency keys whose first result survived (AOF): their retries replay it. */
  replayable?: Set<string>;
  /** How long before the loss a lost change may have been acknowledged (the AOF's bound); none: any. */
  boundMs?: number;
  /** Where `known` came from, for the report. */
  source: string;
}
