// The import rules of .dependency-cruiser.cjs hold for src/, and they bite: a copy of src/
// with one import against the direction, or one folder cycle, fails them.
import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');
const depcruise = path.join(root, 'node_modules/.bin/depcruise');
const copies: string[] = [];

async function cruise(cwd: string): Promise<{ ok: boolean; output: string }> {
  try {
    const { stdout } = await promisify(execFile)(depcruise, ['src', '--config', '.dependency-cruiser.cjs'], { cwd });
    return { ok: true, output: stdout };
  } catch (error) {
    return { ok: false, output: (error as { stdout: string }).stdout };
  }
}

/** A copy of src/ (and what the rules read) with one more file in it. */
function copyWith(file: string, source: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'tally-layers-'));
  copies.push(dir);
  for (const entry of ['src', 'tsconfig.json', '.dependency-cruiser.cjs', 'package.json']) {
    cpSync(path.join(root, entry), path.join(dir, entry), { recursive: true });
  }
  mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
  writeFileSync(path.join(dir, file), source);
  return dir;
}

afterAll(() => {
  for (const dir of copies) rmSync(dir, { recursive: true, force: true });
});

describe('layers', () => {
  it('src/ imports only downward, with no cycle between folders or modules', async () => {
    const { ok, output } = await cruise(root);
    expect(output).toContain('no dependency violations found');
    expect(ok).toBe(true);
  });

  it('refuses an import from a lower layer into a higher one', async () => {
    const dir = copyWith(
      'src/db/upward.ts',
      "import type { GraphQLContext } from '../graphql/context.js';\nexport type C = GraphQLContext;\n",
    );
    const { ok, output } = await cruise(dir);
    expect(ok).toBe(false);
    expect(output).toMatch(/infrastructure-imports-upward: src\/db\/upward\.ts → src\/graphql\/context\.ts/);
  });

  it('refuses two folders of one layer importing each other', async () => {
    const dir = copyWith('src/relations/loop.ts', "import type { Flusher } from '../counters/flush.js';\nexport type F = Flusher;\n");
    writeFileSync(path.join(dir, 'src/counters/loopBack.ts'), "import type { F } from '../relations/loop.js';\nexport type G = F;\n");
    const { ok, output } = await cruise(dir);
    expect(ok).toBe(false);
    expect(output).toMatch(/no-folder-cycles: src\/(relations|counters) →/);
  });

  it('refuses a module outside every layer (a new folder must be placed in one)', async () => {
    const dir = copyWith('src/misc/helper.ts', "import { LIKE } from '../domain/relations.js';\nexport const h = LIKE;\n");
    const { ok, output } = await cruise(dir);
    expect(ok).toBe(false);
    expect(output).toMatch(/in-a-layer: src\/misc\/helper\.ts/);
  });
});
