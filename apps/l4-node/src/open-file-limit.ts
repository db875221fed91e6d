import { readFileSync } from 'node:fs';

/**
 * The process's soft limit on open files (Node raises it to the hard limit at start), from
 * /proc/self/limits; undefined where that is missing (not Linux) or says "unlimited".
 */
export function openFileLimit(path = '/proc/self/limits'): number | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
  const m = /^Max open files\s+(\d+)\s/m.exec(text);
  return m ? Number(m[1]) : undefined;
}
