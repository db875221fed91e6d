// The browser side of the console's tests: which Chromium to drive, axe-core audits and screenshots.
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { expect } from 'vitest';

export const ARTIFACTS = fileURLToPath(new URL('../test-artifacts/', import.meta.url));

export const report = (line: string) => console.log(`[console] ${line}`);

/** SLB_CHROMIUM names the browser (and only it is tried); else Debian's, then the usual other names. */
export function findChromium(): string | null {
  const candidates = process.env.SLB_CHROMIUM
    ? [process.env.SLB_CHROMIUM]
    : ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'];
  return candidates.find((p) => existsSync(p)) ?? null;
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** axe-core on the page as it is: no serious or critical violation. */
export async function audit(page: Page, name: string) {
  await page.evaluate(axeSource);
  const violations = (await page.evaluate(async () => {
    const axe = (globalThis as any).axe;
    const result = await axe.run(document, { resultTypes: ['violations'] });
    return result.violations.map((v: any) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      nodes: v.nodes.slice(0, 3).map((n: any) => n.target.join(' ')),
    }));
  })) as { id: string; impact: string; help: string; nodes: string[] }[];
  const bad = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  report(
    `axe ${name}: ${violations.length} violations, ${bad.length} serious or critical${
      violations.length ? ` (${violations.map((v) => `${v.id}:${v.impact}`).join(', ')})` : ''
    }`,
  );
  expect(bad, `${name}: ${JSON.stringify(bad, null, 2)}`).toEqual([]);
}

export async function shot(page: Page, name: string) {
  await page.screenshot({ path: `${ARTIFACTS}${name}.png`, fullPage: true });
}
