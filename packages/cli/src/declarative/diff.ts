import type { components } from '@slb/client';
import { hostPort, type PlanOperation, transportOf } from '@slb/model';
import type { ListenerSpec, LoadBalancerSpec, RuleSpec, ServerGroupSpec } from './spec.js';

type Schemas = components['schemas'];
export type LiveLoadBalancer = Schemas['LoadBalancer'];
export type LiveServerGroup = Schemas['ServerGroup'];
export type LiveServer = Schemas['Server'];
export type LiveListener = Schemas['Listener'];
export type LiveRule = Schemas['Rule'];

/** The live load balancer and what its file may name, as the API returns them. */
export interface LiveState {
  lb: LiveLoadBalancer | null;
  serverGroups: LiveServerGroup[];
  listeners: LiveListener[];
  /** by listener id */
  rules: Record<string, LiveRule[]>;
  certificates: { id: string; name: string }[];
  acls: { id: string; name: string }[];
}

/** One line of a plan: `+ listener tcp:443`, with the field changes under it. */
export interface Change {
  action: '+' | '~' | '-';
  what: string;
  details: string[];
}

export interface Diff {
  changes: Change[];
  operations: PlanOperation[];
  /** What the file asks that apply cannot do in place (an LB's address), said, never silently dropped. */
  notes: string[];
}

/** A name the file uses that the API does not have (a certificate, an ACL). */
export class UnknownReferenceError extends Error {}

/** The listener fields compared one by one (identity and name references are handled apart). */
const LISTENER_FIELDS = [
  'backendPort',
  'scheduler',
  'persistenceTimeout',
  'stickySession',
  'healthCheck',
  'proxyProtocol',
  'xForwardedFor',
  'xForwardedForMode',
  'idleTimeout',
  'requestTimeout',
  'connectionDrainTimeout',
  'description',
  'maxConnections',
] as const;

const LB_REF = 'lb';
const listenerLabel = (l: { protocol: string; port: number }) => `listener ${l.protocol}:${l.port}`;
const ruleKey = (r: { domain?: string | null; path?: string | null }) => `${r.domain ?? ''} ${r.path ?? ''}`;
const ruleLabel = (r: { domain?: string | null; path?: string | null }) => `${r.domain ?? '*'}${r.path ?? '/'}`;

/**
 * The operations that make the live load balancer match its file, in an order the API accepts: groups and
 * servers before the listeners that use them, a listener replaced on its port before its successor,
 * deletions of what nothing uses any more last. Fields the file leaves out are not compared.
 */
