// Whether a command is on PATH: the benches install what is missing (wrk, nginx, haproxy, valgrind) or say so.
import { spawnSync } from 'node:child_process';

export function have(cmd) {
  return spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;
}
