// The direction of imports in src/, checked by `npm run lint` (and so by `npm test`).
// Layers from the bottom up; a module may import its own layer and the ones below, never one
// above. docs/design.md ("Layers") says what each holds.
const layers = [
  { name: 'shared', path: '^src/(domain/|(config|errors|log|paths|requestScope|text)\\.ts$)' },
  { name: 'infrastructure', path: '^src/((redis|db|events|auth)/|metrics\\.ts$)' },
  { name: 'model', path: '^src/(relations|counters)/' },
  { name: 'background', path: '^src/(consumers|jobs)/' },
  { name: 'services', path: '^src/(services|recovery|limits|live)/' },
  { name: 'graphql', path: '^src/graphql/' },
  { name: 'http', path: '^src/http/' },
  { name: 'composition', path: '^src/((app|main|workers)\\.ts$|process/|cli/)' },
];

const upward = layers.slice(0, -1).map((layer, i) => ({
  name: `${layer.name}-imports-upward`,
  comment: `${layer.name} may import only ${layers
    .slice(0, i + 1)
    .map((l) => l.name)
    .join(', ')}`,
  severity: 'error',
  from: { path: layer.path },
  to: { path: layers.slice(i + 1).map((l) => l.path) },
}));

module.exports = {
  forbidden: [
    ...upward,
    {
      name: 'in-a-layer',
      comment: 'every module of src/ belongs to a layer above (a new folder must be placed)',
      severity: 'error',
      from: { path: '^src/', pathNot: layers.map((l) => l.path) },
      to: {},
    },
    {
      name: 'no-folder-cycles',
      comment: 'folders depend one way: no two folders import each other, directly or round a loop',
      severity: 'error',
      scope: 'folder',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'no-module-cycles',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^src/(db|graphql)/generated' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
