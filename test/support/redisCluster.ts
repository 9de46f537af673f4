// A private 3-master Redis Cluster for tests that must prove Tally runs on one: three
// redis-server processes on free loopback ports (and, when asked, a replica for each, so a
// master can fail over), joined with `redis-cli --cluster create`.
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
  /** Seed nodes as REDIS_CLUSTER_NODES takes them (host:port): every node, replicas too. */
  nodes: string[];
  /** What the tests ran on, for their output. */
  label: string;
  /**
   * A manual failover (CLUSTER FAILOVER sent to a replica: the master hands over once the
   * replica caught up, nothing acknowledged is lost) of the shard holding the `shard`-th
   * slot range; resolves once every node sees the new master and the cluster is ok.
   */
  failover(shard: number): Promise<{ from: string; to: string }>;
  stop(): Promise<void>;
}

export interface RedisClusterOptions {
  /** Replicas per master (0: none, as before). */
  replicas?: number;
  /** Each node logs to `redis-<port>.log` here (else nowhere). */
  logDir?: string;
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
// then let the signal do what it would have done (nothing more when the process handles it
// itself, as the chaos CLI does: it cleans up and exits on its own).
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    cleanUpAll();
    if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
  });
}

function cleanUp(run: Running) {
  for (const child of run.children) if (child.exitCode === null) child.kill('SIGKILL');
  rmSync(run.dir, { recursive: true, force: true });
  running.delete(run);
}

/** One cluster-mode redis-server; its bus gets a free port of its own (not port + 10000). */
async function startNode(run: Running, logDir?: string): Promise<string> {
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
        // A replica syncs at once (not after the default 5 s wait for others to join the transfer).
        '--repl-diskless-sync-delay',
        '0',
        ...(logDir ? ['--logfile', join(logDir, `redis-${port}.log`)] : []),
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

/** CLUSTER NODES as one node sees it: each node's address, id, role and its master's id. */
async function clusterNodes(node: string) {
  const probe = new Redis(`redis://${node}`, { maxRetriesPerRequest: 0 });
  try {
    const text = (await probe.cluster('NODES')) as string;
    return text
      .trim()
      .split('\n')
      .map((line) => {
        const [id, addr, flags, masterId, , , , , ...slots] = line.split(' ');
        return {
          id: id!,
          addr: addr!.split('@')[0]!,
          master: flags!.split(',').includes('master'),
          // Slots it serves (a node joining as a replica may still call itself a master, with none).
          masterId: masterId!,
          firstSlot: slots.length > 0 ? Number.parseInt(slots[0]!, 10) : Number.POSITIVE_INFINITY,
        };
      });
  } finally {
    probe.disconnect();
  }
}

const servesSlots = (n: { master: boolean; firstSlot: number }) => n.master && Number.isFinite(n.firstSlot);

/** Polls until every node sees `addr` as a master with a replica in sync, and the cluster is ok. */
async function waitForMaster(nodes: string[], addr: string, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const views = await Promise.all(nodes.map(clusterNodes));
    const agreed = views.every((view) => view.find((n) => n.addr === addr)?.master);
    const probe = new Redis(`redis://${addr}`, { maxRetriesPerRequest: 0 });
    const replication = await (probe.info('replication') as Promise<string>).finally(() => probe.disconnect());
    // The replica (the old master) synced: the next failover of this shard can happen.
    if (agreed && /slave0:.*state=online/.test(replication)) return waitForClusterOk(nodes, Math.max(1000, deadline - Date.now()));
    if (Date.now() > deadline) throw new Error(`${addr} did not become a master with a replica in sync within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

export async function startRedisCluster(options: RedisClusterOptions = {}): Promise<RedisCluster> {
  const replicas = options.replicas ?? 0;
  const run: Running = { dir: mkdtempSync(join(tmpdir(), 'tally-cluster-')), children: [] };
  running.add(run);
  try {
    const nodes: string[] = [];
    for (let i = 0; i < MASTERS * (1 + replicas); i++) nodes.push(await startNode(run, options.logDir));
    await promisify(execFile)('redis-cli', ['--cluster', 'create', ...nodes, '--cluster-replicas', String(replicas), '--cluster-yes'], {
      timeout: 30_000,
    });
    await waitForClusterOk(nodes);
    // Every replica synced, so a failover can start at once.
    if (replicas > 0) for (const master of (await clusterNodes(nodes[0]!)).filter(servesSlots)) await waitForMaster(nodes, master.addr);
    return {
      nodes,
      label: `a ${MASTERS}-master Redis Cluster${replicas > 0 ? ` with ${replicas} replica(s) each` : ''} (${nodes.join(', ')})`,
      async failover(shard) {
        const view = await clusterNodes(nodes[0]!);
        const master = view.filter(servesSlots).sort((a, b) => a.firstSlot - b.firstSlot)[shard];
        const replica = view.find((n) => !n.master && n.masterId === master?.id);
        if (!master || !replica) throw new Error(`no replica for shard ${shard} to fail over to`);
        const probe = new Redis(`redis://${replica.addr}`, { maxRetriesPerRequest: 0 });
        await (probe.cluster('FAILOVER') as Promise<unknown>).finally(() => probe.disconnect());
        await waitForMaster(nodes, replica.addr);
        return { from: master.addr, to: replica.addr };
      },
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
