// Cursors of newest-first lists: the (time, id) position of a row, signed for one list
// (`list` names the list and its owner, so a cursor of another list is refused).
import { badInput } from '../errors.js';
import type { CursorCodec } from './cursor.js';

export interface Position {
  at: Date;
  id: number;
}

export const encodePosition = (codec: CursorCodec, list: string, position: Position) =>
  codec.encode(list, [position.at.getTime(), position.id]);

/** The position in `cursor`; null without one; BAD_USER_INPUT for anything this list did not issue. */
export function decodePosition(codec: CursorCodec, list: string, cursor: string | null | undefined): Position | null {
  if (cursor == null) return null;
  const payload = codec.decode(list, cursor);
  if (Array.isArray(payload) && payload.length === 2 && payload.every(Number.isSafeInteger)) {
    return { at: new Date(payload[0]), id: payload[1] };
  }
  throw badInput('invalid cursor', { argumentName: 'after' });
}
