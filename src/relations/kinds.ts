// Relation kinds a user can set on a post, and where each lives: its bitmap metric name and
// its field in the post's SDS counters.

export type RelationKind = 'LIKE' | 'FAV';

export interface Metric {
  name: string;
  sdsIndex: number;
}

export const METRICS: Record<RelationKind, Metric> = {
  LIKE: { name: 'like', sdsIndex: 1 },
  FAV: { name: 'fav', sdsIndex: 2 },
};

/** Bitmap-backed metrics of a post, in the form the Lua scripts take ("like:1,fav:2"). */
export const POST_FACT_METRICS = Object.values(METRICS)
  .map((m) => `${m.name}:${m.sdsIndex}`)
  .join(',');

export const POST = 'post';
