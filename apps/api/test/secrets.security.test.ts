import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  API_MAIN,
  cleanupRedis,
  eventually,
  freePort,
  isolatedHealthEnv,
  L4_MAIN,
  L7_MAIN,
  LOOPBACK_BACKENDS_ENV,
  type Proc,
  startProcess,
} from '@slb/test-support/fleet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeCertificate } from './helpers.js';

// A realistic session against real processes at the most verbose log level: tenants, tokens (created,
// used, revoked, guessed), a certificate with its key pushed to an L7 node, nodes joining with the node
// token and one with a wrong token. Then every log line of every process and every response body is
// searched for every secret. A token may appear in exactly one place: the response that created it.

const ADMIN = 'secret-admin-token-5f0c6a0e9b3d41a7';
/** Node name → the id the API allocated; the credentials the nodes enrolled for. */
const nodeIds = new Map<string, string>();
const credentials: string[] = [];
const WRONG_NODE_TOKEN = 'wrong-node-token-3b9d0e5f7a2c4d88';
const GUESSED = 'slb_guessed-token-a1b2c3d4e5f6a7b8c9d0';
const healthEnv = isolatedHealthEnv();
const pem = makeCertificate('secrets.example');
const otherPem = makeCertificate('other.example');

interface Recorded {
  what: string;
  text: string;
}

let dir: string;
let apiPort: number;
const procs = new Map<string, Proc>();
const responses: Recorded[] = [];
/** Token values, each with the label of the one response allowed to show it. */
const tokens = new Map<string, string | null>();

