import type { Api } from './api.js';
import type { ConfigStore, Resolved } from './config.js';

export type OutputFormat = 'table' | 'json' | 'yaml';

/** What a command gets to work with; built once per invocation by main. */
export interface Context {
  /** The API from the selected profile or SLB_API_URL/SLB_TOKEN; created on first use, so help needs none. */
  api(): Api;
  format: OutputFormat;
  /** stdout is a terminal: --watch redraws in place there. */
  tty: boolean;
  /** ANSI colours: only on a terminal, never with NO_COLOR or --no-color. */
  color: boolean;
  /** Writes to stdout (a newline is added when missing). */
  out(text: string): void;
  /** Writes to stderr (a newline is added when missing). */
  err(text: string): void;
  /** Aborted on SIGINT/SIGTERM: long-running commands (--watch) end cleanly on it. */
  signal: AbortSignal;
  /** The working directory files on the command line are relative to. */
  cwd: string;
  /** Read by `slb login` (a token piped in, or typed without echo on a terminal). */
  stdin: NodeJS.ReadableStream & { isTTY?: boolean; setRawMode?: (raw: boolean) => unknown };
  /** The user's config.json and credentials.json. */
  store: ConfigStore;
  /** Profile, API URL and token after flags > environment > profile > defaults (the token is never printed). */
  settings(): Resolved;
}

export interface OptionSpec {
  type: 'string' | 'boolean';
  short?: string;
  multiple?: boolean;
  required?: boolean;
  /** Shown in --help; the value's name after the option, e.g. `--file FILE`. */
  valueName?: string;
  description: string;
}

export interface ParsedArgs {
  values: Record<string, string | boolean | string[] | undefined>;
  positionals: string[];
}

/** One command: `slb <name…> [positionals] [options]`. */
export interface Command {
  /** e.g. ['lb', 'list'] or ['apply'] */
  name: string[];
  summary: string;
  /** e.g. 'slb lb get LB' */
  usage: string;
  /** at least one runnable example, shown by --help */
  examples: string[];
  options?: Record<string, OptionSpec>;
  /** Names of positional arguments, in order; a trailing '?' marks an optional one. */
  positionals?: string[];
  /** What each positional is, for --help (by name, without the '?'). */
  arguments?: Record<string, string>;
  /** Resolves to the exit code (0 when omitted). Throws UsageError / ApiProblemError / ConnectionError. */
  run(ctx: Context, args: ParsedArgs): Promise<number | undefined>;
}
