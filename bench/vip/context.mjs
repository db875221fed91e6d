import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const MAIN = join(ROOT, 'apps/l4-node/dist/main.js');
export const KILLS = Number(process.env.KILLS ?? 20);
export const ONLY = process.env.ONLY;
export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
export const work = mkdtempSync(join(tmpdir(), 'bench-vip-'));
export const children = new Set();
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
export const pad = (n, w = 20) => String(n).padStart(w, '0');