async function api(
  what: string,
  method: string,
  path: string,
  token: string | null,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; json: any }> {
  const res = await fetch(`http://127.0.0.1:${apiPort}${path}`, {
    method,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...headers,
    },
    ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  responses.push({ what, text: `${JSON.stringify([...res.headers])}\n${text}` });
  let json: any = null;
  try {
    json = JSON.parse(text);
  } catch {}
  return { status: res.status, json };
}

function node(name: string, main: string, address: string, joinToken: string): Proc {
  const proc = startProcess(main, {
    SLB_API_URL: `http://127.0.0.1:${apiPort}`,
    SLB_NODE_JOIN_TOKEN: joinToken,
    SLB_NODE_ID: name,
    SLB_NODE_ADDRESS: address,
    SLB_STATE_DIR: join(dir, name),
    SLB_METRICS_PORT: '0',
    SLB_SESSION_SYNC_REDIS_URL: 'off',
    LOG_LEVEL: 'trace',
  });
  procs.set(name, proc);
  return proc;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'slb-secrets-'));
  apiPort = await freePort();
  procs.set(
    'api',
    startProcess(API_MAIN, {
      PORT: String(apiPort),
      ...LOOPBACK_BACKENDS_ENV,
      SLB_DB_PATH: join(dir, 'slb.db'),
      SLB_ADMIN_TOKEN: ADMIN,
      SLB_DNS_PORT: '0',
      SLB_ADDRESS_POOLS: '127.1.82.0/24', // VIPs of its own: e2e files run side by side
      ...healthEnv,
      LOG_LEVEL: 'trace',
    }),
  );
  await eventually('the API', () =>
    fetch(`http://127.0.0.1:${apiPort}/healthz`).then((r) => (r.ok ? true : undefined)),
  );
  // Nodes registered by the admin: the join token is in the answer that created it, and nowhere else.
  for (const [name, main, kind, address] of [
    ['secrets-l4', L4_MAIN, 'l4', '127.0.0.61'],
    ['secrets-l7', L7_MAIN, 'l7', '127.0.0.62'],
  ] as const) {
    const what = `register ${name}`;
    const registered = await api(what, 'POST', '/v1/nodes', ADMIN, { kind, address, name });
    expect(registered.status).toBe(201);
    tokens.set(registered.json.joinToken, what);
    nodeIds.set(name, registered.json.id);
    node(name, main, address, registered.json.joinToken);
  }
  node('intruder', L4_MAIN, '127.0.0.63', WRONG_NODE_TOKEN);

  // Tenants and tokens: created, used, revoked, guessed.
  const tenant = await api('create tenant', 'POST', '/v1/tenants', ADMIN, { name: 'acme' });
  const t = tenant.json.id as string;
  const member = await api('create member token', 'POST', `/v1/tenants/${t}/tokens`, ADMIN, { role: 'member' });
  tokens.set(member.json.token, 'create member token');
  const admin2 = await api('create admin token', 'POST', `/v1/tenants/${t}/tokens`, ADMIN, { role: 'admin' });
  tokens.set(admin2.json.token, 'create admin token');
  const old = await api('create token to revoke', 'POST', `/v1/tenants/${t}/tokens`, ADMIN, { name: 'old' });
  tokens.set(old.json.token, 'create token to revoke');
  expect((await api('use token', 'GET', '/v1/load-balancers', old.json.token)).status).toBe(200);
  await api('revoke token', 'DELETE', `/v1/tenants/${t}/tokens/${old.json.id}`, ADMIN);
  expect((await api('revoked token', 'GET', '/v1/load-balancers', old.json.token)).status).toBe(401);
  expect((await api('guessed token', 'GET', '/v1/load-balancers', GUESSED)).status).toBe(401);
  expect((await api('member on nodes', 'GET', '/v1/nodes', member.json.token)).status).toBe(403);
  await api('list tokens', 'GET', `/v1/tenants/${t}/tokens`, admin2.json.token);
  await api('token in a query string', 'GET', `/v1/load-balancers?access_token=${member.json.token}`, null);

  // A certificate and its key, good and bad, and an HTTPS listener that ships both to the L7 node.
  const m = member.json.token as string;
  const lb = await api('create LB', 'POST', '/v1/load-balancers', m, { name: 'web' });
  const lbId = lb.json.id as string;
  const sg = await api('create group', 'POST', `/v1/load-balancers/${lbId}/server-groups`, m, {
    name: 'pool',
    servers: [{ address: '127.0.0.1', port: await freePort() }],
  });
  const certBody = { name: 'site', ...pem };
  const cert = await api('create certificate', 'POST', '/v1/certificates', m, certBody, { 'idempotency-key': 'c1' });
  expect(cert.status).toBe(201);
  await api('replay certificate create', 'POST', '/v1/certificates', m, certBody, { 'idempotency-key': 'c1' });
  await api(
    'reuse idempotency key',
    'POST',
    '/v1/certificates',
    m,
    { ...certBody, name: 'x' },
    { 'idempotency-key': 'c1' },
  );
  await api('read certificate', 'GET', `/v1/certificates/${cert.json.id}`, m);
  await api('list certificates', 'GET', '/v1/certificates', m);
  await api('mismatched key', 'POST', '/v1/certificates', m, {
    name: 'x',
    certificate: pem.certificate,
    privateKey: otherPem.privateKey,
  });
  await api('key as certificate', 'POST', '/v1/certificates', m, {
    name: 'x',
    certificate: pem.privateKey,
    privateKey: pem.privateKey,
  });
  await api('truncated key', 'POST', '/v1/certificates', m, {
    name: 'x',
    certificate: pem.certificate,
    privateKey: pem.privateKey.slice(0, 150),
  });
  await api('key in an unknown field', 'POST', '/v1/certificates', m, { ...certBody, key: pem.privateKey });
  await api('key of the wrong type', 'POST', '/v1/certificates', m, {
    name: 'x',
    certificate: pem.certificate,
    privateKey: [pem.privateKey],
  });
  await api(
    'key in bad JSON',
    'POST',
    '/v1/certificates',
    m,
    `{"name":"x","privateKey":${JSON.stringify(pem.privateKey)},`,
  );
  const port = await freePort('127.0.0.61');
  const lsn = await api('create https listener', 'POST', `/v1/load-balancers/${lbId}/listeners`, m, {
    protocol: 'https',
    port,
    serverGroupId: sg.json.id,
    certificateId: cert.json.id,
  });
  expect(lsn.status).toBe(201);
  await api('listener with another key', 'PATCH', `/v1/load-balancers/${lbId}/listeners/${lsn.json.id}`, m, {
    certificateId: 'cert-00000000000000000000',
  });

  // The L7 node holds the key once it has applied the listener; the intruder has been refused by then.
  await eventually(
    'both nodes converged',
    async () => {
      const { json } = await api('list nodes', 'GET', '/v1/nodes', ADMIN);
      const l7 = json?.items?.find((n: { id: string }) => n.id === nodeIds.get('secrets-l7'));
      const l4 = json?.items?.find((n: { id: string }) => n.id === nodeIds.get('secrets-l4'));
      const lbNow = await api('read LB', 'GET', `/v1/load-balancers/${lbId}`, m);
      return l7?.appliedConfigVersion > 0 && l4?.appliedConfigVersion > 0 && lbNow.json.status === 'active'
        ? true
        : undefined;
    },
    15_000,
    200,
  );
  await eventually('the intruder refused', async () =>
    procs.get('api')!.output.some((l) => l.includes('refused node connections')) ? true : undefined,
  );
  for (const name of ['secrets-l4', 'secrets-l7']) {
    credentials.push(JSON.parse(readFileSync(join(dir, name, 'credential.json'), 'utf8')).credential);
  }
  for (const path of ['/metrics', '/openapi.json', '/readyz', '/healthz']) await api(`GET ${path}`, 'GET', path, null);
  // Shutdown logs count too.
  for (const proc of procs.values()) await proc.stop('SIGTERM');
}, 60_000);

