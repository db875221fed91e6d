// `node --import ./scripts/exit-with-parent.mjs scripts/run-with-parent.mjs COMMAND ARGS…`: runs a program
// that is not Node (the local cloud's own redis-server) so that it, too, stops when the supervisor is gone.
// SIGTERM/SIGINT are passed on; the program's exit is ours; and if we are made to exit first, it is killed.
import { spawn } from 'node:child_process';

const [command, ...args] = process.argv.slice(2);
if (!command) {
  process.stderr.write('usage: run-with-parent.mjs COMMAND [ARG...]\n');
  process.exit(2);
}
const child = spawn(command, args, { stdio: 'inherit' });
child.on('error', (err) => {
  process.stderr.write(`${JSON.stringify({ level: 50, time: Date.now(), command, msg: err.message })}\n`);
  process.exit(1);
});
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
for (const signal of /** @type {const} */ (['SIGTERM', 'SIGINT', 'SIGHUP'])) {
  process.on(signal, () => child.kill(signal));
}
process.on('exit', () => {
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});
