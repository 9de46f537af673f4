// The entity lifecycle message, version 1: how the service that owns entities tells Tally,
// through the event log, that one exists or was deleted. The same JSON on both logs (a Kafka
// message's value; a Redis stream entry's `message` field). Documented in docs/adopting.md.
import { GraphQLError } from 'graphql';
import { type EntityChange, type Registration, toDeletion, toRegistration } from '../domain/entityEntries.js';

export const LIFECYCLE_VERSION = 1;

export type LifecycleChange = { op: 'register'; registration: Registration } | { op: 'delete'; deletion: EntityChange };

/** A message Tally applies, or why it cannot (then it is skipped, logged and counted). */
export type ParsedLifecycle = { ok: true; change: LifecycleChange } | { ok: false; why: string };

const text = (value: unknown): string | undefined => {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isSafeInteger(value)) return String(value);
  return undefined;
};

export function parseLifecycleMessage(raw: string): ParsedLifecycle {
  let message: Record<string, unknown>;
  try {
    const parsed: unknown = JSON.parse(raw);
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return { ok: false, why: 'not a JSON object' };
    message = parsed as Record<string, unknown>;
  } catch {
    return { ok: false, why: 'not JSON' };
  }
  if (message.v !== LIFECYCLE_VERSION) return { ok: false, why: `"v" must be ${LIFECYCLE_VERSION} (got ${JSON.stringify(message.v)})` };
  const entry = { type: text(message.type) ?? '', id: text(message.id) ?? '', version: text(message.version) ?? '' };
  const ownerId = message.ownerId === undefined || message.ownerId === null ? null : (text(message.ownerId) ?? '');
  try {
    if (message.op === 'register') return { ok: true, change: { op: 'register', registration: toRegistration({ ...entry, ownerId }, 0) } };
    if (message.op === 'delete') return { ok: true, change: { op: 'delete', deletion: toDeletion(entry, 0) } };
  } catch (error) {
    if (error instanceof GraphQLError) return { ok: false, why: error.message.replace(/^entities\[0\]\./, '') };
    throw error;
  }
  return { ok: false, why: `"op" must be "register" or "delete" (got ${JSON.stringify(message.op)})` };
}
