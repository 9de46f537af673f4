// Project-relative paths that work the same from src/ (tsx, vitest) and dist/ (node).
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';

const ROOT = fileURLToPath(new URL('../', import.meta.url));

export const projectPath = (...parts: string[]) => join(ROOT, ...parts);
