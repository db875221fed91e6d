import type { L7Backend, L7Listener } from '@slb/model';

// Passive-health and load state per server group and server, across listeners and reloads. Kept in a map per
// group keyed by server id, not one map keyed by a `group/server/address:port` string: a fleet's config has
// hundreds of thousands of backends, and a string built, hashed and kept per backend on every apply cost
// seconds of building and hundreds of megabytes.

export interface BackendState {
  active: number;
  consecutiveFailures: number;
  ejectedUntil: number;
  timesEjected: number;
}

interface Entry extends BackendState {
  /** Where the server was when this state began: one that moves starts afresh. */
  readonly address: string;
  readonly port: number;
  /** The last retain pass that found this server in use. */
  seen: number;
}

export class BackendStates {
  private readonly groups = new Map<string, Map<string, Entry>>();
  private pass = 0;

  /** The state of server `b` in group `groupId`: the same object across reloads while its address and port stay. */
  of(groupId: string, b: L7Backend): BackendState {
    let group = this.groups.get(groupId);
    if (group === undefined) {
      group = new Map();
      this.groups.set(groupId, group);
    }
    let entry = group.get(b.serverId);
    if (entry === undefined || entry.address !== b.address || entry.port !== b.port) {
      entry = {
        address: b.address,
        port: b.port,
        seen: this.pass,
        active: 0,
        consecutiveFailures: 0,
        ejectedUntil: 0,
        timesEjected: 0,
      };
      group.set(b.serverId, entry);
    }
    return entry;
  }

  /** Forgets the state of every server no listener of `listeners` has; true when it forgot any. */
  retain(listeners: Iterable<L7Listener>): boolean {
    const pass = ++this.pass;
    for (const l of listeners) {
      for (const g of l.serverGroups) {
        const group = this.groups.get(g.id);
        if (group === undefined) continue;
        for (const b of g.backends) {
          const entry = group.get(b.serverId);
          if (entry !== undefined && entry.address === b.address && entry.port === b.port) entry.seen = pass;
        }
      }
    }
    let forgot = false;
    for (const [id, group] of this.groups) {
      for (const [serverId, entry] of group) {
        if (entry.seen === pass) continue;
        group.delete(serverId);
        forgot = true;
      }
      if (group.size === 0) this.groups.delete(id);
    }
    return forgot;
  }

  /** States kept (the node's slb_l7_backend_states). */
  get size(): number {
    let n = 0;
    for (const group of this.groups.values()) n += group.size;
    return n;
  }
}
