import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { Api } from './api.js';
import type { Command, Context, OptionSpec, OutputFormat, ParsedArgs } from './command.js';
import { COMMANDS } from './commands/index.js';
import { ConfigStore, type Env, type Resolved, resolveSettings } from './config.js';
import { CliError, EXIT, UsageError } from './errors.js';
import { GLOBAL_OPTIONS } from './globals.js';
import { commandHelp, groupHelp, topHelp } from './help.js';

export interface Io {
  stdout: { write(text: string): unknown; isTTY?: boolean };
  stderr: { write(text: string): unknown; isTTY?: boolean };
  stdin: Context['stdin'];
  env: Env;
  cwd: string;
  /** Aborted on SIGINT/SIGTERM. */
  signal: AbortSignal;
}

const FORMATS: OutputFormat[] = ['table', 'json', 'yaml'];

function version(): string {
  try {
    return (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string })
      .version;
  } catch {
    return 'unknown';
  }
}

/**
 * The words that name the command: the leading non-option arguments, skipping the values of global options
 * (`slb --profile prod lb list`). Returns the longest registered name they start with, and where they were.
 */
function findCommand(argv: string[], commands: Command[]): { command?: Command; words: string[]; at: number[] } {
  const words: string[] = [];
  const at: number[] = [];
  const takesValue = new Set(
    Object.entries(GLOBAL_OPTIONS)
      .filter(([, o]) => o.type === 'string')
      .flatMap(([n, o]) => [`--${n}`, ...(o.short ? [`-${o.short}`] : [])]),
  );
  for (let i = 0; i < argv.length && words.length < 3; i++) {
    const arg = argv[i]!;
    if (arg === '--') break;
    if (arg.startsWith('-')) {
      if (takesValue.has(arg)) i++;
      continue;
    }
    words.push(arg);
    at.push(i);
  }
  let best: Command | undefined;
  for (const c of commands) {
    if (c.name.length <= words.length && c.name.every((w, i) => words[i] === w)) {
      if (!best || c.name.length > best.name.length) best = c;
    }
  }
  return { command: best, words, at };
}

function checkPositionals(command: Command, positionals: string[]): void {
  const specs = command.positionals ?? [];
  const required = specs.filter((p) => !p.endsWith('?')).length;
  const variadic = specs.some((p) => p.endsWith('...'));
  const names = specs.map((p) => p.replace(/[?.]+$/, '')).join(' ');
  if (positionals.length < required) throw new UsageError(`missing ${names}`);
  if (!variadic && positionals.length > specs.length) {
    throw new UsageError(`unexpected argument '${positionals[specs.length]}'`);
  }
}

function checkRequired(options: Record<string, OptionSpec>, values: ParsedArgs['values']): void {
  const missing = Object.entries(options)
    .filter(([name, o]) => o.required && values[name] === undefined)
    .map(([name]) => `--${name}`);
  if (missing.length) throw new UsageError(`missing ${missing.join(', ')}`);
}

/** Runs one command line; resolves to the exit code. Never throws. */
export async function main(argv: string[], io: Io, commands: Command[] = COMMANDS): Promise<number> {
  const write = (stream: Io['stdout'], text: string) => stream.write(text.endsWith('\n') ? text : `${text}\n`);
  const found = findCommand(argv, commands);
  const { command } = found;
  const helpFor = command ? `slb ${command.name.join(' ')} --help` : 'slb --help';
  try {
    const rest = command ? argv.filter((_, i) => !found.at.slice(0, command.name.length).includes(i)) : argv;
    const options = { ...GLOBAL_OPTIONS, ...(command?.options ?? {}) };
    let parsed: ParsedArgs;
    try {
      parsed = parseArgs({
        args: rest,
        options: Object.fromEntries(
          Object.entries(options).map(([n, o]) => [
            n,
            { type: o.type, ...(o.short ? { short: o.short } : {}), ...(o.multiple ? { multiple: true } : {}) },
          ]),
        ),
        allowPositionals: true,
        strict: true,
      }) as ParsedArgs;
    } catch (err) {
      throw new UsageError((err as Error).message.split('\n')[0]!.replace(/\. To specify a positional.*$/, ''));
    }
    const { values } = parsed;

    if (!command) {
      if (values.version) {
        write(io.stdout, version());
        return 0;
      }
      const group = commands.filter((c) => c.name.length > 1 && c.name[0] === found.words[0]);
      if (found.words.length === 0) {
        write(values.help ? io.stdout : io.stderr, topHelp(commands, version()));
        return values.help ? 0 : EXIT.usage;
      }
      if (group.length && found.words.length === 1) {
        write(values.help ? io.stdout : io.stderr, groupHelp(found.words[0]!, group));
        return values.help ? 0 : EXIT.usage;
      }
      const what = group.length ? `${found.words[0]} ${found.words[1]}` : found.words[0];
      throw new UsageError(`unknown command '${what}'`);
    }
    if (values.help) {
      write(io.stdout, commandHelp(command));
      return 0;
    }

    const format = (values.output as string | undefined) ?? 'table';
    if (!FORMATS.includes(format as OutputFormat)) throw new UsageError(`--output must be table, json or yaml`);
    checkPositionals(command, parsed.positionals);
    checkRequired(command.options ?? {}, values);

    const store = new ConfigStore(io.env, (text) => write(io.stderr, text));
    let settings: Resolved | undefined;
    let api: Api | undefined;
    const ctx: Context = {
      format: format as OutputFormat,
      tty: Boolean(io.stdout.isTTY),
      color: Boolean(io.stdout.isTTY) && !io.env.NO_COLOR && !values['no-color'],
      out: (text) => write(io.stdout, text),
      err: (text) => write(io.stderr, text),
      signal: io.signal,
      cwd: io.cwd,
      stdin: io.stdin,
      store,
      settings: () => {
        settings ??= resolveSettings(
          { profile: values.profile as string | undefined, apiUrl: values['api-url'] as string | undefined },
          io.env,
          store,
        );
        return settings;
      },
      api: () => {
        if (api) return api;
        const { token, profile, apiUrl } = ctx.settings();
        if (!token) {
          throw new CliError(
            `no token for profile ${profile}: run 'slb login --profile ${profile}' or set SLB_TOKEN`,
            EXIT.auth,
          );
        }
        api = new Api(apiUrl, token);
        return api;
      },
    };
    return (await command.run(ctx, parsed)) ?? 0;
  } catch (err) {
    const message = (err instanceof Error ? err.message : String(err)).replace(/\s*\n\s*/g, ' ');
    write(io.stderr, `error: ${message}`);
    if (err instanceof UsageError) {
      write(io.stderr, `see: ${helpFor}`);
      return EXIT.usage;
    }
    const code = (err as { exitCode?: unknown }).exitCode;
    return typeof code === 'number' ? code : EXIT.failure;
  }
}
