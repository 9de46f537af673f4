// The Node binaries the runtime comparison runs Tally on. BENCH_NODE_BINARIES lists them
// (comma-separated paths, the first is the reference; "none" skips the comparison). By default:
// Node 20 and Node 24, each the one running this bench if it is that major, else the first
// `node` of that major on PATH, else (Node 24 only) .ci/node24, which installs it from the npm
// registry when missing: the same Node 24 CI runs on.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { projectPath } from '../../src/paths.js';

export type NodeBinary = { path: string /** `node --version` of that binary. */; version: string };

const versionOf = (path: string) => execFileSync(path, ['--version'], { encoding: 'utf8' }).trim();
const majorOf = (path: string) => {
  try {
    return Number(/^v(\d+)\./.exec(versionOf(path))?.[1]);
  } catch {
    return null; // no node there, or one that does not run
  }
};

function find(major: 20 | 24): string {
  const candidates = [
    process.execPath,
    ...(process.env.PATH ?? '')
      .split(':')
      .filter(Boolean)
      .map((dir) => join(dir, 'node')),
  ];
  const found = candidates.find((path) => majorOf(path) === major);
  if (found) return found;
  if (major === 20) throw new Error('no Node 20 on PATH');
  // npm's output goes to our stderr; its stdout is the bin directory.
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
