// What the documentation guards read: the repository's files, the Markdown pages whole, and of
// source files only their comments. A string literal in code is checked by running the code;
// a comment or a page is checked by nothing else, so that is where names drift.
import { readdirSync, readFileSync } from 'node:fs';
import ts from 'typescript';
import { projectPath } from '../../src/paths.js';

/** Text with everything but the part a guard reads blanked to spaces, so offsets keep their line. */
export interface Text {
  file: string;
  text: string;
}

/** One name a page or comment uses, where it stands. */
export interface Mention {
  name: string;
  /** `file:line`, for the failure message. */
  at: string;
}

// Not the project's own files: the dependencies and git's store (besides what .gitignore names).
const SKIPPED = new Set(['node_modules', '.git']);

/** A regular expression's source for a path where `*` (and a documented `<placeholder>`) stands for part of a segment. */
export const globSource = (glob: string): string =>
  glob
    .replace(/[.+?^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '[^/]*')
    .replace(/<[^>/]+>/g, '[^/]+');

/** .gitignore's rules as [pattern, ignores] pairs: a later match overrides an earlier one, as in git. */
const gitignoreRules = (): [RegExp, boolean][] =>
  readFileSync(projectPath('.gitignore'), 'utf8')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const negated = line.startsWith('!');
      const pattern = (negated ? line.slice(1) : line).replace(/\/$/, '');
      // A pattern with an inner slash is rooted; one without matches a name at any depth.
      const rooted = pattern.replace(/^\//, '').includes('/');
      return [new RegExp(`${rooted ? '^' : '(^|/)'}${globSource(pattern.replace(/^\//, ''))}(/|$)`), !negated] as [RegExp, boolean];
    });

const GITIGNORE = gitignoreRules();

/** Whether .gitignore names `file` (or a folder above it): build output, generated code, results. */
export function ignored(file: string): boolean {
  let result = false;
  for (const [pattern, ignores] of GITIGNORE) if (pattern.test(file)) result = ignores;
  return result;
}

/** Every file of the repository, project-relative: what a fresh clone has, so a test reads the same anywhere. */
export function repositoryFiles(dir = ''): string[] {
  return readdirSync(projectPath(dir), { withFileTypes: true }).flatMap((entry) => {
    const relative = dir ? `${dir}/${entry.name}` : entry.name;
    if (SKIPPED.has(entry.name) || ignored(relative)) return [];
    return entry.isDirectory() ? repositoryFiles(relative) : [relative];
  });
}

const read = (file: string) => readFileSync(projectPath(file), 'utf8');

/** The README, docs/ and any other Markdown page of the project. */
export const markdownPages = (): string[] => repositoryFiles().filter((f) => f.endsWith('.md'));

/** Source files whose comments are read: TypeScript of src/, test/, bench/, prisma/ and deploy/, the Lua scripts, and deploy/'s scripts, compose file and Containerfiles. */
export const sourceFiles = (): string[] =>
  repositoryFiles().filter(
    (f) =>
      (/^(src|test|bench|prisma|deploy)\//.test(f) && f.endsWith('.ts')) ||
      (f.startsWith('lua/') && f.endsWith('.lua')) ||
      (f.startsWith('deploy/') && /(\.sh|\.yaml|\.conf|\/Containerfile)$/.test(f)),
  );

/** [start, end) offsets of a TypeScript file's literals (strings, templates, regular expressions), from its syntax tree. */
function typescriptLiterals(file: string, text: string): [number, number][] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const ranges: [number, number][] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isLiteralExpression(node) || ts.isTemplateLiteralToken(node)) ranges.push([node.getStart(source), node.end]);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return ranges.sort((a, b) => a[0] - b[0]);
}

/** [start, end) offsets of the comments of a TypeScript file: outside its literals, `//` and `/*` start one. */
function typescriptComments(file: string, text: string): [number, number][] {
  const ranges: [number, number][] = [];
  const literals = typescriptLiterals(file, text);
  const comment = /\/\/[^\n]*|\/\*[\s\S]*?\*\//g;
  let next = 0;
  for (let m = comment.exec(text); m; m = comment.exec(text)) {
    while (literals[next] && literals[next]![1] <= m.index) next++;
    const literal = literals[next];
    if (literal && literal[0] <= m.index) {
      comment.lastIndex = literal[1]; // the match is inside a string or regular expression
      continue;
    }
    ranges.push([m.index, m.index + m[0].length]);
  }
  return ranges;
}

