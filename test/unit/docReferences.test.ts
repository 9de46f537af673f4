// Every name the README, docs/ and the source comments use for a part of the repository must
// be one the repository has, and the settings, scripts and metrics it has must be documented.
// Nothing else reads these names, so without this they drift (flush.ts named the fold
// script by its old KEYS count long after it took one more). Beside it: docLinks.test.ts checks
// Markdown links, settingsDocs.test.ts the Settings table against loadConfig.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../src/metrics.js';
import { projectPath } from '../../src/paths.js';
import {
  code,
  commentsOf,
  globSource,
  ignored,
  type Mention,
  mentions,
  prose,
  repositoryFiles,
  sourceFiles,
  tableVariables,
} from '../support/docText.js';

const files = repositoryFiles();
const texts = prose();
const pages = texts.filter((t) => t.file.endsWith('.md'));

/** The names that fail `exists`, each with every place that uses it: `name (file:line, …)`. */
function unknown(found: Mention[], exists: (name: string) => boolean): string[] {
  const places = new Map<string, Set<string>>();
  for (const { name, at } of found) if (!exists(name)) places.set(name, (places.get(name) ?? new Set()).add(at));
  return [...places].map(([name, at]) => `${name} (${[...at].join(', ')})`).sort();
}

/** Names `wanted` has that no mention names: `name (where it is defined)`. */
function unnamed(wanted: Map<string, string>, found: Mention[]): string[] {
  const named = new Set(found.map((m) => m.name));
  return [...wanted]
    .filter(([name]) => !named.has(name))
    .map(([name, where]) => `${name} (${where})`)
    .sort();
}

/** A documented path (a folder with or without its `/`) as a pattern for the files at or under it. */
const pathPattern = (name: string) => new RegExp(`^${globSource(name.replace(/\/$/, ''))}(/|$)`);

