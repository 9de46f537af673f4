// The registry (src/domain/relations.ts) is the one place a relation kind is named: code that
// spells one itself ('like', "fav", `follow`, a reaction's r_…) keeps a rule the registry
// cannot change. Comments may name them; generated files are not ours.
import { describe, expect, it } from 'vitest';
import { createRelationKinds, DEFAULT_REACTIONS } from '../../src/domain/relations.js';
import { code, mentions, repositoryFiles } from '../support/docText.js';

const OWNER = 'src/domain/relations.ts';
const names = createRelationKinds(DEFAULT_REACTIONS).all.map((kind) => kind.name);
// A quoted kind name, alone or starting a "name:slot" or "name:<type>" string; any r_ reaction name.
const spelled = new RegExp(`['"\`]((?:${names.join('|')})(?=[:'"\`])|r_[a-z0-9_]+)`, 'g');

describe('relation kinds', () => {
  it('are named in code by the registry only', () => {
    const files = repositoryFiles().filter(
      (file) => /^(src\/.*\.ts|lua\/.*\.lua)$/.test(file) && file !== OWNER && !/^src\/(db\/generated\/|graphql\/generated\.ts)/.test(file),
    );
    expect(files.length).toBeGreaterThan(50);
    expect(mentions(files.map(code), spelled).map((m) => `${m.name} (${m.at})`)).toEqual([]);
  });
});
