import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { CheckOutcome, HealthState, HealthThresholds, HealthTransition } from './state.js';
import { initialHealthState, parseHealthState, recordResult } from './state.js';

const T0 = 1_700_000_000_000;
const defaults: HealthThresholds = { healthyThreshold: 3, unhealthyThreshold: 3 };
const ok: CheckOutcome = { ok: true };
const fail = (error = 'ECONNREFUSED'): CheckOutcome => ({ ok: false, error });

/** Feeds outcomes one interval apart; returns every intermediate state and transition. */
function run(
  outcomes: readonly CheckOutcome[],
  thresholds: HealthThresholds = defaults,
  start: HealthState = initialHealthState(T0),
): { states: HealthState[]; transitions: Array<HealthTransition | null> } {
  const states: HealthState[] = [];
  const transitions: Array<HealthTransition | null> = [];
  let state = start;
  outcomes.forEach((outcome, i) => {
    const step = recordResult(state, outcome, T0 + (i + 1) * 2000, thresholds);
    state = step.state;
    states.push(state);
    transitions.push(step.transition);
  });
  return { states, transitions };
}

const normalState = (): HealthState => run([ok, ok, ok]).states[2] as HealthState;

const thresholdsArb = fc.record({
  healthyThreshold: fc.integer({ min: 2, max: 10 }),
  unhealthyThreshold: fc.integer({ min: 2, max: 10 }),
});
const outcomeArb: fc.Arbitrary<CheckOutcome> = fc.oneof(
  fc.constant(ok),
  fc.constantFrom('ECONNREFUSED', 'timeout after 5000ms', 'status 503 not in http_2xx,http_3xx').map(fail),
);
const outcomesArb = fc.array(outcomeArb, { maxLength: 60 });

describe('initial state', () => {
  it('starts abnormal, unchecked, since its creation', () => {
    expect(initialHealthState(T0)).toEqual({
      status: 'abnormal',
      since: T0,
      consecutiveSuccesses: 0,
      consecutiveFailures: 0,
      lastError: null,
      lastCheckedAt: null,
    });
  });

  it('turns normal on exactly the healthyThreshold-th success', () => {
    const { states, transitions } = run([ok, ok, ok, ok]);
    expect(states.map((s) => s.status)).toEqual(['abnormal', 'abnormal', 'normal', 'normal']);
    expect(transitions[2]).toEqual({ from: 'abnormal', to: 'normal', at: T0 + 6000, lastError: null });
    expect(transitions.filter(Boolean)).toHaveLength(1);
    expect(states[3]?.since).toBe(T0 + 6000);
  });

  it('stays abnormal through failures, counting them and keeping the last error', () => {
    const { states, transitions } = run([fail('ECONNREFUSED'), fail('timeout after 5000ms')]);
    expect(transitions).toEqual([null, null]);
    expect(states[1]).toEqual({
      status: 'abnormal',
      since: T0,
      consecutiveSuccesses: 0,
      consecutiveFailures: 2,
      lastError: 'timeout after 5000ms',
      lastCheckedAt: T0 + 4000,
    });
  });
});

describe('transitions', () => {
  it('turns abnormal on exactly the unhealthyThreshold-th failure, carrying that error', () => {
    const { states, transitions } = run([fail('a'), fail('b'), fail('c'), fail('d')], defaults, normalState());
    expect(states.map((s) => s.status)).toEqual(['normal', 'normal', 'abnormal', 'abnormal']);
    expect(transitions[2]).toEqual({ from: 'normal', to: 'abnormal', at: T0 + 6000, lastError: 'c' });
    expect(states[3]).toMatchObject({ since: T0 + 6000, lastError: 'd', consecutiveFailures: 4 });
  });

  it('a success resets the failure run, and a failure the success run', () => {
    const { transitions, states } = run([fail(), fail(), ok, fail(), fail(), ok], defaults, normalState());
    expect(transitions.every((t) => t === null)).toBe(true);
    expect(states.at(-1)).toMatchObject({ status: 'normal', consecutiveSuccesses: 1, consecutiveFailures: 0 });
  });

  it('keeps a sub-threshold failure as lastError on a normal server and clears it on recovery', () => {
    const blip = run([fail('timeout after 5000ms'), ok], defaults, normalState()).states;
    expect(blip[1]).toMatchObject({ status: 'normal', lastError: 'timeout after 5000ms' });
    const recovered = run(
      [ok, ok, ok],
      defaults,
      run([fail('x'), fail('y'), fail('z')], defaults, normalState()).states[2],
    );
    expect(recovered.transitions[2]).toMatchObject({ to: 'normal', lastError: 'z' });
    expect(recovered.states[2]?.lastError).toBeNull();
  });

  it('applies a lowered threshold on the next result', () => {
    const [afterTwo] = run([ok, ok], { healthyThreshold: 5, unhealthyThreshold: 3 }).states.slice(-1);
    const step = recordResult(afterTwo as HealthState, ok, T0 + 10_000, { healthyThreshold: 2, unhealthyThreshold: 3 });
    expect(step.transition).toMatchObject({ from: 'abnormal', to: 'normal' });
  });

  it('does not mutate the state it is given', () => {
    const state = Object.freeze(initialHealthState(T0));
    expect(() => recordResult(state, ok, T0 + 1, defaults)).not.toThrow();
    expect(() => recordResult(state, fail(), T0 + 1, defaults)).not.toThrow();
    expect(state).toEqual(initialHealthState(T0));
  });
});

