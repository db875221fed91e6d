import { execFileSync, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { COMMANDS } from '../src/commands/index.js';
import { type Io, main } from '../src/main.js';
import { runCli, tempHome } from './harness.js';

const topLevel = [...new Set(COMMANDS.map((c) => c.name[0]!))];

/** `slb <name> --help` run in this process: its exit code and what it wrote to stdout. */
async function helpOf(name: string[]): Promise<{ code: number; stdout: string }> {
  let stdout = '';
  const io: Io = {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: () => true },
    stdin: process.stdin,
    env: {},
    cwd: process.cwd(),
    signal: new AbortController().signal,
  };
  const code = await main([...name, '--help'], io);
  return { code, stdout };
}

describe('help', () => {
  it('every command in the registry has usage, options and at least one example in its --help', async () => {
    expect(COMMANDS.length).toBeGreaterThan(50);
    // In-process for all of them (one process each took 30 s on a busy two-core machine); the built binary
    // prints the same text, checked for a few commands below and by the other tests here.
    for (const command of COMMANDS) {
      const name = command.name.join(' ');
      expect(command.examples.length, name).toBeGreaterThan(0);
      const help = await helpOf(command.name);
      expect(help.code, name).toBe(0);
      expect(help.stdout, name).toContain(`Usage: ${command.usage}`);
      expect(help.stdout, name).toMatch(/\nExamples:\n {2}\S/);
      for (const example of command.examples) expect(help.stdout, name).toContain(`  ${example}`);
      for (const option of Object.keys(command.options ?? {})) expect(help.stdout, name).toContain(`--${option}`);
    }
  });

  it('the binary prints the same --help as the registry, for the first, a middle and the last command', async () => {
    const sample = [COMMANDS[0]!, COMMANDS[Math.floor(COMMANDS.length / 2)]!, COMMANDS[COMMANDS.length - 1]!];
    for (const command of sample) {
      const [binary, inProcess] = await Promise.all([runCli([...command.name, '--help']), helpOf(command.name)]);
      expect(binary.code, command.name.join(' ')).toBe(0);
      expect(binary.stdout, command.name.join(' ')).toBe(inProcess.stdout);
    }
  });

  it('slb --help lists every command group, the global options and the exit codes; bare slb is a usage error', async () => {
    const help = await runCli(['--help']);
    expect(help.code).toBe(0);
    for (const name of topLevel) expect(help.stdout).toMatch(new RegExp(`^ {2}${name}\\s`, 'm'));
    expect(help.stdout).toMatch(/--profile NAME/);
    expect(help.stdout).toMatch(/^ {2}7 {2}server/m);
    const bare = await runCli([]);
    expect(bare.code).toBe(2);
    expect(bare.stderr).toContain('Usage: slb');
  });

  it('a group alone shows its commands; --version prints the version', async () => {
    const group = await runCli(['listener', '--help']);
    expect(group.code).toBe(0);
    for (const sub of ['list', 'get', 'create', 'update', 'delete', 'start', 'stop']) {
      expect(group.stdout).toContain(`slb listener ${sub}`);
    }
    expect((await runCli(['listener'])).code).toBe(2);
    const version = await runCli(['--version']);
    expect(version).toMatchObject({ code: 0, stdout: '0.1.0\n' });
  });
});

describe('completion', () => {
  it('bash: passes bash -n, names every top-level command, and completes', async () => {
    const result = await runCli(['completion', 'bash']);
    expect(result.code).toBe(0);
    const file = join(tempHome(), 'slb.bash');
    writeFileSync(file, result.stdout);
    expect(spawnSync('bash', ['-n', file]).status).toBe(0);
    for (const name of topLevel) expect(result.stdout).toContain(name);
    const complete = (...words: string[]) =>
      execFileSync(
        'bash',
        [
          '-c',
          `source ${file}; COMP_WORDS=(slb ${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length}; _slb; echo "\${COMPREPLY[*]}"`,
        ],
        { encoding: 'utf8' },
      ).trim();
    expect(complete('li')).toBe('listener');
    expect(complete('lb', '').split(' ')).toEqual(['list', 'get', 'create', 'update', 'delete']);
    expect(complete('listener', 'create', '--sc')).toBe('--scheduler');
    expect(complete('health', 'web', '--w')).toBe('--watch');
    expect(complete('lb', 'list', '-o', '').split(' ')).toEqual(['table', 'json', 'yaml']);
  });

  it('zsh: a compdef script naming every top-level command (zsh -n where zsh is installed)', async () => {
    const result = await runCli(['completion', 'zsh']);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^#compdef slb\n/);
    for (const name of topLevel) expect(result.stdout).toContain(`'${name}:`);
    const file = join(tempHome(), '_slb');
    writeFileSync(file, result.stdout);
    const zsh = spawnSync('zsh', ['-n', file]);
    if (!zsh.error) expect(zsh.status).toBe(0);
  });

  it('an unknown shell is a usage error', async () => {
    const result = await runCli(['completion', 'fish']);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^error: unknown shell 'fish': bash or zsh\nsee: slb completion --help\n$/);
  });
});
