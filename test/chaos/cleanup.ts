// Everything the suite starts (processes, databases, temp dirs) registers how to undo it
// here, so a failure or Ctrl-C leaves nothing running or behind.
import type { ChildProcess } from 'node:child_process';

type Undo = () => Promise<void> | void;

const undos: { what: string; undo: Undo }[] = [];
const children = new Set<ChildProcess>();

/** Registers an undo step; returns a function that runs it once (and unregisters it). */
export function onCleanup(what: string, undo: Undo): () => Promise<void> {
  const entry = { what, undo };
  undos.push(entry);
  let done = false;
  return async () => {
    if (done) return;
    done = true;
    const i = undos.indexOf(entry);
    if (i >= 0) undos.splice(i, 1);
    await undo();
  };
}

/** Children get SIGKILL even when the harness dies without running its async cleanup. */
export function trackChild(child: ChildProcess): void {
  children.add(child);
  child.once('exit', () => children.delete(child));
}

/** Runs every registered undo, newest first; one failing does not stop the others. */
export async function cleanupAll(): Promise<void> {
  while (undos.length > 0) {
    const { what, undo } = undos.pop()!;
    try {
      await undo();
    } catch (error) {
      console.error(`chaos: cleanup of ${what} failed: ${(error as Error).message}`);
    }
  }
}

process.on('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});

let handlersInstalled = false;
/** Ctrl-C / SIGTERM: clean up, then exit (only for the CLI; a test runner has its own). */
export function installSignalHandlers(): void {
  if (handlersInstalled) return;
  handlersInstalled = true;
  let stopping = false;
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      if (stopping) process.exit(130);
      stopping = true;
      console.error(`\nchaos: ${signal}, cleaning up…`);
      void cleanupAll().finally(() => process.exit(130));
    });
  }
}
