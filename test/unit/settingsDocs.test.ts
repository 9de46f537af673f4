// The Settings table of docs/operations.md is what operators configure Tally from: it must
// name exactly the variables loadConfig reads, with the defaults loadConfig really uses.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { projectPath } from '../../src/paths.js';

const VARIABLE = /^[A-Z][A-Z0-9_]*$/;

interface Row {
  names: string[];
  /** The default column, one entry per name when the row lists one default per variable. */
  defaults: string[];
}

/** The rows of the markdown table under "## Settings". */
function settingsTable(): Row[] {
  const markdown = readFileSync(projectPath('docs/operations.md'), 'utf8');
  const section = markdown.split(/^## /m).find((s) => s.startsWith('Settings\n')) ?? '';
  const lines = section.split('\n').filter((line) => line.startsWith('|'));
  return lines.slice(2).map((line) => {
    const [first = '', second = ''] = line.split('|').slice(1);
    const names = [...first.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
    const parts = second.trim().split(/,\s+/);
    return { names, defaults: parts.length === names.length ? parts : names.map(() => second.trim()) };
  });
}

/** Loads the config from `env`, recording every variable it reads (refusals count: their reads happened). */
function recordReads(env: Record<string, string>, read: Set<string>): void {
  const recording = new Proxy(env, {
    get(target, property) {
      // Symbols and lower-case properties are the runtime looking at the object, not a setting.
      if (typeof property === 'string' && VARIABLE.test(property)) read.add(property);
      return Reflect.get(target, property);
    },
  });
  try {
    loadConfig(recording);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
  }
}

/** Every variable loadConfig reads in any branch: the empty environment, then ones that take each conditional branch. */
function variablesRead(): Set<string> {
  const read = new Set<string>();
  const environments: Record<string, string>[] = [
    {},
    { NODE_ENV: 'production', JWT_SECRET: 'x'.repeat(32) },
    { NODE_ENV: 'test', MEMBER_ID: 'worker-0', CURSOR_SECRET: 'y'.repeat(32) },
    {
      EVENT_LOG: 'kafka',
      KAFKA_BROKERS: '127.0.0.1:9092',
      KAFKA_SASL_MECHANISM: 'plain',
      KAFKA_SASL_USERNAME: 'tally',
      KAFKA_SASL_PASSWORD: 'secret',
    },
  ];
  for (const env of environments) recordReads(env, read);
  return read;
}

/** A nested config's primitive values by path (`http.headersTimeoutMs` → 10000). */
function leaves(value: unknown, path = '', into = new Map<string, unknown>()): Map<string, unknown> {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    for (const [key, child] of Object.entries(value)) leaves(child, path ? `${path}.${key}` : key, into);
  } else {
    into.set(path, value);
  }
  return into;
}

/**
 * The default loadConfig gives `name`, found without a map of variables to config paths
 * (that map would duplicate config.ts): set the variable to a value next to the documented
 * default, and the one config value that becomes exactly that value is the variable's; its
 * value in `loadConfig({})` is the default. Undefined when no probe identifies it.
 */
function parsedDefault(name: string, documented: string): string | undefined {
  const defaults = leaves(loadConfig({}));
  const probes: (number | boolean)[] =
    documented === 'true' || documented === 'false' ? [documented !== 'true'] : [Number(documented) + 1, Number(documented) - 1];
  for (const probe of probes) {
    let changed: Map<string, unknown>;
    try {
      changed = leaves(loadConfig({ [name]: String(probe) }));
    } catch (error) {
      if (error instanceof ConfigError) continue; // out of the variable's range: try the other side
      throw error;
    }
    const paths = [...changed].filter(([path, value]) => value === probe && defaults.get(path) !== probe).map(([path]) => path);
    if (paths.length === 1) return String(defaults.get(paths[0]!));
  }
  return undefined;
}

describe('the Settings table of docs/operations.md', () => {
  const rows = settingsTable();
  const documented = rows.flatMap((row) => row.names);

  it('names every variable loadConfig reads, and only those', () => {
    const read = variablesRead();
    expect({
      readButNotInTable: [...read].filter((name) => !documented.includes(name)).sort(),
      inTableButNeverRead: documented.filter((name) => !read.has(name)).sort(),
    }).toEqual({ readButNotInTable: [], inTableButNeverRead: [] });
  });

  it('names each variable once, in backticks', () => {
    expect(documented.filter((name) => !VARIABLE.test(name))).toEqual([]);
    expect(documented.filter((name, i) => documented.indexOf(name) !== i)).toEqual([]);
  });

  // Only plain numbers and true/false are checked: other defaults are prose ("a development
  // secret", "`true` (`false` in production)") or strings no probe value can stand in for.
  it('states the numeric and true/false defaults loadConfig uses', () => {
    const checked: string[] = [];
    const wrong: string[] = [];
    for (const row of rows) {
      row.names.forEach((name, i) => {
        const stated = row.defaults[i]!.replace(/[`,]/g, '');
        if (!/^(\d+|true|false)$/.test(stated)) return;
        checked.push(name);
        // Undefined: no config value took a value next to the stated one, so the default is another.
        const actual = parsedDefault(name, stated) ?? 'another value';
        if (actual !== stated) wrong.push(`${name}: the table says ${stated}, loadConfig uses ${actual}`);
      });
    }
    expect(wrong).toEqual([]);
    expect(checked).toEqual(expect.arrayContaining(['PORT', 'HTTP_HEADERS_TIMEOUT_MS', 'RATE_LIMIT_WINDOW_MS', 'KAFKA_IDEMPOTENT']));
  });
});
