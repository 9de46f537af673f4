// A child process of the bench (a server under test, a load generator) driven over IPC: it
// sends { type: 'ready', … } once started, then answers { id, cmd, args } with { id, result }
// or { id, error }. It exits by itself when the IPC channel closes, so it never outlives the bench.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { projectPath } from '../../src/paths.js';
import { withOpenFiles } from './procStats.js';

/**
 * The Node arguments that run bench/lib/<file>: the compiled .js when the bench runs compiled
 * (npm run bench), else the .ts through tsx.
 */
export function entryOf(file: string): string[] {
  const compiled = import.meta.url.endsWith('.js');
  const path = fileURLToPath(new URL(`./${file}.${compiled ? 'js' : 'ts'}`, import.meta.url));
  return compiled ? [path] : ['--import', 'tsx', path];
}

/** Starts `node args` (with at least `openFiles` open files) and waits for its ready message. */
export async function startChild<Ready>(
  name: string,
  node: string,
  args: string[],
  options: { env?: NodeJS.ProcessEnv; openFiles?: number; readyWithinMs: number },
) {
  const [command, commandArgs] = withOpenFiles(node, args, options.openFiles ?? 0);
  const child = spawn(command, commandArgs, { cwd: projectPath(), env: options.env, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const pending = new Map<number, { resolve: (v: any) => void; reject: (e: Error) => void }>();
  let nextId = 1;
  const ready = new Promise<Ready>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${name} did not start within ${options.readyWithinMs / 1000} s`)),
      options.readyWithinMs,
    );
    child.on('message', (message: { type?: string; id?: number; result?: unknown; error?: string }) => {
      if (message.type === 'ready') {
        clearTimeout(timer);
        return resolve(message as Ready);
      }
      const waiter = pending.get(message.id!);
      pending.delete(message.id!);
      if (message.error) waiter?.reject(new Error(`${name}: ${message.error}`));
      else waiter?.resolve(message.result);
    });
    void exited.then((code) => {
      clearTimeout(timer);
      const error = new Error(`${name} exited with code ${code}`);
      reject(error);
      for (const waiter of pending.values()) waiter.reject(error); // calls in flight would hang
      pending.clear();
    });
  });
  const readyMessage = await ready.catch((error: unknown) => {
    child.kill('SIGKILL'); // one that failed to start must not linger
    throw error;
  });
  const gone = () => child.exitCode !== null || child.signalCode !== null;
  return {
    ready: readyMessage,
    pid: child.pid!,
    call: <T>(cmd: string, args?: unknown) =>
      new Promise<T>((resolve, reject) => {
        if (gone()) return reject(new Error(`${name} is gone`));
        const id = nextId++;
        pending.set(id, { resolve, reject });
        child.send({ id, cmd, args });
      }),
    /** Closes the IPC channel, which ends the child; kills it if it is not gone within 15 s. Never throws. */
    async stop() {
      if (gone()) return;
      child.disconnect();
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** The child's side: answers the parent's commands with `commands`, then says it is ready. */
export function serveParent(commands: Record<string, (args: any) => unknown>, ready: Record<string, unknown> = {}) {
  process.on('message', async (message: { id: number; cmd: string; args?: unknown }) => {
    try {
      const command = commands[message.cmd];
      if (!command) throw new Error(`unknown command ${message.cmd}`);
      process.send?.({ id: message.id, result: await command(message.args) });
    } catch (error) {
      process.send?.({ id: message.id, error: String((error as Error).stack ?? error) });
    }
  });
  process.send!({ type: 'ready', ...ready });
}
