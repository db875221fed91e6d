import type { Command, Context, ParsedArgs } from '../command.js';
import { CliError, EXIT, UsageError } from '../errors.js';
import { lbPath, resolveLb } from './shared.js';

/*
 * apply, plan and export: a load balancer described whole in one file. The modules they need (the model's
 * schemas, YAML) load when one of these runs, so the other commands start without them.
 */

const FILE_OPTION = {
  file: {
    type: 'string',
    short: 'f',
    required: true,
    valueName: 'FILE',
    description: 'the load balancer file (YAML or JSON; - reads stdin)',
  },
} as const;

/** Exit code of `plan --exit-code` when the live LB differs from the file (0 when it matches). */
export const EXIT_CHANGES = 10;

async function prepare(ctx: Context, args: ParsedArgs) {
  const file = args.values.file;
  if (typeof file !== 'string') throw new UsageError('--file is required');
  const [{ loadSpec, SpecError }, { diffLoadBalancer, UnknownReferenceError }, live, apply, render] = await Promise.all(
    [
      import('../declarative/load.js'),
      import('../declarative/diff.js'),
      import('../declarative/live.js'),
      import('../declarative/apply.js'),
      import('../declarative/render.js'),
    ],
  );
  let spec: Awaited<ReturnType<typeof loadSpec>>;
  try {
    spec = loadSpec(file, ctx.cwd);
  } catch (err) {
    if (err instanceof SpecError) throw new UsageError(err.message);
    throw err;
  }
  const api = ctx.api();
  const lb = await findOrFail(live, api, spec.name);
  const state = await live.readLiveState(api, lb);
  let diff: ReturnType<typeof diffLoadBalancer>;
  try {
    diff = diffLoadBalancer(spec, state);
  } catch (err) {
    if (err instanceof UnknownReferenceError) throw new CliError(err.message, EXIT.notFound);
    throw err;
  }
  const operations = await apply.withEtags(api, diff.operations);
  const plan = operations.length > 0 ? await apply.planOnApi(api, operations) : null;
  const paint = ctx.color ? render.COLOURS : render.PLAIN;
  const groupNames = render.groupNamesOf(state.serverGroups, operations, plan);
  const text = () => render.renderPlan(spec.name, diff, plan, paint, groupNames);
  return { spec, lb, diff, operations, plan, api, apply, render, text };
}

async function findOrFail(
  live: typeof import('../declarative/live.js'),
  api: ReturnType<Context['api']>,
  name: string,
) {
  try {
    return await live.findLoadBalancer(api, name);
  } catch (err) {
    if (err instanceof live.AmbiguousNameError) throw new CliError(err.message, EXIT.conflict);
    throw err;
  }
}

async function structured(ctx: Context, value: unknown) {
  if (ctx.format === 'yaml') {
    const { stringify } = await import('yaml');
    ctx.out(stringify(value));
  } else ctx.out(JSON.stringify(value, null, 2));
}

export const planCommand: Command = {
  name: ['plan'],
  summary: 'show what apply would change, and what that does to live traffic',
  usage: 'slb plan -f FILE [--exit-code]',
  examples: [
    'slb plan -f web.yaml',
    'slb plan -f web.yaml -o json',
    'slb plan -f web.yaml --exit-code  # 10 when it differs',
  ],
  options: {
    ...FILE_OPTION,
    'exit-code': { type: 'boolean', description: `exit ${EXIT_CHANGES} when the live LB differs from the file` },
  },
  async run(ctx, args) {
    const { spec, diff, operations, plan, text } = await prepare(ctx, args);
    if (ctx.format === 'table') ctx.out(text());
    else await structured(ctx, { loadBalancer: spec.name, changes: diff.changes, notes: diff.notes, operations, plan });
    return args.values['exit-code'] && operations.length > 0 ? EXIT_CHANGES : EXIT.ok;
  },
};

export const applyCommand: Command = {
  name: ['apply'],
  summary: 'make the live load balancer match a file: create, change and delete only what differs',
  usage: 'slb apply -f FILE [--wait] [--timeout SECONDS]',
  examples: ['slb apply -f web.yaml', 'slb apply -f web.yaml --wait  # until every node serves the change'],
  options: {
    ...FILE_OPTION,
    wait: { type: 'boolean', description: 'wait until every node hosting the LB acked the new config' },
    timeout: { type: 'string', valueName: 'SECONDS', description: 'how long --wait waits (default 60)' },
  },
  async run(ctx, args) {
    const timeout = args.values.timeout === undefined ? 60 : Number(args.values.timeout);
    if (!Number.isFinite(timeout) || timeout <= 0) throw new UsageError('--timeout takes a number of seconds');
    const { spec, lb, diff, operations, api, apply, render, text } = await prepare(ctx, args);
    const table = ctx.format === 'table';
    if (table) ctx.out(text());
    const results = await apply.applyOperations(api, operations, (done, i) => {
      if (table) ctx.err(`  [${i + 1}/${operations.length}] ${done.op}${done.id ? ` ${done.id}` : ''}: ${done.status}`);
    });
    const lbId = lb?.id ?? results.find((r) => r.op === 'createLoadBalancer')?.id;
    let converged: boolean | null = null;
    if (args.values.wait && lbId) {
      converged = await apply.waitConverged(api, lbId, timeout * 1000, ctx.signal, (live) => {
        const waiting = live.nodes.filter((n) => n.online && !n.converged).map((n) => n.nodeId);
        ctx.err(`  waiting for ${waiting.length ? waiting.join(', ') : 'the LB to become active'}`);
      });
    }
    if (table) {
      if (operations.length > 0) ctx.out(render.appliedSummary(diff.changes));
      if (converged === true) ctx.out('Every node serves it.');
    } else {
      await structured(ctx, {
        loadBalancer: spec.name,
        loadBalancerId: lbId ?? null,
        changes: diff.changes,
        results,
        converged,
      });
    }
    if (converged === false) {
      ctx.err(`error: the nodes did not all ack the change within ${timeout} s`);
      return EXIT.server;
    }
    return EXIT.ok;
  },
};

export const exportCommand: Command = {
  name: ['export'],
  summary: 'write the file for a live load balancer (apply it back: no change)',
  usage: 'slb export LB [-o yaml|json]',
  examples: ['slb export web > web.yaml', 'slb export lb-0123456789abcdefghij -o json'],
  positionals: ['LB'],
  async run(ctx, args) {
    const ref = args.positionals[0];
    if (!ref) throw new UsageError('name the load balancer to export (its name or id)');
    const [live, { exportLoadBalancer }] = await Promise.all([
      import('../declarative/live.js'),
      import('../declarative/export.js'),
    ]);
    const api = ctx.api();
    const lb = await api.get<import('../declarative/diff.js').LiveLoadBalancer>(lbPath(await resolveLb(ctx, ref)));
    const spec = exportLoadBalancer(await live.readLiveState(api, lb));
    if (ctx.format === 'json') ctx.out(JSON.stringify(spec, null, 2));
    else {
      const { stringify } = await import('yaml');
      ctx.out(`# slb export ${lb.name} (${lb.id})\n${stringify(spec)}`);
    }
    return EXIT.ok;
  },
};

export const DECLARATIVE_COMMANDS = [planCommand, applyCommand, exportCommand];