export function diffLoadBalancer(spec: LoadBalancerSpec, live: LiveState): Diff {
  const changes: Change[] = [];
  const notes: string[] = [];
  const early: PlanOperation[] = [];
  const middle: PlanOperation[] = [];
  const late: PlanOperation[] = [];
  const lbId = live.lb?.id ?? `ref:${LB_REF}`;

  // The load balancer itself.
  if (!live.lb) {
    const body: Extract<PlanOperation, { op: 'createLoadBalancer' }>['body'] = { name: spec.name };
    for (const key of ['address', 'addressType', 'placement', 'deletionProtection', 'tags'] as const) {
      if (spec[key] !== undefined) Object.assign(body, { [key]: spec[key] });
    }
    early.push({ op: 'createLoadBalancer', ref: LB_REF, body });
    changes.push({ action: '+', what: `load balancer ${spec.name}`, details: describeNew(body, ['name']) });
  } else {
    const lb = live.lb;
    const body: Record<string, unknown> = {};
    const details: string[] = [];
    for (const key of ['placement', 'deletionProtection'] as const) {
      if (spec[key] !== undefined && !covers(spec[key], lb[key])) {
        body[key] = spec[key];
        details.push(...fieldChanges(key, lb[key], spec[key]));
      }
    }
    if (spec.tags !== undefined && !deepEqual(spec.tags, lb.tags)) {
      body.tags = spec.tags;
      details.push(`tags ${show(lb.tags)} → ${show(spec.tags)}`);
    }
    if (details.length > 0) {
      early.push({ op: 'updateLoadBalancer', loadBalancerId: lb.id, body });
      changes.push({ action: '~', what: `load balancer ${lb.name}`, details });
    }
    if (spec.address !== undefined && spec.address !== lb.address) {
      notes.push(
        `address ${spec.address} differs from the live ${lb.address}: an LB keeps its VIP (re-create it to move)`,
      );
    }
    if (spec.addressType !== undefined && spec.addressType !== lb.addressType) {
      notes.push(`addressType ${spec.addressType} differs from the live ${lb.addressType}: set at create only`);
    }
  }

  // Server groups and their servers.
  const specGroups = spec.serverGroups ?? [];
  const liveGroupByName = new Map(live.serverGroups.map((g) => [g.name, g]));
  const groupRef = new Map<string, string>(); // name → id or ref
  specGroups.forEach((g, i) => {
    const existing = liveGroupByName.get(g.name);
    if (existing) {
      groupRef.set(g.name, existing.id);
      diffServers(g, existing, lbId, drainOf(g.name, spec, live), middle, late, changes);
    } else {
      const ref = `sg${i}`;
      groupRef.set(g.name, `ref:${ref}`);
      const servers = g.servers ?? [];
      early.push({
        op: 'createServerGroup',
        loadBalancerId: lbId,
        ref,
        body: servers.length ? { name: g.name, servers } : { name: g.name },
      });
      changes.push({
        action: '+',
        what: `server-group ${g.name}`,
        details: servers.map((s) => `+ server ${hostPort(s.address, s.port)} weight ${s.weight ?? 100}`),
      });
    }
  });
  const groupOf = (name: string, where: string) => {
    const id = groupRef.get(name);
    if (id === undefined) throw new UnknownReferenceError(`${where}: server group ${name} is not in the file`);
    return id;
  };

  // Listeners, then their rules.
  const liveByKey = new Map(live.listeners.map((l) => [`${l.protocol}:${l.port}`, l]));
  const specKeys = new Set((spec.listeners ?? []).map((l) => `${l.protocol}:${l.port}`));
  const specPorts = new Set((spec.listeners ?? []).map((l) => `${transportOf(l.protocol)}:${l.port}`));
  for (const l of live.listeners) {
    if (specKeys.has(`${l.protocol}:${l.port}`)) continue;
    // A listener whose port a new one takes goes first; the others once nothing needs them.
    const replaced = specPorts.has(`${transportOf(l.protocol)}:${l.port}`);
    (replaced ? early : late).unshift({ op: 'deleteListener', loadBalancerId: lbId, listenerId: l.id });
    changes.push({
      action: '-',
      what: listenerLabel(l),
      details: replaced ? ['(its port goes to a new listener)'] : [],
    });
  }
  (spec.listeners ?? []).forEach((ls, i) => {
    const existing = liveByKey.get(`${ls.protocol}:${ls.port}`);
    const where = listenerLabel(ls);
    const refs = listenerReferences(ls, live, groupOf, where);
    if (!existing) {
      const ref = `lsn${i}`;
      const body: Record<string, unknown> = { protocol: ls.protocol, port: ls.port, ...refs };
      for (const key of LISTENER_FIELDS) if (ls[key] !== undefined) body[key] = ls[key];
      middle.push({ op: 'createListener', loadBalancerId: lbId, ref, body } as PlanOperation);
      const details = describeNew(
        { serverGroup: ls.serverGroup, ...Object.fromEntries(LISTENER_FIELDS.map((k) => [k, ls[k]])) },
        [],
      );
      if (ls.status === 'stopped') {
        middle.push({ op: 'stopListener', loadBalancerId: lbId, listenerId: `ref:${ref}` });
        details.push('status stopped');
      }
      changes.push({ action: '+', what: where, details });
      for (const r of ls.rules ?? []) addRule(r, `ref:${ref}`, where);
      return;
    }
    const body: Record<string, unknown> = {};
    const details: string[] = [];
    for (const key of LISTENER_FIELDS) {
      if (ls[key] === undefined || covers(ls[key], existing[key])) continue;
      body[key] = ls[key];
      details.push(...fieldChanges(key, existing[key], ls[key]));
    }
    if (refs.serverGroupId !== existing.serverGroupId) {
      body.serverGroupId = refs.serverGroupId;
      details.push(`serverGroup ${groupName(existing.serverGroupId, live)} → ${ls.serverGroup}`);
    }
    if (refs.certificateId !== undefined && refs.certificateId !== existing.certificateId) {
      body.certificateId = refs.certificateId;
      details.push(`certificate ${certName(existing.certificateId, live)} → ${ls.certificate ?? 'none'}`);
    }
    if (
      refs.additionalCertificateIds !== undefined &&
      !deepEqual(refs.additionalCertificateIds, existing.additionalCertificateIds)
    ) {
      body.additionalCertificateIds = refs.additionalCertificateIds;
      details.push(`additionalCertificates → ${show(ls.additionalCertificates)}`);
    }
    if (refs.acl !== undefined && !deepEqual(refs.acl, existing.acl)) {
      body.acl = refs.acl;
      details.push(`acl ${aclLabel(existing.acl, live)} → ${ls.acl ? `${ls.acl.name} (${ls.acl.mode})` : 'none'}`);
    }
    if (details.length > 0) {
      middle.push({ op: 'updateListener', loadBalancerId: lbId, listenerId: existing.id, body } as PlanOperation);
    }
    if (ls.status !== undefined && ls.status !== existing.status) {
      const op = ls.status === 'running' ? 'startListener' : 'stopListener';
      middle.push({ op, loadBalancerId: lbId, listenerId: existing.id });
      details.push(`status ${existing.status} → ${ls.status}`);
    }
    if (details.length > 0) changes.push({ action: '~', what: where, details });
    diffRules(ls, existing, where);
  });

  function addRule(r: RuleSpec, listenerId: string, where: string) {
    const body: Record<string, unknown> = { serverGroupId: groupOf(r.serverGroup, `${where} rule ${ruleLabel(r)}`) };
    if (r.domain !== undefined) body.domain = r.domain;
    if (r.path !== undefined) body.path = r.path;
    if (r.priority !== undefined) body.priority = r.priority;
    middle.push({ op: 'createRule', loadBalancerId: lbId, listenerId, body } as PlanOperation);
    changes.push({ action: '+', what: `rule ${ruleLabel(r)} on ${where}`, details: [`→ ${r.serverGroup}`] });
  }

  function diffRules(ls: ListenerSpec, existing: LiveListener, where: string) {
    const liveRules = live.rules[existing.id] ?? [];
    const byKey = new Map(liveRules.map((r) => [ruleKey(r), r]));
    const wanted = new Set<string>();
    for (const r of ls.rules ?? []) {
      const key = ruleKey(r);
      wanted.add(key);
      const current = byKey.get(key);
      if (!current) {
        addRule(r, existing.id, where);
        continue;
      }
      const body: Record<string, unknown> = {};
      const details: string[] = [];
      const sg = groupOf(r.serverGroup, `${where} rule ${ruleLabel(r)}`);
      if (sg !== current.serverGroupId) {
        body.serverGroupId = sg;
        details.push(`serverGroup ${groupName(current.serverGroupId, live)} → ${r.serverGroup}`);
      }
      if (r.priority !== undefined && r.priority !== current.priority) {
        body.priority = r.priority;
        details.push(`priority ${current.priority} → ${r.priority}`);
      }
      if (details.length === 0) continue;
      const ruleId = current.id;
      middle.push({ op: 'updateRule', loadBalancerId: lbId, listenerId: existing.id, ruleId, body } as PlanOperation);
      changes.push({ action: '~', what: `rule ${ruleLabel(r)} on ${where}`, details });
    }
    for (const r of liveRules) {
      if (wanted.has(ruleKey(r))) continue;
      late.unshift({ op: 'deleteRule', loadBalancerId: lbId, listenerId: existing.id, ruleId: r.id });
      changes.push({ action: '-', what: `rule ${ruleLabel(r)} on ${where}`, details: [] });
    }
  }

  // Groups the file no longer has go last, once no listener or rule uses them.
  const specGroupNames = new Set(specGroups.map((g) => g.name));
  for (const g of live.serverGroups) {
    if (specGroupNames.has(g.name)) continue;
    late.push({ op: 'deleteServerGroup', loadBalancerId: lbId, serverGroupId: g.id });
    changes.push({
      action: '-',
      what: `server-group ${g.name}`,
      details: g.servers.map((s) => `- server ${hostPort(s.address, s.port)}`),
    });
  }

  return { changes, operations: [...early, ...middle, ...late], notes };
}

