// API writes under faults, and the ledger of what the API acknowledged. A writer creates server groups
// (with their servers, Idempotency-Key), adds batches of servers to them (Idempotency-Key) and changes
// server weights; a write that gets no answer is retried as a client would, with the same key. At the end
// every acknowledged write must be there, complete, and every group present must be whole: its create's
// servers all there, and each added batch all there or all absent.
import { WRITE_PORTS } from './util.mjs';

const CREATE_PORTS = [1, 2, 3, 4].map((i) => WRITE_PORTS.from + i);
const batchPorts = (b) => [WRITE_PORTS.from + 1000 + b * 2, WRITE_PORTS.from + 1001 + b * 2];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export class Ledger {
  constructor(cloud, lbId, runId) {
    this.cloud = cloud;
    this.lbId = lbId;
    this.runId = runId;
    this.n = 0;
    this.batches = 0;
    /** groupId → {name, ports: Set<number>} as acknowledged. */
    this.groups = new Map();
    /** serverId → {groupId, acked: number|null, tried: Set<number>} (weights sent since the last ack). */
    this.weights = new Map();
    this.stats = { acked: 0, retried: 0, replayed: 0, unanswered: 0, gaveUp: 0 };
    this.inFlight = 0;
    /** The 5xx and 429 answers a write got before its retry, {at, status, code}, for a scenario to judge. */
    this.refusals = [];
    this.writers = new Set();
    this.unexpected = [];
  }

  /** Sends a write until the API answers it with a status (retrying network errors, 5xx and 429). */
  async send(method, path, body, headers, deadline) {
    let attempt = 0;
    for (;;) {
      attempt++;
      this.inFlight++;
      try {
        const r = await this.cloud.api(method, path, body, { headers, timeoutMs: 3000 });
        if (r.status < 500 && r.status !== 429) {
          if (attempt > 1) this.stats.retried++;
          return r;
        }
        if (this.refusals.length < 10_000) this.refusals.push({ at: Date.now(), status: r.status, code: r.body?.code });
      } catch {
        this.stats.unanswered++;
      } finally {
        this.inFlight--;
      }
      if (Date.now() > deadline) return null;
      await sleep(100);
    }
  }

  /** One write of the rotation; returns when it was acknowledged (or given up at `deadline`). */
  async writeOne(deadline) {
    const step = this.n++;
    const base = `/v1/load-balancers/${this.lbId}/server-groups`;
    const groupIds = [...this.groups.keys()];
    if (step % 3 === 0 || groupIds.length === 0) {
      const name = `w-${this.runId}-${step}`;
      const body = { name, servers: CREATE_PORTS.map((port, i) => ({ address: '127.0.0.1', port, weight: i + 1 })) };
      const key = `create-${this.runId}-${step}`;
      const r = await this.send('POST', base, body, { 'idempotency-key': key }, deadline);
      if (!r) return this.stats.gaveUp++;
      if (r.status !== 201) throw new Error(`create ${name}: ${r.status} ${JSON.stringify(r.body)}`);
      this.ack(r);
      this.groups.set(r.body.id, { name, ports: new Set(CREATE_PORTS), key, body });
      for (const s of r.body.servers) this.weights.set(s.id, { groupId: r.body.id, acked: s.weight, tried: new Set() });
      return;
    }
    const groupId = groupIds[step % groupIds.length];
    if (step % 3 === 1) {
      const b = this.batches++;
      const ports = batchPorts(b);
      const r = await this.send(
        'POST',
        `${base}/${groupId}/servers`,
        { servers: ports.map((port) => ({ address: '127.0.0.1', port })) },
        { 'idempotency-key': `batch-${this.runId}-${b}` },
        deadline,
      );
      if (!r) return this.stats.gaveUp++;
      if (r.status !== 201) throw new Error(`add batch ${b}: ${r.status} ${JSON.stringify(r.body)}`);
      this.ack(r);
      for (const port of ports) this.groups.get(groupId).ports.add(port);
      for (const s of r.body.items) this.weights.set(s.id, { groupId, acked: s.weight, tried: new Set() });
      return;
    }
    const serverIds = [...this.weights.keys()].filter((id) => this.weights.get(id).groupId === groupId);
    const serverId = serverIds[step % serverIds.length];
    const weight = 1 + (step % 100);
    const w = this.weights.get(serverId);
    w.tried.add(weight);
    const r = await this.send('PATCH', `${base}/${groupId}/servers/${serverId}`, { weight }, {}, deadline);
    if (!r) return this.stats.gaveUp++;
    if (r.status !== 200) throw new Error(`patch ${serverId}: ${r.status} ${JSON.stringify(r.body)}`);
    this.ack(r);
    w.acked = weight;
    w.tried = new Set();
  }

  ack(r) {
    this.stats.acked++;
    if (r.headers.get('idempotent-replayed') === 'true') this.stats.replayed++;
  }

  /** Writes at `perSecond` until stopped; one write at a time, as one client would. */
  start(perSecond, maxMs = 60_000) {
    let stopped = false;
    const started = Date.now();
    const loop = (async () => {
      while (!stopped && Date.now() - started < maxMs) {
        const t0 = Date.now();
        try {
          await this.writeOne(started + maxMs + 20_000);
        } catch (err) {
          // An answer no retried write should get (a 4xx): reported by verify().
          if (this.unexpected.length < 10) this.unexpected.push(String(err));
        }
        await sleep(Math.max(0, 1000 / perSecond - (Date.now() - t0)));
      }
    })();
    const writer = {
      stop: async () => {
        stopped = true;
        this.writers.delete(writer);
        await loop;
      },
    };
    this.writers.add(writer);
    return writer;
  }

  async stopWriters() {
    await Promise.all([...this.writers].map((w) => w.stop()));
  }

  /**
   * Sends the last `count` acknowledged creates again with their keys, as a client whose answer was lost
   * would: each must replay the first result (same id, `idempotent-replayed`), never create a second group.
   */
  async replayLast(count) {
    const problems = [];
    const base = `/v1/load-balancers/${this.lbId}/server-groups`;
    const last = [...this.groups].slice(-count);
    for (const [id, g] of last) {
      const r = await this.cloud.api('POST', base, g.body, { headers: { 'idempotency-key': g.key } });
      if (r.status !== 201 || r.body?.id !== id || r.headers.get('idempotent-replayed') !== 'true') {
        problems.push(`create ${g.name} sent again with its key: ${r.status} ${r.body?.id} (first: ${id})`);
      }
    }
    return { replayed: last.length, problems };
  }

  /**
   * Checks the database through the API. Returns problems found (empty: all good) and figures.
   * Lost: an acknowledged group, server or weight missing. Half-written: a group lacking part of a write.
   */
  async verify() {
    const problems = [...this.unexpected];
    const present = [];
    for (let cursor = null; ; ) {
      const page = await this.cloud.ok(
        'GET',
        `/v1/load-balancers/${this.lbId}/server-groups?limit=500${cursor ? `&cursor=${cursor}` : ''}`,
      );
      present.push(...page.items);
      cursor = page.nextCursor;
      if (!cursor) break;
    }
    const byId = new Map(present.map((g) => [g.id, g]));
    const names = new Map();
    for (const g of present) names.set(g.name, (names.get(g.name) ?? 0) + 1);
    for (const [name, count] of names) if (count > 1) problems.push(`group ${name} exists ${count} times`);
    for (const [id, want] of this.groups) {
      const g = byId.get(id);
      if (!g) {
        problems.push(`acknowledged group ${want.name} (${id}) is missing`);
        continue;
      }
      const ports = new Set(g.servers.map((s) => s.port));
      for (const p of want.ports)
        if (!ports.has(p)) problems.push(`group ${want.name} lacks acknowledged server :${p}`);
    }
    for (const [serverId, w] of this.weights) {
      const g = byId.get(w.groupId);
      const s = g?.servers.find((x) => x.id === serverId);
      if (!s) {
        if (g) problems.push(`acknowledged server ${serverId} is missing`);
        continue;
      }
      if (s.weight !== w.acked && !w.tried.has(s.weight)) {
        problems.push(`server ${serverId} has weight ${s.weight}, acknowledged ${w.acked}`);
      }
    }
    let unacknowledgedPresent = 0;
    for (const g of present) {
      if (!this.groups.has(g.id)) unacknowledgedPresent++;
      const ports = new Set(g.servers.map((s) => s.port));
      if (!CREATE_PORTS.every((p) => ports.has(p))) problems.push(`group ${g.name} is half-written (create)`);
      for (let b = 0; b < this.batches; b++) {
        const [a, c] = batchPorts(b);
        if (ports.has(a) !== ports.has(c)) problems.push(`group ${g.name} is half-written (batch ${b})`);
      }
    }
    return {
      problems,
      groupsPresent: present.length,
      groupsAcknowledged: this.groups.size,
      unacknowledgedPresent,
      ...this.stats,
    };
  }
}
