// The closed set of failures a Lua script reports as a bare negative reply (each script's
// header lists the ones it can give). Replies that are outcomes, not failures, come back as
// arrays and each typed call in src/redis/scripts.ts names them.

export const ScriptErrorCode = {
  /** setRelation: the idempotency key was used before for a different request; nothing changed. */
  IdempotencyConflict: -1,
  /** Any script: its arguments failed validation before the first write; nothing changed. */
  InvalidArguments: -2,
  /** setRelation: Redis does not hold the entity's facts (lost, not restored yet); nothing decided. */
  NotRestored: -3,
  /** setRelation: the call reached Redis after its deadline (its client had given up); nothing changed. */
  TooLate: -4,
} as const;
export type ScriptErrorCode = (typeof ScriptErrorCode)[keyof typeof ScriptErrorCode];

const NAMES = new Map<number, string>(Object.entries(ScriptErrorCode).map(([name, code]) => [code, name]));

export class ScriptError extends Error {
  override name = 'ScriptError';

  constructor(
    readonly script: string,
    readonly code: ScriptErrorCode,
  ) {
    super(`${script}: ${NAMES.get(code)} (${code})`);
  }
}

export const isScriptError = (error: unknown, code: ScriptErrorCode): error is ScriptError =>
  error instanceof ScriptError && error.code === code;

/** The reply when it is not a failure; throws ScriptError for a code of the closed set (and a plain Error otherwise). */
export function unlessFailed<T>(script: string, reply: T | number): T {
  if (typeof reply !== 'number' || reply >= 0) return reply as T;
  if (NAMES.has(reply)) throw new ScriptError(script, reply as ScriptErrorCode);
  throw new Error(`${script}: unknown reply code ${reply}`);
}
