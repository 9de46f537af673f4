// Loads lua/<name>-<keys>.lua once, inlines `--- @include "includes/x"` lines, and registers
// each script on a connection with defineCommand (EVALSHA, falling back to EVAL).
import { readdirSync, readFileSync } from 'node:fs';
import type { Cluster, Redis } from 'ioredis';
import { projectPath } from '../paths.js';

const LUA_DIR = projectPath('lua');
const INCLUDE = /^--- @include "([\w/]+)"\s*$/gm;

function expand(source: string, seen = new Set<string>()): string {
  return source.replace(INCLUDE, (_, name: string) => {
    if (seen.has(name)) return '';
    seen.add(name);
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

type Arg = string | number;

/** The scripts as typed commands. Keys come first, in the order of each script's header. */
export interface ScriptCommands {
  setRelation(...args: Arg[]): Promise<[number, number, string] | number>;
  hasFacts(...args: Arg[]): Promise<number[]>;
  writeFact(...args: Arg[]): Promise<number>;
  applyCounterBatch(...args: Arg[]): Promise<[number, ...(string | null)[]] | number>;
  foldDirtyCounters(...args: Arg[]): Promise<[number, number, number] | number>;
  countFromFacts(...args: Arg[]): Promise<[number, number, number]>;
  rebuildCounters(...args: Arg[]): Promise<[number, number, number, number, number, string]>;
  acquireRebuild(...args: Arg[]): Promise<[number, number?] | number>;
  inspectCounters(...args: Arg[]): Promise<number[]>;
  switchReplayedCounters(...args: Arg[]): Promise<[number, number] | number>;
  persistedAsOf(persistedKey: string, outboxKey: string): Promise<number>;
  setUserCounters(...args: Arg[]): Promise<number>;
  raisePosition(key: string, position: string): Promise<number>;
  takeTokens(bucket: string, capacity: number, windowMs: number, wanted: number): Promise<[number, number] | number>;
  storePersistedQuery(...args: Arg[]): Promise<number>;
  renewLease(key: string, holder: string, ms: number): Promise<number>;
  releaseLease(key: string, holder: string): Promise<number>;
}

export type ScriptedRedis = (Redis | Cluster) & ScriptCommands;

const sources = loadScripts();

export function withScripts<T extends Redis | Cluster>(redis: T): T & ScriptCommands {
  for (const script of sources) {
    redis.defineCommand(script.name, { lua: script.lua, numberOfKeys: script.numberOfKeys });
  }
  return redis as T & ScriptCommands;
}
