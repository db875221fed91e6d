// node bench/raw-relay.mjs LISTEN UPSTREAM (after npm run build): the least a TCP proxy written for Node can do.
// It accepts on 127.0.0.1:LISTEN, connects each client to 127.0.0.1:UPSTREAM and relays bytes both ways through
// the L4 node's own raw tcp_wrap sockets (apps/l4-node/src/raw-tcp.ts), and nothing else: no backend choice,
// conntrack, limits, timeouts, metrics or logs. Every proxy built on Node's libuv bindings pays at least this
// per connection and per byte, so its figure next to HAProxy's and nginx's bounds what the project's nodes can
// reach per core by changes to their own code (bench/README, "The floor of a proxy on Node").
// Fits anchors.sh's EXTRA_L4 and EXTRA_L7: EXTRA_L4='raw-relay=node bench/raw-relay.mjs {LISTEN} {UPSTREAM}'.
// Under EXTRA_L7 (keep-alive HTTP) it relays each client connection to one backend connection of its own:
// a read and a write per request and per response, less than any HTTP proxy does.
import { connectRaw, RawServer } from '../apps/l4-node/dist/raw-tcp.js';

const [listen, upstream] = [Number(process.argv[2]), Number(process.argv[3])];
if (!(listen > 0 && upstream > 0)) {
  console.error('usage: node bench/raw-relay.mjs LISTEN UPSTREAM');
  process.exit(2);
}

/** A client and its upstream; a failure on either closes both. One plain object per connection, no WeakMap. */
class Pair {
  constructor(client) {
    this.client = client;
    this.up = undefined;
  }

  rawConnected(up, status) {
    if (status !== 0) {
      up.close();
      this.client.close();
      return;
    }
    this.client.relayTo(up);
    up.relayTo(this.client);
  }

  rawEnded() {}

  rawFailed() {
    this.client.close();
    this.up?.close();
  }

  rawClosed() {}
}

const server = new RawServer(
  (client) => {
    const pair = new Pair(client);
    client.events = pair;
    pair.up = connectRaw('127.0.0.1', upstream, pair);
  },
  (err) => console.error(err.message),
);
server.listen('127.0.0.1', listen, 4096);
const stop = () => {
  server.close();
  process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
