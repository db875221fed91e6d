import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Value } from '@sinclair/typebox/value';
import { isHttpProtocol, transportOf } from '@slb/model';
import { parseDocument } from 'yaml';
import { type LoadBalancerSpec, LoadBalancerSpec as Schema } from './spec.js';

/** A file that cannot be read, parsed or validated: said with the file name and the field path. */
export class SpecError extends Error {}

const MAX_ERRORS = 10;

/** Reads a load balancer file (YAML or JSON; `-` is stdin) and checks it against the schema and itself. */
export function loadSpec(
  file: string,
  cwd: string,
  stdin: () => string = () => readFileSync(0, 'utf8'),
): LoadBalancerSpec {
  let text: string;
  try {
    text = file === '-' ? stdin() : readFileSync(resolve(cwd, file), 'utf8');
  } catch (err) {
    throw new SpecError(`${file}: cannot read it (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
  }
  const doc = parseDocument(text, { prettyErrors: false, uniqueKeys: true });
  if (doc.errors.length > 0) {
    throw new SpecError(`${file}: not valid YAML or JSON: ${doc.errors[0]!.message.split('\n')[0]}`);
  }
  return checkSpec(doc.toJS(), file);
}

/** Schema first (the API's own field limits), then what a schema cannot say: names unique, references known. */
export function checkSpec(value: unknown, file: string): LoadBalancerSpec {
  const errors = [...Value.Errors(Schema, value)].slice(0, MAX_ERRORS);
  if (errors.length > 0) {
    const lines = errors.map((e) => `  ${e.path || '/'}: ${e.message}`);
    throw new SpecError(`${file}: does not match the load balancer file schema:\n${lines.join('\n')}`);
  }
  const spec = value as LoadBalancerSpec;
  const problems: string[] = [];
  const groups = new Set<string>();
  (spec.serverGroups ?? []).forEach((g, i) => {
    if (groups.has(g.name)) problems.push(`/serverGroups/${i}/name: ${g.name} is named twice`);
    groups.add(g.name);
    const servers = new Set<string>();
    (g.servers ?? []).forEach((s, j) => {
      const key = `${s.address}|${s.port}`;
      if (servers.has(key)) problems.push(`/serverGroups/${i}/servers/${j}: ${s.address}:${s.port} is listed twice`);
      servers.add(key);
    });
  });
  const ports = new Set<string>();
  (spec.listeners ?? []).forEach((l, i) => {
    const key = `${transportOf(l.protocol)}:${l.port}`;
    if (ports.has(key)) problems.push(`/listeners/${i}/port: ${key} is taken by another listener of the file`);
    ports.add(key);
    if (!groups.has(l.serverGroup)) problems.push(`/listeners/${i}/serverGroup: no server group ${l.serverGroup}`);
    if (l.rules?.length && !isHttpProtocol(l.protocol))
      problems.push(`/listeners/${i}/rules: rules are for http and https listeners`);
    const rules = new Set<string>();
    (l.rules ?? []).forEach((r, j) => {
      if (!groups.has(r.serverGroup)) {
        problems.push(`/listeners/${i}/rules/${j}/serverGroup: no server group ${r.serverGroup}`);
      }
      const rk = `${r.domain ?? ''} ${r.path ?? ''}`;
      if (rules.has(rk)) problems.push(`/listeners/${i}/rules/${j}: the same domain and path twice`);
      rules.add(rk);
    });
  });
  if (problems.length > 0) {
    throw new SpecError(
      `${file}:\n${problems
        .slice(0, MAX_ERRORS)
        .map((p) => `  ${p}`)
        .join('\n')}`,
    );
  }
  return spec;
}
