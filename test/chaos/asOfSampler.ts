// The counts' promise while the fault runs, not only at the end: `asOf` says every change
// acknowledged before it is included. Counts are sampled during the load and the wait, and
// judged afterwards against the truth: a count with asOf T must lie between what the facts
// allow — each fact's state after the changes acknowledged before T, or any state a change
// sent before the read could already have given it.
import { gql } from './client.js';
import { COUNTS_FIELDS, countsOf, type PostCounts, type PostView } from './postView.js';
import { factKey, type GroundTruth, type Loss } from './truth.js';
import type { Actors } from './workload.js';

const COUNTS = `query($ids: [ID!]!) { posts(ids: $ids) { id ${COUNTS_FIELDS} } }`;

interface Sample {
  /** When the read was answered: no change sent later can be in it. */
  readAt: number;
  counts: ({ post: number } & PostCounts)[];
}

export interface SamplerVerdict {
  /** Samples with an asOf (judged), and (post, kind) counts outside what the facts allow. */
  judged: number;
  broken: number;
  details: string[];
}

export function startCountSampler(actors: Actors, intervalMs = 500) {
  const samples: Sample[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const res = await gql<PostView[]>(actors.apiUrl, COUNTS, { ids: actors.postIds.map(String) }, { field: 'posts', timeoutMs: 5000 });
      if (res.ok) {
        samples.push({
          readAt: Date.now(),
          counts: res.data.map((p) => ({ post: Number(p.id), ...countsOf(p) })),
        });
      }
      await new Promise((r) => setTimeout(r, intervalMs));
    }
  })();
  return {
    async stop(): Promise<Sample[]> {
      running = false;
      await loop;
      return samples;
    },
  };
}

export function judgeSamples(truth: GroundTruth, loss: Loss | null, samples: Sample[], actors: Actors): SamplerVerdict {
  const verdict: SamplerVerdict = { judged: 0, broken: 0, details: [] };
  for (const sample of samples) {
    for (const c of sample.counts) {
      if (c.asOf === null) continue;
      verdict.judged++;
      for (const [kind, count] of c.byKind) {
        let lo = 0;
        let hi = 0;
        for (const user of actors.users) {
          const key = factKey(user, c.post, kind);
          const possible = new Set<boolean>();
          let settled = false; // state after the changes acknowledged before asOf
          for (const ack of truth.acksOf(key)) {
            if (ack.ackedAt < c.asOf) settled = ack.op.active;
            else if (ack.firstSentAt < sample.readAt) possible.add(ack.op.active);
          }
          possible.add(settled);
          // After a Redis loss Tally may hold the durable state of a fact instead.
          if (loss && c.asOf >= loss.restartAt) possible.add(loss.known.get(key) ?? false);
          if (truth.unknown.has(key)) possible.add(!settled);
          if (!possible.has(true)) continue;
          hi++;
          if (!possible.has(false)) lo++;
        }
        if (count < lo || count > hi) {
          verdict.broken++;
          if (verdict.details.length < 10) {
            verdict.details.push(
              `asOf: post ${c.post} ${kind} was ${count} with asOf ${new Date(c.asOf).toISOString()} (read ${new Date(sample.readAt).toISOString()}); the facts allow ${lo}..${hi}`,
            );
          }
        }
      }
    }
  }
  return verdict;
}
