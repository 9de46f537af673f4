// A bench child process over IPC: { id: 0, result } once started, then { id, cmd, args } → { id, result | error }.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { projectPath } from '../../src/paths.js';
import { withOpenFiles } from './procStats.js';

/** The Node arguments that run bench/lib/<file>: compiled .js under `npm run bench`, else .ts through tsx. */
export function entryOf(file: string): string[] {
  const compiled = import.meta.url.endsWith('.js');
  const path = fileURLToPath(new URL(`./${file}.${compiled ? 'js' : 'ts'}`, import.meta.url));
  return compiled ? [path] : ['--import', 'tsx', path];
}

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
  child.on('message', (message: { id: number; result?: unknown; error?: string }) => {
    const waiter = pending.get(message.id);
    pending.delete(message.id);
    if (message.error) waiter?.reject(new Error(`${name}: ${message.error}`));
    else waiter?.resolve(message.result);
  });
  void exited.then((code) => {
    for (const waiter of pending.values()) waiter.reject(new Error(`${name} exited with code ${code}`));
    pending.clear();
  });
  // The child's first message, id 0, says it is ready.
  const ready = new Promise<Ready>((resolve, reject) => pending.set(0, { resolve, reject }));
  const late = () => pending.get(0)?.reject(new Error(`${name} did not start within ${options.readyWithinMs / 1000} s`));
  const timer = setTimeout(late, options.readyWithinMs);
  const readyMessage = await ready
    .catch((error: unknown) => {
      child.kill('SIGKILL');
      throw error;
    })
    .finally(() => clearTimeout(timer));
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
    /** Closes the IPC channel, which ends the child; kills it after 15 s. Never throws. */
    async stop() {
      if (gone()) return;
      child.disconnect();
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** The child's side: answers the parent's commands, says it is ready, and exits (after `onExit`) when the channel closes. */
export function serveParent(
  commands: Record<string, (args: any) => unknown>,
  ready: Record<string, unknown> = {},
  onExit: () => Promise<unknown> = async () => {},
) {
  process.on('disconnect', () => void onExit().finally(() => process.exit(0)));
  process.on('message', async (message: { id: number; cmd: string; args?: unknown }) => {
    try {
      const command = commands[message.cmd];
      if (!command) throw new Error(`unknown command ${message.cmd}`);
      process.send?.({ id: message.id, result: await command(message.args) });
    } catch (error) {
      process.send?.({ id: message.id, error: String((error as Error).stack ?? error) });
    }
  });
  process.send!({ id: 0, result: ready });
}
