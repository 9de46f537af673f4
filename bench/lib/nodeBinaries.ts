// The Node binaries the runtime comparison runs Tally on (BENCH_NODE_BINARIES; docs/performance.md, "Node 24 against Node 20").
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { projectPath } from '../../src/paths.js';

export type NodeBinary = { path: string; version: string };

const versionOf = (path: string) => execFileSync(path, ['--version'], { encoding: 'utf8' }).trim();
const majorOf = (path: string) => {
  try {
    return Number(/^v(\d+)\./.exec(versionOf(path))?.[1]);
  } catch {
    return null;
  }
};

function find(major: 20 | 24): string {
  const onPath = (process.env.PATH ?? '').split(':').flatMap((dir) => (dir ? [join(dir, 'node')] : []));
  const found = [process.execPath, ...onPath].find((path) => majorOf(path) === major);
  if (found) return found;
  if (major === 20) throw new Error('no Node 20 on PATH');
  return join(execFileSync(projectPath('.ci/node24'), { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim(), 'node');
}

/** The binaries to compare, or [] when BENCH_NODE_BINARIES=none. Throws, with what to set, when one is missing. */
export function nodeBinaries(): NodeBinary[] {
  const listed = process.env.BENCH_NODE_BINARIES?.trim();
  if (listed === 'none') return [];
  try {
    const paths = listed ? listed.split(',').flatMap((p) => (p.trim() ? [p.trim()] : [])) : [find(20), find(24)];
    if (paths.length < 2) throw new Error('it needs at least two binaries');
    return paths.map((path) => ({ path, version: versionOf(path) }));
  } catch (error) {
    throw new Error(
      `runtime comparison: ${(error as Error).message}; set BENCH_NODE_BINARIES=/path/to/node20,/path/to/node24 (or none to skip it)`,
    );
  }
}
