// A PostgreSQL cluster of the --ha run's own, so the row `pg-restart` can kill it and start it again: the
// machine's PostgreSQL serves other runs and must never be restarted. initdb in a fresh temp dir, one
// postmaster on 127.0.0.1 (a port below the ephemeral range, so it binds again after the kill) with its unix
// socket in that dir, trust auth, fsync off (a killed postmaster loses nothing the kernel holds; the machine
// does not crash here). initdb and postgres refuse root: as root they run as the `postgres` OS user.
import { execFile, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { chownSync, createWriteStream, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { stablePort, until } from './util.mjs';

export const PG_BIN = process.env.SLB_CHAOS_PG_BIN ?? '/usr/lib/postgresql/15/bin';
const scripts = new URL('../../scripts/', import.meta.url).pathname;

/** Clusters not removed yet: a runner that exits on any path takes its postmaster and files with it. */
const live = new Set();
process.on('exit', () => {
  for (const c of live) c.removeNow();
});

/** `command` as the postgres OS user when we are root (setpriv execs it: no process in between). */
function asPostgres(command, args) {
  if (process.getuid?.() !== 0) return [command, args];
  return ['setpriv', ['--reuid=postgres', '--regid=postgres', '--clear-groups', command, ...args]];
}

const accepts = async (url) => {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } finally {
    await client.end().catch(() => undefined);
  }
};

/**
 * initdb and a running postmaster; throws (having removed what it made) when the binaries are missing or
 * the cluster does not start.
 * @param {{ logFile: string }} options  where initdb's and the postmaster's output go
 */
export async function startPgCluster({ logFile }) {
  for (const bin of ['initdb', 'postgres']) {
    if (!existsSync(join(PG_BIN, bin))) throw new Error(`no ${join(PG_BIN, bin)} (SLB_CHAOS_PG_BIN)`);
  }
  const dir = mkdtempSync(join(tmpdir(), 'slb-chaos-pg-'));
  const data = join(dir, 'data');
  const log = createWriteStream(logFile, { flags: 'a' });
  let postmaster = null;
  const postmasterPid = () => {
    try {
      return Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]) || null;
    } catch {
      return null;
    }
  };
  const cluster = {
    dir,
    port: 0,
    url: '',
    /** The postmaster is up (started and not seen to exit). */
    running: () => postmaster !== null && postmaster.exitCode === null && postmaster.signalCode === null,

    /** Starts the postmaster on the cluster's port and data dir; resolves once it answers a query. */
    async start() {
      const [command, args] = asPostgres(join(PG_BIN, 'postgres'), [
        '-D',
        data,
        '-p',
        String(cluster.port),
        '-c',
        'listen_addresses=127.0.0.1',
        '-c',
        `unix_socket_directories=${dir}`,
        '-c',
        'fsync=off',
        '-c',
        'full_page_writes=off',
      ]);
      // Through run-with-parent with exit-with-parent preloaded: if the runner is killed, the postmaster
      // is killed within two seconds too.
      const child = spawn(
        process.execPath,
        ['--import', `${scripts}exit-with-parent.mjs`, `${scripts}run-with-parent.mjs`, command, ...args],
        { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      log.write(`---- ${new Date().toISOString()} postmaster start (wrapper pid ${child.pid})\n`);
      child.stdout.pipe(log, { end: false });
      child.stderr.pipe(log, { end: false });
      child.once('exit', (code, signal) => log.write(`---- ${new Date().toISOString()} exit ${signal ?? code}\n`));
      postmaster = child;
      await until(
        `the private PostgreSQL answering on 127.0.0.1:${cluster.port}`,
        async () => {
          if (!cluster.running()) throw new Error(`the postmaster exited (${child.signalCode ?? child.exitCode})`);
          return (await accepts(cluster.url)) ? true : undefined;
        },
        20_000,
        50,
      );
    },

    /**
     * A crash stop: SIGQUIT to the postmaster, what `pg_ctl stop -m immediate` sends (every backend quits at
     * once, no checkpoint: the restart replays the WAL). Resolves once the postmaster is gone.
     */
    async kill() {
      const child = postmaster;
      const pid = postmasterPid();
      if (!child || !pid) throw new Error('the private PostgreSQL is not running');
      const exited = once(child, 'exit');
      process.kill(pid, 'SIGQUIT');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },

    /** A fast shutdown (sessions closed, a checkpoint), SIGKILL after 10 s; then the files go. */
    async remove() {
      live.delete(cluster);
      const child = postmaster;
      if (child && child.exitCode === null && child.signalCode === null) {
        const exited = once(child, 'exit');
        const pid = postmasterPid();
        if (pid) process.kill(pid, 'SIGINT');
        else child.kill('SIGINT');
        const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        await exited;
        clearTimeout(timer);
      }
      log.end();
      rmSync(dir, { recursive: true, force: true });
    },

    /** The exit handler's version: synchronous, no waiting. */
    removeNow() {
      const pid = postmasterPid();
      if (pid && cluster.running()) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {}
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
  live.add(cluster);
  try {
    if (process.getuid?.() === 0) {
      const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }));
      const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }));
      chownSync(dir, uid, gid);
    }
    const [command, args] = asPostgres(join(PG_BIN, 'initdb'), [
      '-D',
      data,
      '-U',
      'postgres',
      '--auth=trust',
      '--no-sync',
      '--no-instructions',
      '-E',
      'UTF8',
      '--locale=C',
    ]);
    const { stdout, stderr } = await promisify(execFile)(command, args, { cwd: dir, timeout: 60_000 });
    log.write(stdout + stderr);
    cluster.port = await stablePort();
    cluster.url = `postgres://postgres@127.0.0.1:${cluster.port}/postgres`;
    await cluster.start();
    return cluster;
  } catch (err) {
    await cluster.remove().catch(() => undefined);
    throw err;
  }
}
