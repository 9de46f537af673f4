// The fault suite in its reduced form (`npm run chaos` runs every fault at full scale): a split
// deployment as processes, a small workload with retries, and the faults that matter most —
// processes killed, Redis losing its data mid-load and after it, consumers rewound, counters
// corrupted, connections to Redis and PostgreSQL half-open or killed — with every count,
// myState, `changed` and PostgreSQL checked against the truth, for likes, favs and reactions.
import { describe, expect, it } from 'vitest';
import { runChaos } from '../chaos/chaos.js';
import { formatFindings, formatTable, type Row } from '../chaos/report.js';

const scale = { users: 8, posts: 2, opsPerPost: 150, loadSeconds: 5 };
const logDir = 'test/artifacts/chaos-logs';

function expectAllPass(rows: Row[]) {
  const report = `${formatTable(rows)}\n${formatFindings(rows)}`;
  console.log(report);
  expect(
    rows.filter((r) => !r.pass).map((r) => `${r.eventLog} ${r.fault}`),
    report,
  ).toEqual([]);
  for (const row of rows) {
    expect([row.lost, row.doubled, row.wrongState, row.wrongChanged, row.pgMismatches], `${row.eventLog} ${row.fault}`).toEqual([
      0, 0, 0, 0, 0,
    ]);
  }
}

describe('the fault suite, reduced', () => {
  it('loses, doubles and misstates nothing with EVENT_LOG=redis', async () => {
    const rows = await runChaos({
      eventLogs: ['redis'],
      faults: ['worker-kill', 'api-kill', 'redis-loss-mid-load', 'redis-loss-after-load', 'consumer-rewind', 'counters-corruption'],
      scale,
      convergeCapMs: 30_000,
      logDir,
    });
    expect(rows).toHaveLength(6);
    expectAllPass(rows);
  }, 400_000);

  it('recovers by itself from half-open and killed Redis and PostgreSQL connections with EVENT_LOG=redis', async () => {
    const rows = await runChaos({
      eventLogs: ['redis'],
      faults: ['redis-half-open', 'pg-half-open', 'pg-terminate-backend', 'redis-client-kill'],
      scale,
      convergeCapMs: 30_000,
      logDir,
    });
    expect(rows).toHaveLength(4);
    expectAllPass(rows);
  }, 300_000);

  it('loses, doubles and misstates nothing after a Redis data loss with EVENT_LOG=kafka', async () => {
    const rows = await runChaos({ eventLogs: ['kafka'], faults: ['redis-loss-after-load'], scale, convergeCapMs: 30_000, logDir });
    expect(rows).toHaveLength(1);
    expectAllPass(rows);
  }, 200_000);
});
