import { describe, expect, it } from 'vitest';
import { ApplyLog, LISTENER_LINES_PER_APPLY } from './apply-log.js';

function collecting() {
  const lines: { level: string; msg: string; obj: object }[] = [];
  return {
    lines,
    logger: {
      info: (obj: object, msg: string) => lines.push({ level: 'info', msg, obj }),
      debug: (obj: object, msg: string) => lines.push({ level: 'debug', msg, obj }),
    },
  };
}

describe('ApplyLog', () => {
  it('logs each listener at info when an apply touches a few', () => {
    const { lines, logger } = collecting();
    const log = new ApplyLog(logger, LISTENER_LINES_PER_APPLY);
    log.listener({ listener: 'a' }, 'listener started');
    log.listener({ listener: 'b' }, 'listener removed');
    log.summary(7);
    expect(lines).toEqual([
      { level: 'info', msg: 'listener started', obj: { listener: 'a' } },
      { level: 'info', msg: 'listener removed', obj: { listener: 'b' } },
    ]);
  });

  it('logs them at debug past the limit, and one info line counting each kind', () => {
    const { lines, logger } = collecting();
    const log = new ApplyLog(logger, 10_000);
    for (let i = 0; i < 3; i++) log.listener({ listener: `l${i}` }, 'listener started');
    log.listener({ listener: 'x' }, 'listener removed');
    log.summary(9);
    expect(lines.filter((l) => l.level === 'info')).toEqual([
      {
        level: 'info',
        msg: 'listener changes (each at debug)',
        obj: { version: 9, listeners: { 'listener started': 3, 'listener removed': 1 } },
      },
    ]);
    expect(lines.filter((l) => l.level === 'debug')).toHaveLength(4);
  });
});
