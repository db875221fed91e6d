import { useEffect, useState } from 'preact/hooks';

/** The page is in the hash (`#/lbs/lb-1`): the API serves one index.html, and no token ever goes in a URL. */
export function useRoute(): string[] {
  const read = () => location.hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
  const [parts, setParts] = useState(read);
  useEffect(() => {
    const onChange = () => setParts(read());
    addEventListener('hashchange', onChange);
    return () => removeEventListener('hashchange', onChange);
  }, []);
  return parts;
}

export const href = (...parts: string[]): string => `#/${parts.map(encodeURIComponent).join('/')}`;

export function go(...parts: string[]): void {
  location.hash = href(...parts);
}

/** Calls `tick` now and every `ms` while the tab is visible (and once more when it becomes visible). */
export function usePoll(tick: () => void | Promise<void>, ms: number, deps: unknown[]): void {
  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const run = async () => {
      if (stopped) return;
      if (document.visibilityState === 'visible') await Promise.resolve(tick()).catch(() => {});
      if (!stopped) timer = setTimeout(run, ms);
    };
    const onVisible = () => {
      if (document.visibilityState !== 'visible') return;
      clearTimeout(timer);
      void run();
    };
    void run();
    document.addEventListener('visibilitychange', onVisible);
    return () => {
      stopped = true;
      clearTimeout(timer);
      document.removeEventListener('visibilitychange', onVisible);
    };
  }, deps);
}