afterAll(async () => {
  await Promise.all([...procs.values()].map((p) => p.stop('SIGKILL')));
  rmSync(dir, { recursive: true, force: true });
  await cleanupRedis(healthEnv);
});

/** The parts of a PEM key that identify it: the whole, and every base64 line of its body. */
function keyFragments(keyPem: string): string[] {
  const lines = keyPem.split('\n').filter((l) => l.length >= 16 && !l.startsWith('-----'));
  return [keyPem.trim(), lines.join(''), ...lines];
}

const logs = () =>
  [...procs].flatMap(([name, proc]) => proc.output.map((line) => ({ what: `${name} log`, text: line })));

describe('secrets never appear in responses or logs', () => {
  it('the session really happened and was logged at trace level', () => {
    const api = procs.get('api')!.output.join('\n');
    expect(api).toContain('node connected');
    expect(api).toContain('"msg":"request"');
    expect(api).toContain('refused node connections');
    expect(procs.get('secrets-l7')!.output.length).toBeGreaterThan(0);
    expect(tokens.size).toBe(5);
    expect(credentials).toHaveLength(2);
    expect(responses.length).toBeGreaterThan(30);
  });

  it('the search finds a secret where it is allowed to be, so silence elsewhere means something', () => {
    for (const [token, allowedIn] of tokens) {
      expect(responses.filter((r) => r.text.includes(token)).map((r) => r.what)).toContain(allowedIn);
    }
  });

  it.each([
    ['the admin token', ADMIN],
    ['a wrong node token', WRONG_NODE_TOKEN],
    ['a guessed token', GUESSED],
  ])('%s is in no log line and no response', (_what, secret) => {
    const hits = [...logs(), ...responses].filter((r) => r.text.includes(secret));
    expect(hits.map((h) => `${h.what}: ${h.text.slice(0, 300)}`)).toEqual([]);
  });

  it('no created token is in any log line, nor in any response but the one that created it', () => {
    for (const [token, allowedIn] of tokens) {
      const secretPart = token.replace(/^slb_/, '');
      const hits = [...logs(), ...responses].filter((r) => r.text.includes(secretPart) && r.what !== allowedIn);
      expect(hits.map((h) => `${h.what}: ${h.text.slice(0, 300)}`)).toEqual([]);
    }
  });

  it('no node credential is in any log line or response', () => {
    for (const credential of credentials) {
      const hits = [...logs(), ...responses].filter((r) => r.text.includes(credential));
      expect(hits.map((h) => `${h.what}: ${h.text.slice(0, 300)}`)).toEqual([]);
    }
  });

  it('no part of a private key is in any log line or response', () => {
    for (const key of [pem.privateKey, otherPem.privateKey]) {
      for (const fragment of keyFragments(key)) {
        const hits = [...logs(), ...responses].filter((r) => r.text.includes(fragment));
        expect(hits.map((h) => `${h.what}: ${h.text.slice(0, 300)}`)).toEqual([]);
      }
    }
  });
});
