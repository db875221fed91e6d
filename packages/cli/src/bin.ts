#!/usr/bin/env node
import { main } from './main.js';

const controller = new AbortController();
let interrupted = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    // The first one asks the command to end cleanly (--watch returns 0); a second one does not wait.
    if (interrupted) process.exit(130);
    interrupted = true;
    controller.abort();
  });
}

const code = await main(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  stdin: process.stdin,
  env: process.env,
  cwd: process.cwd(),
  signal: controller.signal,
});
process.exitCode = code;
// A command that is done is done: a keep-alive socket or a paused stdin must not hold the process.
process.stdout.write('', () => process.exit(code));