/** Servers of a group that exists: added in one batch, weights and descriptions updated, the rest removed. */
function diffServers(
  spec: ServerGroupSpec,
  live: LiveServerGroup,
  lbId: string,
  drainSeconds: string | null,
  middle: PlanOperation[],
  late: PlanOperation[],
  changes: Change[],
) {
  const liveByKey = new Map(live.servers.map((s) => [hostPort(s.address, s.port), s]));
  const wanted = new Set<string>();
  const added: NonNullable<ServerGroupSpec['servers']> = [];
  const where = `in ${spec.name}`;
  for (const s of spec.servers ?? []) {
    const key = hostPort(s.address, s.port);
    wanted.add(key);
    const current = liveByKey.get(key);
    if (!current) {
      added.push(s);
      changes.push({ action: '+', what: `server ${key} ${where}`, details: [`weight ${s.weight ?? 100}`] });
      continue;
    }
    const body: Record<string, unknown> = {};
    const details: string[] = [];
    if (s.weight !== undefined && s.weight !== current.weight) {
      body.weight = s.weight;
      const drains = s.weight === 0 && drainSeconds !== null ? ` (${drainSeconds})` : '';
      details.push(`weight ${current.weight} → ${s.weight}${drains}`);
    }
    if (s.description !== undefined && s.description !== current.description) {
      body.description = s.description;
      details.push(`description ${show(current.description)} → ${show(s.description)}`);
    }
    if (details.length === 0) continue;
    middle.unshift({ op: 'updateServer', loadBalancerId: lbId, serverGroupId: live.id, serverId: current.id, body });
    changes.push({ action: '~', what: `server ${key} ${where}`, details });
  }
  if (added.length > 0) {
    middle.unshift({ op: 'addServers', loadBalancerId: lbId, serverGroupId: live.id, body: { servers: added } });
  }
  for (const s of live.servers) {
    const key = hostPort(s.address, s.port);
    if (wanted.has(key)) continue;
    late.unshift({ op: 'deleteServer', loadBalancerId: lbId, serverGroupId: live.id, serverId: s.id });
    const drains = drainSeconds !== null ? [drainSeconds] : [];
    changes.push({ action: '-', what: `server ${key} ${where}`, details: drains });
  }
}

