// Project-relative paths that work the same from src/ (tsx, vitest), dist/ (node) and the
// bench's compiled copy (.bench-build/): the root is the nearest folder with package.json.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

function findRoot(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) throw new Error(`no package.json above ${from}`);
  }
}

const ROOT = findRoot(dirname(fileURLToPath(import.meta.url)));

export const projectPath = (...parts: string[]) => join(ROOT, ...parts);