describe('properties', () => {
  it('a transition happens exactly when a run of identical results reaches the threshold', () => {
    fc.assert(
      fc.property(thresholdsArb, outcomesArb, (thresholds, outcomes) => {
        const { states, transitions } = run(outcomes, thresholds);
        // Reference model: the status flips when the current run of opposite results hits its threshold.
        let status: 'normal' | 'abnormal' = 'abnormal';
        let streak = 0;
        let lastOk: boolean | null = null;
        outcomes.forEach((outcome, i) => {
          streak = outcome.ok === lastOk ? streak + 1 : 1;
          lastOk = outcome.ok;
          const target = outcome.ok ? 'normal' : 'abnormal';
          const threshold = outcome.ok ? thresholds.healthyThreshold : thresholds.unhealthyThreshold;
          const flips = status !== target && streak >= threshold;
          if (flips) status = target;
          expect(transitions[i] !== null).toBe(flips);
          expect(states[i]?.status).toBe(status);
          expect(outcome.ok ? states[i]?.consecutiveSuccesses : states[i]?.consecutiveFailures).toBe(streak);
          expect(outcome.ok ? states[i]?.consecutiveFailures : states[i]?.consecutiveSuccesses).toBe(0);
        });
      }),
    );
  });

  it('no transition without the threshold count of consecutive identical results before it', () => {
    fc.assert(
      fc.property(thresholdsArb, outcomesArb, (thresholds, outcomes) => {
        const { transitions } = run(outcomes, thresholds);
        transitions.forEach((transition, i) => {
          if (transition === null) return;
          const wantOk = transition.to === 'normal';
          const threshold = wantOk ? thresholds.healthyThreshold : thresholds.unhealthyThreshold;
          expect(i + 1).toBeGreaterThanOrEqual(threshold);
          expect(outcomes.slice(i + 1 - threshold, i + 1).every((o) => o.ok === wantOk)).toBe(true);
          expect(transition.from).not.toBe(transition.to);
        });
      }),
    );
  });

  it('a flapping (alternating) backend never transitions, from either status', () => {
    fc.assert(
      fc.property(
        thresholdsArb,
        fc.boolean(),
        fc.boolean(),
        fc.integer({ min: 0, max: 100 }),
        (thresholds, startNormal, firstOk, length) => {
          const outcomes = Array.from({ length }, (_, i) => ((i % 2 === 0) === firstOk ? ok : fail()));
          const start = startNormal ? normalState() : initialHealthState(T0);
          const { states, transitions } = run(outcomes, thresholds, start);
          expect(transitions.every((t) => t === null)).toBe(true);
          expect(states.every((s) => s.status === start.status && s.since === start.since)).toBe(true);
        },
      ),
    );
  });

  it('since is the time of the last transition; lastError is the latest failure since the server was last normal', () => {
    fc.assert(
      fc.property(thresholdsArb, outcomesArb, (thresholds, outcomes) => {
        const { states, transitions } = run(outcomes, thresholds);
        let since = T0;
        let lastError: string | null = null;
        states.forEach((state, i) => {
          since = transitions[i]?.at ?? since;
          const outcome = outcomes[i] as CheckOutcome;
          if (!outcome.ok) lastError = outcome.error ?? null;
          if (transitions[i]?.to === 'normal') lastError = null;
          expect(state.since).toBe(since);
          expect(state.lastCheckedAt).toBe(T0 + (i + 1) * 2000);
          expect(state.lastError).toBe(lastError);
          if (transitions[i]?.to === 'abnormal') expect(transitions[i]?.lastError).toBe(outcome.error);
        });
      }),
    );
  });

  it('every reachable state survives a JSON round trip through parseHealthState', () => {
    fc.assert(
      fc.property(thresholdsArb, outcomesArb, (thresholds, outcomes) => {
        for (const state of [initialHealthState(T0), ...run(outcomes, thresholds).states]) {
          expect(parseHealthState(JSON.parse(JSON.stringify(state)))).toEqual(state);
        }
      }),
    );
  });
});

describe('parseHealthState', () => {
  const valid = initialHealthState(T0);
  it.each([
    ['null', null],
    ['a string', 'normal'],
    ['an unknown status', { ...valid, status: 'healthy' }],
    ['a negative counter', { ...valid, consecutiveFailures: -1 }],
    ['a fractional counter', { ...valid, consecutiveSuccesses: 1.5 }],
    ['two runs at once', { ...valid, consecutiveSuccesses: 1, consecutiveFailures: 1 }],
    ['a missing since', { ...valid, since: undefined }],
    ['a numeric lastError', { ...valid, lastError: 503 }],
    ['a string lastCheckedAt', { ...valid, lastCheckedAt: 'yesterday' }],
  ])('rejects %s', (_, value) => {
    expect(parseHealthState(value)).toBeNull();
  });

  it('drops unknown fields', () => {
    expect(parseHealthState({ ...valid, extra: 1 })).toEqual(valid);
  });
});
