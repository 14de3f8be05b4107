// What must happen however the test process ends: processes it started are killed, their files removed.

const cleanups = new Set<() => void>();
let installed = false;

function runAll(): void {
  for (const cleanup of cleanups) cleanup();
}

/**
 * Runs `cleanup` (synchronous: all an exit handler may do) when the process ends, also without the
 * after-all hooks (mocha --exit, a crash) and by a signal (Ctrl-C, a timeout), which ends the
 * process without 'exit': the signal is sent again once the cleanups ran, to end it as it would have.
 */
export function atProcessEnd(cleanup: () => void): void {
  if (!installed) {
    installed = true;
    process.once('exit', runAll);
    for (const signal of ['SIGINT', 'SIGTERM'] as const) {
      process.once(signal, () => {
        runAll();
        process.kill(process.pid, signal);
      });
    }
  }
  cleanups.add(cleanup);
}
