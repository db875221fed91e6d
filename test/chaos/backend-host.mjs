#!/usr/bin/env node
// One backend "server" of the chaos runner, in a process of its own so the runner can kill -9 it: an HTTP
// backend and a TCP backend on fixed ports, both named CHAOS_NAME. The runner (its parent, over IPC)
// switches the fault it shows: normal, slow, flap (ports open/closed every second), blackhole (SYNs
// dropped), healthFail (GET/HEAD /health answers 503 while every other request is served).
//
//   HTTP  GET /r/<seq>   → 200 {"name", "url"}             (url echoed, so the client checks the answer)
//   TCP   "<seq>\n"      → "<name> <seq>\n", then close
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer as createHttpServer } from 'node:http';
import { createServer as createTcpServer } from 'node:net';

const name = process.env.CHAOS_NAME ?? 'backend';
const httpPort = Number(process.env.CHAOS_HTTP_PORT);
const tcpPort = Number(process.env.CHAOS_TCP_PORT);
const slowMs = Number(process.env.CHAOS_SLOW_MS ?? 1500);
const flapMs = Number(process.env.CHAOS_FLAP_MS ?? 1000);
const HOST = '127.0.0.1';

let mode = 'normal';
/** @type {{ http: import('node:http').Server, tcp: import('node:net').Server } | null} */
let servers = null;
let flapTimer = null;
/** @type {{ child: import('node:child_process').ChildProcess } | null} */
let hole = null;

const delay = () => (mode === 'slow' ? slowMs : 0);

function onHttp(req, res) {
  req.resume();
  if (req.url === '/health' && mode === 'healthFail') {
    res.writeHead(503, { 'content-type': 'text/plain' }).end('unhealthy on purpose');
    return;
  }
  setTimeout(() => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ name, url: req.url }));
  }, delay());
}

function onTcp(socket) {
  socket.on('error', () => {});
  let line = '';
  socket.on('data', (d) => {
    line += d.toString();
    const end = line.indexOf('\n');
    if (end < 0) return;
    socket.pause();
    setTimeout(() => socket.end(`${name} ${line.slice(0, end)}\n`), delay());
  });
}

function listen(server, port) {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, HOST, () => {
      server.removeListener('error', reject);
      resolve();
    });
  });
}

async function up() {
  if (servers) return;
  const http = createHttpServer(onHttp);
  http.keepAliveTimeout = 5000;
  const tcp = createTcpServer(onTcp);
  servers = { http, tcp };
  await listen(http, httpPort);
  await listen(tcp, tcpPort);
}

/**
 * Stops accepting; what is in flight finishes (idle keep-alive connections are closed by close()). The
 * kernel resets connections still in the accept queue, which the runner's rules allow: the moment is
 * reported to it.
 */
function down() {
  if (!servers) return;
  const from = Date.now();
  servers.http.close();
  servers.tcp.close();
  servers = null;
  process.send?.({ event: 'down', from, to: Date.now() });
}

/**
 * Both ports held by a socket that listens with backlog 0 and never accepts, its one-entry queue filled
 * at once by the script itself: Linux then drops further SYNs, so a connect hangs as to a host that lost
 * power. perl, because node cannot listen without accepting; it exits by itself when this process dies.
 * (Filling the queue from here instead would leave a window in which a real client's connect completes
 * into the queue and then hangs forever: that is a different fault.)
 */
async function blackHole() {
  const script =
    'use Socket; use Fcntl; my $pp = getppid(); my @keep;' +
    ' for my $p (@ARGV) { my $addr = pack_sockaddr_in($p, inet_aton("127.0.0.1"));' +
    ' socket(my $s, PF_INET, SOCK_STREAM, 0) or die "socket: $!"; setsockopt($s, SOL_SOCKET, SO_REUSEADDR, 1) or die;' +
    ' bind($s, $addr) or die "bind $p: $!"; listen($s, 0) or die "listen: $!"; push @keep, $s;' +
    ' for (1 .. 3) { socket(my $c, PF_INET, SOCK_STREAM, 0) or die; fcntl($c, F_SETFL, O_NONBLOCK);' +
    ' connect($c, $addr); push @keep, $c; } }' +
    ' $| = 1; print "ready\\n"; while (getppid() == $pp) { sleep 1; }';
  const child = spawn('perl', ['-e', script, String(httpPort), String(tcpPort)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  hole = { child };
  const failed = once(child, 'exit').then(([code]) => {
    throw new Error(`the black-hole socket holder exited (${code}) before it was ready`);
  });
  await Promise.race([once(child.stdout, 'data'), failed]);
  failed.catch(() => {}); // later exits (closeHole) are expected
}

async function closeHole() {
  if (!hole) return;
  const { child } = hole;
  hole = null;
  if (child.exitCode === null && child.signalCode === null) {
    const exited = once(child, 'exit');
    child.kill('SIGKILL');
    await exited;
  }
}
async function setMode(next) {
  if (flapTimer) clearInterval(flapTimer);
  flapTimer = null;
  await closeHole();
  mode = next;
  if (next === 'blackhole') {
    down();
    await blackHole();
    return;
  }
  await up();
  if (next === 'flap') {
    let open = true;
    flapTimer = setInterval(() => {
      open = !open;
      if (open) up().catch((err) => process.stderr.write(`${name}: re-listen failed: ${err}\n`));
      else down();
    }, flapMs);
  }
}

process.on('message', (m) => {
  setMode(m.mode).then(
    () => process.send?.({ id: m.id, ok: true }),
    (err) => process.send?.({ id: m.id, ok: false, error: String(err) }),
  );
});
process.on('disconnect', () => process.exit(0)); // the runner went away

await up();
process.send?.({ ready: true });
