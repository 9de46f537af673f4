// Loads lua/<name>-<keys>.lua once, inlines `--- @include "includes/x"` lines (and the
// generated includes/keyNames and includes/viewSlots), and registers each script on a connection with defineCommand
// (EVALSHA, falling back to EVAL). The typed calls are in src/redis/scripts.ts.
import { readdirSync, readFileSync } from 'node:fs';
import type { Cluster, Redis } from 'ioredis';
import { VIEW_SLOTS } from '../domain/counters.js';
import { projectPath } from '../paths.js';
import { LUA_KEY_NAMES } from './keys.js';

const LUA_DIR = projectPath('lua');
const INCLUDE = /^--- @include "([\w/]+)"\s*$/gm;

/** `includes/keyNames`: the key kinds scripts name themselves, spelled by src/redis/keys.ts. */
const KEY_NAMES_INCLUDE = 'includes/keyNames';
const keyNamesLua = () =>
  `local KEY = { ${Object.entries(LUA_KEY_NAMES)
    .map(([kind, spelling]) => `${kind} = '${spelling}'`)
    .join(', ')} }\n`;

/** `includes/viewSlots`: the counter slots views move, spelled by src/domain/counters.ts. */
const VIEW_SLOTS_INCLUDE = 'includes/viewSlots';
const viewSlotsLua = () => `local VIEW_SLOT = { total = ${VIEW_SLOTS.total}, unique = ${VIEW_SLOTS.unique} }\n`;

function expand(source: string, seen = new Set<string>()): string {
  return source.replace(INCLUDE, (_, name: string) => {
    if (seen.has(name)) return '';
    seen.add(name);
    if (name === KEY_NAMES_INCLUDE) return keyNamesLua();
    if (name === VIEW_SLOTS_INCLUDE) return viewSlotsLua();
    return expand(readFileSync(`${LUA_DIR}/${name}.lua`, 'utf8'), seen);
  });
}

export interface ScriptSource {
  name: string;
  numberOfKeys: number;
  lua: string;
}

/** Every script under lua/, with includes inlined. */
export function loadScripts(): ScriptSource[] {
  return readdirSync(LUA_DIR)
    .map((file) => /^(\w+)-(\d+)\.lua$/.exec(file))
    .filter((m): m is RegExpExecArray => m !== null)
    .map(([file, name, keys]) => ({
      name: name!,
      numberOfKeys: Number(keys),
      lua: expand(readFileSync(`${LUA_DIR}/${file}`, 'utf8')),
    }));
}

type Arg = string | number | Buffer;

/** The scripts as ioredis registers them: raw calls, keys first. Only src/redis/scripts.ts calls them. */
export type RawScripts = Record<string, (...args: Arg[]) => Promise<unknown>>;

/** A connection with Tally's scripts registered. Call them through `createScripts` (src/redis/scripts.ts). */
export type ScriptedRedis = (Redis | Cluster) & { readonly __tallyScripts: true };

const sources = loadScripts();

export function withScripts<T extends Redis | Cluster>(redis: T): T & ScriptedRedis {
  for (const script of sources) {
    redis.defineCommand(script.name, { lua: script.lua, numberOfKeys: script.numberOfKeys });
  }
  return redis as T & ScriptedRedis;
}
