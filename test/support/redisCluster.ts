// A private 3-master Redis Cluster for tests that must prove Tally runs on one: three
// redis-server processes on free loopback ports, joined with `redis-cli --cluster create`.
// Everything on disk lives in a temp dir of its own; `stop` removes it, and the processes are
// killed with the test process if that ends first (a failed or interrupted run).
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { freePort, waitForPing } from './redisServer.js';
import { waitFor } from './wait.js';

const MASTERS = 3;

export interface RedisCluster {
  /** Seed nodes as REDIS_CLUSTER_NODES takes them (host:port). */
  nodes: string[];
  /** What the tests ran on, for their output. */
  label: string;
  stop(): Promise<void>;
}

interface Running {
  dir: string;
  children: ChildProcess[];
}

const running = new Set<Running>();
const cleanUpAll = () => {
  for (const run of running) cleanUp(run);
};
process.on('exit', cleanUpAll);
// Ctrl-C reaches the whole process group and ends this process without 'exit': clean up,
// then let the signal do what it would have done.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    cleanUpAll();
    process.kill(process.pid, signal);
  });
}

function cleanUp(run: Running) {
  for (const child of run.children) if (child.exitCode === null) child.kill('SIGKILL');
  rmSync(run.dir, { recursive: true, force: true });
  running.delete(run);
}

/** One cluster-mode redis-server; its bus gets a free port of its own (not port + 10000). */
async function startNode(run: Running): Promise<string> {
  for (let attempt = 0; ; attempt++) {
    const port = await freePort();
    const busPort = await freePort();
    if (busPort === port) continue;
    // prettier-ignore
    const child = spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--daemonize',
        'no',
        '--cluster-enabled',
        'yes',
        '--cluster-port',
        String(busPort),
        '--cluster-config-file',
        join(run.dir, `nodes-${port}.conf`),
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        run.dir,
      ],
      { stdio: 'ignore' },
    );
    run.children.push(child);
    if (await waitForPing(`redis://127.0.0.1:${port}`, child)) return `127.0.0.1:${port}`;
    child.kill('SIGKILL');
    if (attempt >= 3) throw new Error('redis-server did not start in cluster mode');
  }
}

/** Polls CLUSTER INFO on every node until each sees all slots served. */
async function waitForClusterOk(nodes: string[], timeoutMs = 20_000) {
  const probes = nodes.map((node) => new Redis(`redis://${node}`, { maxRetriesPerRequest: 0 }));
  try {
    await waitFor(
      () => Promise.all(probes.map((p) => p.cluster('INFO') as Promise<string>)),
      (infos) => infos.every((info) => info.includes('cluster_state:ok')),
      { what: 'cluster_state:ok on every node', timeoutMs, intervalMs: 100 },
    );
  } finally {
    for (const probe of probes) probe.disconnect();
  }
}

export async function startRedisCluster(): Promise<RedisCluster> {
  const run: Running = { dir: mkdtempSync(join(tmpdir(), 'tally-cluster-')), children: [] };
  running.add(run);
  try {
    const nodes: string[] = [];
    for (let i = 0; i < MASTERS; i++) nodes.push(await startNode(run));
    await promisify(execFile)('redis-cli', ['--cluster', 'create', ...nodes, '--cluster-replicas', '0', '--cluster-yes'], {
      timeout: 30_000,
    });
    await waitForClusterOk(nodes);
    return {
      nodes,
      label: `a ${MASTERS}-master Redis Cluster (${nodes.join(', ')})`,
      async stop() {
        await Promise.all(
          run.children.map(
            (child) =>
              new Promise<void>((resolve) => {
                if (child.exitCode !== null || child.signalCode !== null) return resolve();
                child.once('exit', () => resolve());
                child.kill('SIGTERM');
              }),
          ),
        );
        cleanUp(run);
      },
    };
  } catch (error) {
    cleanUp(run);
    throw error;
  }
}
