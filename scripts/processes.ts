// Child processes of the scripts and test support (Virtuoso, nginx, server processes): started with
// their output in a file, waited for until they answer, stopped with a grace period.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, openSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';

const POLL_MS = 50;

export interface Spawned {
  child: ChildProcess;
  /** Leads its own process group (`detached`): a kill reaches its own children too (nginx's workers). */
  group: boolean;
  /** Resolves when the process has ended, also when it could not be started (no such command). */
  exited: Promise<void>;
}

export interface SpawnOptions {
  /** Where its stdout and stderr go, appended. */
  logFile: string;
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /**
   * Its own process group, not tied to ours: it runs on after this process ends (the CLIs, which
   * also `unref()` it), and a kill reaches the children it started.
   */
  detached?: boolean;
}

/** Starts `command`. Its output goes to a file, not a pipe: a detached process must not hold on to ours. */
export function spawnLogged(command: string, args: string[], options: SpawnOptions): Spawned {
  const output = openSync(options.logFile, 'a');
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: options.env,
    stdio: ['ignore', output, output],
    detached: options.detached ?? false,
  });
  closeSync(output);
  // A failed spawn ends here too, as 'error' instead of 'exit'.
  const exited = once(child, 'exit').then(
    () => undefined,
    () => undefined,
  );
  return { child, group: options.detached ?? false, exited };
}

/** The process ended before it answered (`untilAnswers`): a crash at start, told from a timeout. */
export class ExitedBeforeAnswering extends Error {}

/**
 * Polls `answers` until it holds. Fails if the process ends first (ExitedBeforeAnswering) or
 * `timeoutMs` passes, with `what` and the last lines of its log in the message.
 */
export async function untilAnswers(
  spawned: Spawned,
  answers: () => Promise<boolean>,
  timeoutMs: number,
  what: string,
  logFile: string,
): Promise<void> {
  let gone = false;
  void spawned.exited.then(() => (gone = true));
  const deadline = Date.now() + timeoutMs;
  while (!gone) {
    if (Date.now() > deadline)
      throw new Error(`${what} did not answer within ${timeoutMs / 1000} s:\n${await logTail(logFile)}`);
    if (await answers()) return;
    await sleep(POLL_MS);
  }
  const { exitCode, signalCode } = spawned.child;
  throw new ExitedBeforeAnswering(
    `${what} exited (${signalCode ?? `code ${exitCode}`}) before it answered:\n${await logTail(logFile)}`,
  );
}

/** Sends `signal` to a child of ours and waits for its exit; SIGKILL once `timeoutMs` passed. */
export async function stopChild(spawned: Spawned, signal: NodeJS.Signals, timeoutMs: number): Promise<void> {
  const { child, exited } = spawned;
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill(signal);
  const killLater = setTimeout(() => (spawned.group ? killGroup(child.pid!) : child.kill('SIGKILL')), timeoutMs);
  await exited;
  clearTimeout(killLater);
}

/**
 * Sends `signal` to process `pid`, which need not be our child (a detached process a CLI started
 * earlier), and waits until it is gone; SIGKILL to its group once `timeoutMs` passed. False if it
 * was not running.
 */
export async function stopPid(pid: number, signal: NodeJS.Signals, timeoutMs: number): Promise<boolean> {
  if (!isAlive(pid)) return false;
  process.kill(pid, signal);
  const killLater = setTimeout(() => killGroup(pid), timeoutMs);
  while (isAlive(pid)) await sleep(POLL_MS);
  clearTimeout(killLater);
  return true;
}

/** SIGKILL to the process group `pid` leads, or to the process alone if it leads none; nothing if it is gone. Synchronous (exit handlers). */
export function killGroup(pid: number): void {
  for (const target of [-pid, pid]) {
    try {
      process.kill(target, 'SIGKILL');
      return;
    } catch {
      // No such group (or process): try the process, else it is gone already.
    }
  }
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The last lines of a log file ('' if there is none). */
export async function logTail(file: string, lines = 15): Promise<string> {
  const log = await readFile(file, 'utf8').catch(() => '');
  return log.split('\n').slice(-lines).join('\n');
}
