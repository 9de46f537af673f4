import { readFile } from 'node:fs/promises';
import { generate, loadCodegenConfig } from '@graphql-codegen/cli';
import { describe, expect, it } from 'vitest';
import { projectPath } from '../../src/paths.js';

describe('generated resolver types', () => {
  it('match schema.graphql (run `npm run codegen` after editing the schema)', async () => {
    const { config } = await loadCodegenConfig({ configFilePath: projectPath('codegen.yml') });
    const outputs = (await generate({ ...config, cwd: projectPath(), silent: true }, false)) as {
      filename: string;
      content: string;
    }[];
    const generated = outputs.find((o) => o.filename.endsWith('src/graphql/generated.ts'));
    const committed = await readFile(projectPath('src/graphql/generated.ts'), 'utf8');
    expect(generated?.content === committed, 'src/graphql/generated.ts is stale: run `npm run codegen`').toBe(true);
  }, 60_000);
});