/** `drains for 60 s` (or `up to` the longest, when the listeners sending to the group differ), or null if none does. */
function drainOf(group: string, spec: LoadBalancerSpec, live: LiveState): string | null {
  const liveGroup = live.serverGroups.find((g) => g.name === group);
  const times = (spec.listeners ?? [])
    .filter((l) => l.serverGroup === group || (l.rules ?? []).some((r) => r.serverGroup === group))
    .map((l) => {
      const current = live.listeners.find((x) => x.protocol === l.protocol && x.port === l.port);
      return l.connectionDrainTimeout ?? current?.connectionDrainTimeout ?? 300;
    });
  if (times.length === 0 && liveGroup) {
    for (const l of live.listeners) if (l.serverGroupId === liveGroup.id) times.push(l.connectionDrainTimeout);
  }
  if (times.length === 0) return null;
  const longest = Math.max(...times);
  return `drains for ${times.every((t) => t === longest) ? '' : 'up to '}${longest} s`;
}

/** The ids a listener's names stand for; undefined where the file leaves the field out. */
function listenerReferences(
  ls: ListenerSpec,
  live: LiveState,
  groupOf: (name: string, where: string) => string,
  where: string,
) {
  const certId = (name: string) => {
    const matches = live.certificates.filter((c) => c.name === name);
    if (matches.length !== 1) {
      throw new UnknownReferenceError(
        `${where}: ${matches.length ? `${matches.length} certificates are` : 'no certificate is'} named ${name}`,
      );
    }
    return matches[0]!.id;
  };
  const refs: {
    serverGroupId: string;
    certificateId?: string | null;
    additionalCertificateIds?: string[];
    acl?: { aclId: string; mode: 'allow' | 'deny' } | null;
  } = { serverGroupId: groupOf(ls.serverGroup, where) };
  if (ls.certificate !== undefined) refs.certificateId = ls.certificate === null ? null : certId(ls.certificate);
  if (ls.additionalCertificates !== undefined) refs.additionalCertificateIds = ls.additionalCertificates.map(certId);
  if (ls.acl !== undefined) {
    if (ls.acl === null) refs.acl = null;
    else {
      const name = ls.acl.name;
      const matches = live.acls.filter((a) => a.name === name);
      if (matches.length !== 1) {
        throw new UnknownReferenceError(
          `${where}: ${matches.length ? `${matches.length} ACLs are` : 'no ACL is'} named ${name}`,
        );
      }
      refs.acl = { aclId: matches[0]!.id, mode: ls.acl.mode };
    }
  }
  return refs;
}

