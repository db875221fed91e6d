import type { Command, OptionSpec } from './command.js';
import { EXIT_CODES_HELP, GLOBAL_OPTIONS, GROUP_SUMMARIES } from './globals.js';

function optionLines(options: Record<string, OptionSpec>): string[] {
  const rows = Object.entries(options).map(([name, o]) => {
    const flag = `${o.short ? `-${o.short}, ` : '    '}--${name}${o.type === 'string' ? ` ${o.valueName ?? 'VALUE'}` : ''}`;
    const notes = [o.required ? 'required' : '', o.multiple ? 'repeatable' : ''].filter(Boolean).join(', ');
    return [flag, `${o.description}${notes ? ` (${notes})` : ''}`] as const;
  });
  const width = Math.max(0, ...rows.map(([f]) => f.length));
  return rows.map(([f, d]) => `  ${f.padEnd(width)}  ${d}`);
}

/** Commands grouped by their first word, in registry order. */
export function groups(commands: Command[]): Map<string, Command[]> {
  const out = new Map<string, Command[]>();
  for (const c of commands) {
    const key = c.name[0]!;
    out.set(key, [...(out.get(key) ?? []), c]);
  }
  return out;
}

export function topHelp(commands: Command[], version: string): string {
  const rows = [...groups(commands)].map(([name, cmds]) => {
    const single = cmds.length === 1 && cmds[0]!.name.length === 1;
    const what = single
      ? cmds[0]!.summary
      : `${GROUP_SUMMARIES[name] ?? name}: ${cmds.map((c) => c.name.slice(1).join(' ')).join(', ')}`;
    return [name, what] as const;
  });
  const width = Math.max(...rows.map(([n]) => n.length));
  return [
    `slb ${version}: the command-line tool for the SLB load balancer API`,
    '',
    'Usage: slb <command> [arguments] [options]',
    '',
    'Commands:',
    ...rows.map(([n, w]) => `  ${n.padEnd(width)}  ${w}`),
    '',
    'Global options:',
    ...optionLines(GLOBAL_OPTIONS),
    '',
    'Configuration: flags, then SLB_API_URL / SLB_TOKEN / SLB_PROFILE, then the profile in',
    '$XDG_CONFIG_HOME/slb (else ~/.config/slb): config.json and credentials.json (mode 0600).',
    '',
    EXIT_CODES_HELP,
    '',
    'Examples:',
    '  slb login --api-url http://127.0.0.1:8080',
    '  slb lb create --name web',
    '  slb lb list -o json',
    '',
    "Run 'slb <command> --help' for a command's options and examples.",
  ].join('\n');
}

export function groupHelp(name: string, commands: Command[]): string {
  const width = Math.max(...commands.map((c) => c.name.join(' ').length));
  return [
    `slb ${name}: ${GROUP_SUMMARIES[name] ?? name}`,
    '',
    'Commands:',
    ...commands.map((c) => `  slb ${c.name.join(' ').padEnd(width)}  ${c.summary}`),
    '',
    'Examples:',
    ...commands.flatMap((c) => c.examples.slice(0, 1).map((e) => `  ${e}`)),
    '',
    `Run 'slb ${name} <command> --help' for its options.`,
  ].join('\n');
}

export function commandHelp(command: Command): string {
  const args = Object.entries(command.arguments ?? {});
  const width = Math.max(0, ...args.map(([n]) => n.length));
  return [
    `slb ${command.name.join(' ')}: ${command.summary}`,
    '',
    `Usage: ${command.usage}`,
    ...(args.length ? ['', 'Arguments:', ...args.map(([n, d]) => `  ${n.padEnd(width)}  ${d}`)] : []),
    ...(command.options && Object.keys(command.options).length
      ? ['', 'Options:', ...optionLines(command.options)]
      : []),
    '',
    'Global options:',
    ...optionLines(GLOBAL_OPTIONS),
    '',
    'Examples:',
    ...command.examples.map((e) => `  ${e}`),
  ].join('\n');
}
