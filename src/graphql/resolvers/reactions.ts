// A reaction named by a client: its `content` must be one the registry holds.
import { KINDS } from '../../domain/kinds.js';
import type { Relation } from '../../domain/relations.js';
import { badInput } from '../../errors.js';

export function reactionNamed(content: string, argumentName = 'content'): Relation {
  const kind = KINDS.reaction(content);
  if (kind) return kind;
  const valid = KINDS.reactions.map((reaction) => reaction.reaction!.content).join(', ');
  throw badInput(`content must be one of ${valid}`, { argumentName });
}
