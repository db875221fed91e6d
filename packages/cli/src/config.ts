import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { UsageError } from './errors.js';

export const DEFAULT_API_URL = 'http://127.0.0.1:8080';
export const DEFAULT_PROFILE = 'default';

/** `config.json`: what is not secret, per profile. */
export interface ConfigFile {
  profiles: Record<string, { apiUrl?: string }>;
}
/** `credentials.json`: the tokens, per profile; 0600 in a 0700 directory. */
export interface CredentialsFile {
  profiles: Record<string, { token?: string }>;
}

export type Env = Record<string, string | undefined>;

/** `$XDG_CONFIG_HOME/slb`, else `~/.config/slb`. */
export function configDir(env: Env): string {
  const xdg = env.XDG_CONFIG_HOME;
  const base = xdg?.startsWith('/') ? xdg : join(env.HOME || homedir(), '.config');
  return join(base, 'slb');
}

/**
 * Looser modes than 0700 (directory) and 0600 (files) are repaired, with a warning: another local user must
 * not read the tokens, and failing would lock the owner out of their own configuration.
 */
function ensureMode(path: string, mode: number, warn: (text: string) => void): void {
  if (!existsSync(path)) return;
  const actual = statSync(path).mode & 0o777;
  if ((actual & ~mode) === 0) return;
  chmodSync(path, mode);
  warn(`warning: ${path} had mode ${actual.toString(8).padStart(4, '0')}, now ${mode.toString(8).padStart(4, '0')}`);
}

function readJson<T>(path: string, empty: T): T {
  if (!existsSync(path)) return empty;
  try {
    const parsed = JSON.parse(readFileSync(path, 'utf8')) as unknown;
    if (parsed && typeof parsed === 'object' && typeof (parsed as { profiles?: unknown }).profiles === 'object') {
      return parsed as T;
    }
  } catch {
    // fall through: never echo the content, it may hold a token
  }
  throw new UsageError(`${path} is not valid slb configuration (expected {"profiles": {…}}); fix or remove it`);
}

/** The two configuration files of one user, read and written with safe modes. */
export class ConfigStore {
  readonly dir: string;
  constructor(
    env: Env,
    private readonly warn: (text: string) => void,
  ) {
    this.dir = configDir(env);
  }

  get configPath(): string {
    return join(this.dir, 'config.json');
  }
  get credentialsPath(): string {
    return join(this.dir, 'credentials.json');
  }

  readConfig(): ConfigFile {
    ensureMode(this.dir, 0o700, this.warn);
    ensureMode(this.configPath, 0o600, this.warn);
    return readJson<ConfigFile>(this.configPath, { profiles: {} });
  }

  readCredentials(): CredentialsFile {
    ensureMode(this.dir, 0o700, this.warn);
    ensureMode(this.credentialsPath, 0o600, this.warn);
    return readJson<CredentialsFile>(this.credentialsPath, { profiles: {} });
  }

  writeConfig(config: ConfigFile): void {
    this.write(this.configPath, config);
  }
  writeCredentials(credentials: CredentialsFile): void {
    this.write(this.credentialsPath, credentials);
  }

  /** Written to a 0600 temporary file and renamed over, so a crash never leaves half a file. */
  private write(path: string, value: unknown): void {
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    ensureMode(this.dir, 0o700, this.warn);
    const tmp = `${path}.${process.pid}.tmp`;
    writeFileSync(tmp, `${JSON.stringify(value, null, 2)}\n`, { mode: 0o600 });
    chmodSync(tmp, 0o600);
    renameSync(tmp, path);
  }
}

export interface Resolved {
  profile: string;
  apiUrl: string;
  token: string | undefined;
  /** Where the token came from, for messages (never the token itself). */
  tokenSource: string;
}

/** Flags over environment over the named profile over defaults. */
export function resolveSettings(flags: { profile?: string; apiUrl?: string }, env: Env, store: ConfigStore): Resolved {
  const profile = flags.profile || env.SLB_PROFILE || DEFAULT_PROFILE;
  const config = store.readConfig();
  const apiUrl = flags.apiUrl || env.SLB_API_URL || config.profiles[profile]?.apiUrl || DEFAULT_API_URL;
  if (env.SLB_TOKEN) return { profile, apiUrl, token: env.SLB_TOKEN, tokenSource: 'SLB_TOKEN' };
  const token = store.readCredentials().profiles[profile]?.token;
  return { profile, apiUrl, token, tokenSource: `profile ${profile}` };
}
