import { useState } from 'preact/hooks';
import { messageOf } from '../../api.js';

/**
 * Runs one change the user asked for (start, stop, delete) and says how it went in the page's notice; the page
 * is read again after a success so the tables show the change without waiting for the next poll.
 */
export type Act = (what: string, run: () => Promise<unknown>) => Promise<void>;

export function useAct(refresh: () => Promise<void>): { notice: string; act: Act } {
  const [notice, setNotice] = useState('');
  const act: Act = async (what, run) => {
    try {
      await run();
      setNotice(what);
      await refresh();
    } catch (err) {
      setNotice(`${what} failed: ${messageOf(err)}`);
    }
  };
  return { notice, act };
}