const groupName = (id: string, live: LiveState) => live.serverGroups.find((g) => g.id === id)?.name ?? id;
const certName = (id: string | null, live: LiveState) =>
  id === null ? 'none' : (live.certificates.find((c) => c.id === id)?.name ?? id);
const aclLabel = (acl: LiveListener['acl'], live: LiveState) =>
  acl === null ? 'none' : `${live.acls.find((a) => a.id === acl.aclId)?.name ?? acl.aclId} (${acl.mode})`;

/**
 * Whether the live value already is what the file says: objects compare on the keys the file gives (a
 * health check naming only its interval leaves the rest as it is), everything else exactly.
 */
export function covers(wanted: unknown, actual: unknown): boolean {
  if (isPlainObject(wanted) && isPlainObject(actual)) {
    return Object.entries(wanted).every(([k, v]) => v === undefined || covers(v, actual[k]));
  }
  return deepEqual(wanted, actual);
}

export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((v, i) => deepEqual(v, b[i]));
  if (isPlainObject(a) && isPlainObject(b)) {
    const ka = Object.keys(a).filter((k) => a[k] !== undefined);
    const kb = Object.keys(b).filter((k) => b[k] !== undefined);
    return ka.length === kb.length && ka.every((k) => deepEqual(a[k], b[k]));
  }
  return false;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** `healthCheck.interval 2 → 5`: one line per leaf that differs. */
function fieldChanges(path: string, before: unknown, after: unknown): string[] {
  if (isPlainObject(after) && isPlainObject(before)) {
    return Object.entries(after).flatMap(([k, v]) =>
      v === undefined || covers(v, before[k]) ? [] : fieldChanges(`${path}.${k}`, before[k], v),
    );
  }
  return [`${path} ${show(before)} → ${show(after)}`];
}

function describeNew(body: Record<string, unknown>, skip: string[]): string[] {
  return Object.entries(body)
    .filter(([k, v]) => v !== undefined && !skip.includes(k))
    .map(([k, v]) => `${k} ${show(v)}`);
}

const show = (v: unknown) => (typeof v === 'string' ? v || '""' : JSON.stringify(v));
