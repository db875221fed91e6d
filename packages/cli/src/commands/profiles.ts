import { Api } from '../api.js';
import type { Command, Context } from '../command.js';
import { UsageError } from '../errors.js';
import { printList } from '../output.js';
import { readArgFile, str } from './shared.js';

/** Reads one line from a terminal without echoing it. */
function readHidden(ctx: Context, prompt: string): Promise<string> {
  const stdin = ctx.stdin;
  ctx.err(prompt);
  return new Promise((resolve, reject) => {
    let value = '';
    stdin.setRawMode?.(true);
    stdin.resume();
    const onData = (chunk: Buffer | string) => {
      for (const ch of chunk.toString()) {
        if (ch === '\r' || ch === '\n') return done(() => resolve(value));
        if (ch === '\u0003' || ch === '\u0004') return done(() => reject(new UsageError('cancelled')));
        if (ch === '\u007f' || ch === '\b') value = value.slice(0, -1);
        else value += ch;
      }
    };
    const done = (finish: () => void) => {
      stdin.off('data', onData);
      stdin.setRawMode?.(false);
      stdin.pause();
      ctx.err('');
      finish();
    };
    stdin.on('data', onData);
  });
}

/** The first line of a pipe. */
async function readFirstLine(stdin: NodeJS.ReadableStream): Promise<string> {
  let text = '';
  for await (const chunk of stdin) {
    text += chunk.toString();
    if (text.includes('\n')) break;
  }
  return text.split(/\r?\n/)[0] ?? '';
}

const login: Command = {
  name: ['login'],
  summary: 'check a token against the API and save it in a profile',
  usage: 'slb login [--profile NAME] [--api-url URL] [--token-file FILE]',
  examples: [
    'slb login --api-url http://127.0.0.1:8080          # prompts for the token',
    'cat token.txt | slb login --profile prod --api-url https://slb.example.com',
    'slb login --profile staging --token-file ~/.slb-staging-token',
  ],
  options: {
    'token-file': { type: 'string', valueName: 'FILE', description: 'read the token from a file (else stdin)' },
  },
  run: async (ctx, args) => {
    const { profile, apiUrl } = ctx.settings();
    const file = str(args, 'token-file');
    const raw = file
      ? (readArgFile(ctx, file, 'token file').split(/\r?\n/)[0] ?? '')
      : ctx.stdin.isTTY
        ? await readHidden(ctx, `token for profile ${profile} (${apiUrl}): `)
        : await readFirstLine(ctx.stdin);
    const token = raw.trim();
    if (!token) throw new UsageError('no token given (pipe it in, type it at the prompt, or use --token-file)');
    // A token that does not work is not saved: a 401 ends here with exit 6.
    await new Api(apiUrl, token).get('/v1/load-balancers', { limit: 1 });
    const config = ctx.store.readConfig();
    config.profiles[profile] = { ...config.profiles[profile], apiUrl };
    ctx.store.writeConfig(config);
    const credentials = ctx.store.readCredentials();
    credentials.profiles[profile] = { token };
    ctx.store.writeCredentials(credentials);
    ctx.err(`logged in: profile ${profile} uses ${apiUrl} (token saved in ${ctx.store.credentialsPath})`);
    return 0;
  },
};

const logout: Command = {
  name: ['logout'],
  summary: "forget a profile's token",
  usage: 'slb logout [--profile NAME]',
  examples: ['slb logout', 'slb logout --profile prod'],
  run: async (ctx) => {
    const { profile } = ctx.settings();
    const credentials = ctx.store.readCredentials();
    if (!credentials.profiles[profile]?.token) {
      ctx.err(`profile ${profile} has no token`);
      return 0;
    }
    delete credentials.profiles[profile];
    ctx.store.writeCredentials(credentials);
    ctx.err(`logged out: the token of profile ${profile} is removed`);
    return 0;
  },
};

const profileList: Command = {
  name: ['profile', 'list'],
  summary: 'list the configured profiles (never their tokens)',
  usage: 'slb profile list',
  examples: ['slb profile list', 'slb profile list -o json'],
  run: async (ctx) => {
    const { profile: current } = ctx.settings();
    const config = ctx.store.readConfig();
    const credentials = ctx.store.readCredentials();
    const names = [...new Set([...Object.keys(config.profiles), ...Object.keys(credentials.profiles)])].sort();
    const items = names.map((name) => ({
      name,
      current: name === current,
      apiUrl: config.profiles[name]?.apiUrl ?? null,
      hasToken: Boolean(credentials.profiles[name]?.token),
    }));
    await printList(ctx, items, [
      { header: ' ', value: (p) => (p.current ? '*' : '') },
      { header: 'NAME', value: 'name' },
      { header: 'API URL', value: 'apiUrl' },
      { header: 'TOKEN', value: (p) => (p.hasToken ? 'yes' : 'no') },
    ]);
    return 0;
  },
};

export const profileCommands: Command[] = [login, logout, profileList];
