// One row per fault and event log, printed as a table and written as JSON.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { LogLine } from './logs.js';

export interface Row {
  eventLog: string;
  fault: string;
  title: string;
  ops: { planned: number; acked: number; unacked: number };
  /** Facts (user, post, kind) the workload set, and how many of them are reactions; every column judges them all. */
  facts: { set: number; reactions: number };
  lost: number;
  /** Lost changes the stated exception covers (acknowledged within the durable copy's lag before a Redis loss). */
  lostWithinLag: number;
  /** Longest time from such a change's acknowledgement to the loss. */
  lagMs: number | null;
  /** After a Redis loss: facts whose truth at the loss was not in the durable copy, and the longest such lag. */
  atRisk: number | null;
  atRiskLagMs: number | null;
  /** The AOF row's bound on that time. */
  boundMs: number | null;
  doubled: number;
  short: number;
  wrongState: number;
  wrongChanged: number;
  /** `changed` answers judged against the durable state after a loss (the first per fact after it). */
  changedJudgedAgainstKnown: number;
  pgMismatches: number;
  /** Counts sampled during the load and the wait (with an asOf), and those outside what the facts allowed. */
  asOfSamples: number;
  asOfBroken: number;
  clientErrors: Record<string, number>;
  converged: boolean;
  convergeMs: number | null;
  pass: boolean;
  failures: string[];
  notes: string[];
  details: string[];
  logDir: string;
  /** The processes' warnings and errors, counted by message. */
  logSummary: LogLine[];
  ms: { load: number; row: number };
}

const pad = (s: string, n: number) => (s.length >= n ? s : s + ' '.repeat(n - s.length));

const errorsText = (errors: Record<string, number>) =>
  Object.entries(errors)
    .sort(([, a], [, b]) => b - a)
    .map(([code, n]) => `${code}:${n}`)
    .join(' ') || '-';

/** `lost within the lag / at risk (the lag)`; for the AOF row also its bound. */
function lagCell(r: Row): string {
  if (r.atRisk === null) return '-';
  const lag = r.lostWithinLag > 0 ? r.lagMs : r.atRiskLagMs;
  return `${r.lostWithinLag}/${r.atRisk} (${lag ?? 0} ms${r.boundMs !== null ? `, bound ${r.boundMs}` : ''})`;
}

export function formatTable(rows: Row[]): string {
  const header = [
    'log',
    'fault',
    'acked/ops',
    'facts (reactions)',
    'lost',
    'lost≤lag/at risk (lag)',
    'doubled',
    'short',
    'wrong state',
    'wrong changed',
    'pg',
    'asOf broken',
    'client errors',
    'converge',
    'result',
  ];
  const lines = rows.map((r) => [
    r.eventLog,
    r.fault,
    `${r.ops.acked}/${r.ops.planned}`,
    `${r.facts.set} (${r.facts.reactions})`,
    String(r.lost),
    lagCell(r),
    String(r.doubled),
    String(r.short),
    String(r.wrongState),
    String(r.wrongChanged),
    String(r.pgMismatches),
    `${r.asOfBroken}/${r.asOfSamples}`,
    errorsText(r.clientErrors),
    r.converged ? `${((r.convergeMs ?? 0) / 1000).toFixed(1)} s` : 'no',
    r.pass ? 'PASS' : 'FAIL',
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const fmt = (cells: string[]) => `| ${cells.map((c, i) => pad(c, widths[i]!)).join(' | ')} |`;
  return [
    fmt(header),
    `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`,
    ...lines.map(fmt),
    '',
    'facts (reactions): facts (user, post, kind) the workload set, of them reactions; every column judges likes, favs and every reaction',
    '  (counts and reactionGroups, myState and viewerHasReacted, relation_facts), a kind never set included',
    'asOf broken: sampled counts whose asOf promised changes they did not include (or included more than were made) / samples',
  ].join('\n');
}

/** Why each failing row failed, and the notes of every row (what the faults did). */
export function formatFindings(rows: Row[]): string {
  const out: string[] = [];
  for (const r of rows) {
    out.push(`${r.eventLog} ${r.fault}: ${r.pass ? 'pass' : 'FAIL'} — ${r.title}`);
    for (const n of r.notes) out.push(`    note: ${n}`);
    for (const f of r.failures) out.push(`    failed: ${f}`);
    if (!r.pass) for (const d of r.details.slice(0, 8)) out.push(`    e.g. ${d}`);
    if (!r.pass) {
      for (const l of r.logSummary.filter((l) => l.level !== 'warn').slice(0, 10))
        out.push(`    log: ${l.process} ${l.level} ×${l.count} from ${l.first.slice(11, 23)}: ${l.msg}`);
      out.push(`    logs: ${r.logDir}`);
    }
  }
  return out.join('\n');
}

export function writeReport(path: string, report: unknown): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `${JSON.stringify(report, null, 2)}\n`);
}
