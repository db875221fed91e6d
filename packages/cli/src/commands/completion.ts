import type { Command, OptionSpec } from '../command.js';
import { UsageError } from '../errors.js';
import { GLOBAL_OPTIONS, GROUP_SUMMARIES } from '../globals.js';
import { groups } from '../help.js';

const flags = (options: Record<string, OptionSpec> = {}) =>
  Object.entries({ ...options, ...GLOBAL_OPTIONS }).flatMap(([name, o]) => [
    `--${name}`,
    ...(o.short ? [`-${o.short}`] : []),
  ]);

/** Candidates per position: `group/` → subcommands, `group/sub` or `single/*` → options, `/` → commands. */
function cases(commands: Command[]): { pattern: string; words: string[] }[] {
  const out: { pattern: string; words: string[] }[] = [];
  for (const [name, cmds] of groups(commands)) {
    for (const c of cmds) {
      if (c.name.length === 1) out.push({ pattern: `${name}/*`, words: flags(c.options) });
      else out.push({ pattern: `${c.name[0]}/${c.name[1]}`, words: flags(c.options) });
    }
    const subs = cmds.filter((c) => c.name.length > 1).map((c) => c.name[1]!);
    if (subs.length) out.push({ pattern: `${name}/`, words: subs });
  }
  out.push({ pattern: '/', words: [...groups(commands).keys(), ...flags()] });
  // Exact names before the wildcards of one-word commands.
  return out.sort((a, b) => Number(a.pattern.endsWith('*')) - Number(b.pattern.endsWith('*')));
}

const quote = (s: string) => `'${s.replaceAll("'", "'\\''")}'`;

function bash(commands: Command[]): string {
  return `# bash completion for slb: source it, or save it as /etc/bash_completion.d/slb
_slb() {
  local cur=\${COMP_WORDS[COMP_CWORD]} prev=\${COMP_WORDS[COMP_CWORD-1]} w1= w2= w i words=
  case $prev in
    -o|--output) COMPREPLY=($(compgen -W 'table json yaml' -- "$cur")); return ;;
    --body|--token-file|--cert-file|--key-file) COMPREPLY=($(compgen -f -- "$cur")); return ;;
  esac
  for ((i = 1; i < COMP_CWORD; i++)); do
    w=\${COMP_WORDS[i]}
    [[ $w == -* ]] && continue
    if [[ -z $w1 ]]; then w1=$w; elif [[ -z $w2 ]]; then w2=$w; fi
  done
  case "$w1/$w2" in
${cases(commands)
  .map(({ pattern, words }) => `    ${pattern.replace(/[^*/]+/g, (m) => quote(m))}) words=${quote(words.join(' '))} ;;`)
  .join('\n')}
  esac
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -F _slb slb
`;
}

function zsh(commands: Command[]): string {
  const described = (words: string[], summaries: Record<string, string>) =>
    words.map((w) => quote(`${w.replaceAll(':', '\\:')}${summaries[w] ? `:${summaries[w]}` : ''}`)).join(' ');
  const summaries: Record<string, string> = { ...GROUP_SUMMARIES };
  for (const c of commands) {
    if (c.name.length === 1) summaries[c.name[0]!] = c.summary;
    else summaries[c.name[1]!] ??= c.summary;
  }
  return `#compdef slb
# zsh completion for slb: save it as _slb in a directory of $fpath, or source it after compinit
_slb() {
  local w1= w2= w i
  local -a cands
  case \${words[CURRENT-1]} in
    -o|--output) compadd table json yaml; return ;;
    --body|--token-file|--cert-file|--key-file) _files; return ;;
  esac
  for ((i = 2; i < CURRENT; i++)); do
    w=\${words[i]}
    [[ $w == -* ]] && continue
    if [[ -z $w1 ]]; then w1=$w; elif [[ -z $w2 ]]; then w2=$w; fi
  done
  case "$w1/$w2" in
${cases(commands)
  .map(
    ({ pattern, words }) =>
      `    ${pattern.replace(/[^*/]+/g, (m) => quote(m))}) cands=(${described(words, summaries)}) ;;`,
  )
  .join('\n')}
  esac
  _describe 'slb' cands
}
compdef _slb slb
`;
}

/** `slb completion bash|zsh`; given the registry lazily, so it sees every command added to it. */
export function completionCommand(registry: () => Command[]): Command {
  return {
    name: ['completion'],
    summary: 'print a shell completion script (bash or zsh)',
    usage: 'slb completion bash|zsh',
    examples: ['source <(slb completion bash)', 'slb completion zsh > ~/.zsh/completions/_slb'],
    positionals: ['SHELL'],
    arguments: { SHELL: 'bash or zsh' },
    run: async (ctx, args) => {
      const shell = args.positionals[0];
      if (shell === 'bash') ctx.out(bash(registry()));
      else if (shell === 'zsh') ctx.out(zsh(registry()));
      else throw new UsageError(`unknown shell '${shell ?? ''}': bash or zsh`);
      return 0;
    },
  };
}