/** [start, end) offsets of the comments of a Lua script: `--` to the line's end, `--[[ ]]` blocks; strings skipped. */
function luaComments(text: string): [number, number][] {
  const ranges: [number, number][] = [];
  const token = /--\[(=*)\[[\s\S]*?\]\1\]|--[^\n]*|\[(=*)\[[\s\S]*?\]\2\]|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'/g;
  for (const m of text.matchAll(token)) if (m[0].startsWith('--')) ranges.push([m.index, m.index + m[0].length]);
  return ranges;
}

// By text: prose() and code() read each file once each, and parsing is most of the cost.
const rangesOf = new Map<string, [number, number][]>();

function commentRanges(file: string, text: string): [number, number][] {
  const known = rangesOf.get(text);
  if (known) return known;
  const ranges = file.endsWith('.lua') ? luaComments(text) : file.endsWith('.ts') ? typescriptComments(file, text) : hashComments(text);
  rangesOf.set(text, ranges);
  return ranges;
}

/** `#` to the end of the line: shell scripts, YAML, Containerfiles (none of ours has a `#` inside a value). */
function hashComments(text: string): [number, number][] {
  return [...text.matchAll(/(^|[ \t])#[^\n]*/gm)].map((m) => [m.index! + m[1]!.length, m.index! + m[0].length]);
}

const spaces = (text: string) => text.replace(/[^\n]/g, ' ');

/** `text` with the characters outside the (sorted) ranges blanked, or (keep = false) those inside; newlines stay. */
function blank(text: string, ranges: [number, number][], keep: boolean): string {
  let out = '';
  let at = 0;
  for (const [start, end] of ranges) {
    out += keep ? spaces(text.slice(at, start)) + text.slice(start, end) : text.slice(at, start) + spaces(text.slice(start, end));
    at = end;
  }
  const rest = text.slice(at);
  return out + (keep ? spaces(rest) : rest);
}

/** A source file's text with everything but its comments blanked. */
export const commentsOf = (file: string, text: string): string => blank(text, commentRanges(file, text), true);

/** The pages whole and the comments of the source files: where documentation lives. */
export function prose(): Text[] {
  const pages = markdownPages().map((file) => ({ file, text: read(file) }));
  const comments = sourceFiles().map((file) => ({ file, text: commentsOf(file, read(file)) }));
  return [...pages, ...comments];
}

/** A source file with its comments blanked: what runs. */
export function code(file: string): Text {
  const text = read(file);
  return { file, text: blank(text, commentRanges(file, text), false) };
}

/** Every match of `pattern` (global; the first group that matched, when it has groups, is the name) in `texts`. */
export function mentions(texts: Text[], pattern: RegExp): Mention[] {
  return texts.flatMap(({ file, text }) =>
    [...text.matchAll(pattern)].map((m) => ({
      name: m.slice(1).find((group) => group !== undefined) ?? m[0],
      at: `${file}:${text.slice(0, m.index).split('\n').length}`,
    })),
  );
}

/** The variables of a page's settings tables (those whose first column is `variable` or `env`), with the section each is in. */
export function tableVariables({ file, text }: Text): (Mention & { section: string })[] {
  const rows: (Mention & { section: string })[] = [];
  let section = '';
  let inTable = false;
  text.split('\n').forEach((line, i) => {
    if (line.startsWith('#')) section = line.replace(/^#+\s*/, '');
    if (!line.startsWith('|')) inTable = false;
    else if (/^\|\s*(variable|env)\s*\|/.test(line)) inTable = true;
    else if (inTable && !line.startsWith('|---'))
      for (const m of (line.split('|')[1] ?? '').matchAll(/`([A-Z][A-Z0-9_]*)`/g))
        rows.push({ name: m[1]!, at: `${file}:${i + 1}`, section });
  });
  return rows;
}
