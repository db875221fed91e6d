import { execFileSync, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { COMMANDS } from '../src/commands/index.js';
import { runCli, tempHome } from './harness.js';

const topLevel = [...new Set(COMMANDS.map((c) => c.name[0]!))];

/** Runs `work` over `items`, `limit` at a time (two cores are shared). */
async function pool<T>(items: T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  const queue = [...items];
  await Promise.all(
    Array.from({ length: limit }, async () => {
      for (let item = queue.shift(); item !== undefined; item = queue.shift()) await work(item);
    }),
  );
}

describe('help', () => {
  it('every command in the registry has usage, options and at least one example in its --help', async () => {
    expect(COMMANDS.length).toBeGreaterThan(50);
    await pool(COMMANDS, 3, async (command) => {
      const name = command.name.join(' ');
      expect(command.examples.length, name).toBeGreaterThan(0);
      const help = await runCli([...command.name, '--help']);
      expect(help.code, name).toBe(0);
      expect(help.stdout, name).toContain(`Usage: ${command.usage}`);
      expect(help.stdout, name).toMatch(/\nExamples:\n {2}\S/);
      for (const example of command.examples) expect(help.stdout, name).toContain(`  ${example}`);
      for (const option of Object.keys(command.options ?? {})) expect(help.stdout, name).toContain(`--${option}`);
    });
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