describe('names in the README, docs/ and source comments', () => {
  it('are read from comments, not from strings, templates or regular expressions', () => {
    // Guards the reader itself: a rule that passes must have seen every comment and no code.
    const typescript = `const a = '// src/no.ts'; // src/yes.ts
      const r = /\\/\\* no/; /* lua/yes.lua */ const t = \`/* \${a} */\`;`;
    expect(commentsOf('x.ts', typescript).match(/\S+/g)).toEqual(['//', 'src/yes.ts', '/*', 'lua/yes.lua', '*/']);
    const lua = "local s = '-- no' -- yes\n--[[ block ]] local t = [[ -- no ]]";
    expect(commentsOf('x.lua', lua).match(/\S+/g)).toEqual(['--', 'yes', '--[[', 'block', ']]']);
  });

  it('name repository paths that exist', () => {
    // A path starts at a top folder (not inside another path, a URL or `../`) and ends at
    // whitespace, quotes, brackets or punctuation; `file.ts:function` and `#anchor` name the file.
    const found = mentions(texts, /(?<![\w./@<-])((?:src|lua|test|bench|prisma|scripts|docs)\/[^\s`'"()[\],;]*)/g).map((m) => ({
      ...m,
      name: m.name.replace(/[:#].*$/, '').replace(/\.+$/, ''),
    }));
    // A path .gitignore names (generated code, results, artifacts) is made by running something.
    const exists = (name: string) => {
      const pattern = pathPattern(name);
      return ignored(name) || files.some((file) => pattern.test(file));
    };
    expect(unknown(found, exists)).toEqual([]);
  });

  it('name functions and constants the file they name defines', () => {
    // `<path>.ts:name` walks a reader to `name` in that file: a renamed function must not leave it behind.
    const found = mentions(texts, /(?<![\w./@<-])((?:src|test|bench|prisma|scripts)\/[\w./-]+\.ts:[A-Za-z_$][\w$]*)/g);
    const defines = (name: string) => {
      const [file, identifier] = name.split(':') as [string, string];
      if (!files.includes(file)) return true; // an unknown path is the test above's to report
      return new RegExp(`\\b${identifier.replace(/\$/g, '\\$')}\\b`).test(code(file).text);
    };
    expect(unknown(found, defines)).toEqual([]);
  });

  it('name Lua scripts that exist in lua/', () => {
    const scripts = new Set(files.filter((f) => f.startsWith('lua/') && f.endsWith('.lua')).map((f) => f.split('/').pop()));
    // `verbNoun-N` without `.lua` names the script too when lua/ has a verbNoun: N is its KEYS count.
    const verbNouns = new Set([...scripts].map((script) => script?.replace(/-\d+\.lua$/, '')));
    const found = [
      ...mentions(texts, /(?<![\w<-])([A-Za-z][\w-]*\.lua)\b/g),
      ...mentions(texts, /\b([a-z][A-Za-z]*-\d+)\b(?!\.lua)/g)
        .filter((m) => verbNouns.has(m.name.replace(/-\d+$/, '')))
        .map((m) => ({ ...m, name: `${m.name}.lua` })),
    ];
    expect(unknown(found, (name) => scripts.has(name))).toEqual([]);
  });

  it('name npm scripts package.json has, and name every one of them', () => {
    const scripts = Object.keys(JSON.parse(readFileSync(projectPath('package.json'), 'utf8')).scripts as Record<string, string>);
    // A script run by name, or by npm's shortcut for start, stop and test (npm's own commands, ci or install, are no scripts).
    const run = mentions(texts, /\bnpm\s+run(?:-script)?\s+([\w:.-]*[\w])/g);
    const shortcuts = mentions(texts, /\bnpm\s+(start|stop|test)\b/g);
    // npm runs pre- and post- scripts itself: documenting one is naming it, in backticks.
    const hooks = mentions(pages, /`((?:pre|post)[\w:.-]+)`/g);
    const isHook = (name: string) => /^(pre|post)/.test(name);
    const wanted = new Map(scripts.map((name) => [name, 'package.json']));
    expect({
      unknown: unknown([...run, ...shortcuts], (name) => scripts.includes(name)),
      undocumented: unnamed(wanted, [
        ...[...run, ...shortcuts].filter((m) => m.at.includes('.md:')),
        ...hooks.filter((m) => isHook(m.name)),
      ]),
    }).toEqual({ unknown: [], undocumented: [] });
  });

  it('name metrics the code registers, and the docs name every one of them', () => {
    const { registry } = createMetrics({
      lag: async () => [],
      redisRoundTrips: () => 0,
      documentCacheBytes: () => ({ parsed: 0, compiled: 0 }),
      announcementsListening: () => true,
    });
    const registered = registry.getMetricsAsArray().map((metric) => metric.name);
    // `tally_t_<run>` and the like are database name prefixes; `tally_process_*` stands for a family.
    const found = mentions(texts, /\b(tally_[a-z0-9_]*\*?)/g).filter((m) => !m.name.endsWith('_'));
    const covers = (name: string, metric: string) =>
      name.endsWith('*') ? metric.startsWith(name.slice(0, -1)) : metric === name.replace(/_(bucket|sum|count)$/, '');
    const documented = found.filter((m) => m.at.includes('.md:'));
    expect({
      unknown: unknown(found, (name) => registered.some((metric) => covers(name, metric))),
      undocumented: registered.filter((metric) => !documented.some((m) => covers(m.name, metric))).sort(),
    }).toEqual({ unknown: [], undocumented: [] });
  });

  it('document the environment variables the tests, bench and fault suite read, and name only settings the code has', () => {
    // src/config.ts's reads are settingsDocs.test.ts's; these are the others: `env.X`,
    // `env['X']`, and names a file reads by a computed `env[name]` or through the bench's
    // `intSetting` (`int('BENCH_X', …)`, `intSetting(env, 'BENCH_X', …)`).
    // Not test/fixtures/ or bench/baselines/: processes a test or the bench starts, with an
    // environment it sets itself.
    const readers = sourceFiles()
      .filter((f) => f.endsWith('.ts') && f !== 'src/config.ts' && !/^(test\/fixtures|bench\/baselines)\//.test(f))
      .map(code);
    const direct = mentions(readers, /\benv\??\.([A-Z][A-Z0-9_]*)\b|\benv\[\s*'([A-Z][A-Z0-9_]*)'\s*\]/g);
    const computed = mentions(
      readers.filter((r) => /\benv\[[a-z]\w*\]|\bintSetting\(/.test(r.text)),
      /\b[a-z]\w*\(\s*(?:[\w.]+,\s*)?'([A-Z][A-Z0-9]*_[A-Z0-9_]+)'/g,
    );
    const read = [...direct, ...computed];
    // The operating system's, not Tally's.
    const system = new Set(['PATH', 'HOME']);
    const named = new Set(mentions(pages, /`([A-Z][A-Z0-9_]*)(?:=[^`]*)?`/g).map((m) => m.name));
    // operations.md's Settings table is loadConfig's, which settingsDocs.test.ts checks.
    const tabled = pages.flatMap(tableVariables).filter((row) => !(row.at.startsWith('docs/operations.md:') && row.section === 'Settings'));
    const readNames = new Set(read.map((m) => m.name));
    // Prose names settings beside error codes and constants: each must at least be a word of
    // the code, so a renamed setting does not live on in a sentence.
    const words = new Set(sourceFiles().flatMap((f) => code(f).text.match(/\b[A-Z][A-Z0-9_]*\b/g) ?? []));
    const inProse = mentions(pages, /`([A-Z][A-Z0-9]*_[A-Z0-9_]*)(?:=[^`]*)?`/g);
    expect({
      readButUndocumented: unknown(read, (name) => system.has(name) || named.has(name)),
      documentedButNeverRead: unknown(tabled, (name) => readNames.has(name)),
      namedButNotInCode: unknown(inProse, (name) => words.has(name)),
    }).toEqual({ readButUndocumented: [], documentedButNeverRead: [], namedButNotInCode: [] });
  });

  it("read the service's settings in src/config.ts only (where the Settings table is checked against them)", () => {
    const readers = sourceFiles()
      .filter((f) => f.startsWith('src/') && f.endsWith('.ts') && f !== 'src/config.ts' && !f.startsWith('src/db/generated/'))
      .map(code);
    expect(mentions(readers, /\bprocess\.env\b/g).map((m) => m.at)).toEqual([]);
  });
});
