import { describe, expect, it } from 'vitest';
import {
  answersHelp,
  behindSince,
  BEHIND_MS,
  BEHIND_SHARE,
  HELP_GAIN,
  HELP_SETTLE_MS,
  HELP_TRIAL_MS,
  nextCall,
  NO_CALL,
  SPARE_CORES,
  type HelpCall,
  type PaceSample,
} from '../../src/queue/writer-help.js';

const isBehind = (samples: PaceSample[]) => behindSince(samples) !== undefined;

/**
 * Samples a second apart from t = 0 at a rate of 100/s, taking turns at the
 * rates given a second (the first sample takes none), writes waiting, the
 * writer alone (every process's answers are its turns).
 */
function taking(perSecond: number[], over: Partial<PaceSample>[] = []): PaceSample[] {
  let taken = 0;
  return [0, ...perSecond].map((n, i) => {
    taken += n;
    return {
      at: 1_000 * i,
      waiting: 5,
      taken,
      rate: 100,
      throttled: 0,
      answered: taken,
      ...over[i],
    };
  });
}

const slow = [80, 80, 80, 80, 80];

describe('writer help', () => {
  it('holds the figures the module header states', () => {
    expect([BEHIND_MS, BEHIND_SHARE, SPARE_CORES]).toEqual([5_000, 0.9, 0.5]);
    expect([HELP_TRIAL_MS, HELP_SETTLE_MS, HELP_GAIN]).toEqual([6_000, 2_000, 1.1]);
  });

  it('is behind after five seconds each under 90 of 100 turns, writes waiting', () => {
    expect(isBehind(taking(slow))).toBe(true);
    expect(isBehind(taking([89.9, 89.9, 89.9, 89.9, 89.9]))).toBe(true);
    expect(isBehind(taking([90, 90, 90, 90, 90]))).toBe(false);
    expect(isBehind(taking([100, 100, 100, 100, 100]))).toBe(false);
  });

  it('is not behind before it has five seconds of samples', () => {
    expect(isBehind([])).toBe(false);
    expect(isBehind(taking([]))).toBe(false);
    expect(isBehind(taking([0, 0, 0, 0]))).toBe(false);
    const [a] = taking([]);
    expect(isBehind([a!, { ...a!, at: 4_999 }])).toBe(false);
    expect(isBehind([a!, { ...a!, at: 5_000 }])).toBe(true);
  });

  it('is not behind while still speeding up: its last second faster than every other', () => {
    expect(isBehind(taking([40, 60, 50, 70, 85]))).toBe(false);
    expect(isBehind(taking([40, 60, 85, 70, 80]))).toBe(true);
    expect(isBehind(taking([40, 60, 80, 70, 80]))).toBe(true);
    // Once it stops speeding up: a second later, behind.
    expect(isBehind(taking([40, 60, 50, 70, 85, 84]))).toBe(true);
  });

  it('compares seconds as rates, whatever the time between ticks', () => {
    // 84 a second, then a late tick: 160 in 2 s is 80/s, slower than the rest: behind.
    const late = taking([84, 84, 84, 84]);
    late.push({ ...late[4]!, at: 6_000, taken: late[4]!.taken + 160 });
    expect(isBehind(late)).toBe(true);
    // 176 in 2 s is 88/s, faster than the rest: still speeding up.
    late[5] = { ...late[5]!, taken: late[4]!.taken + 176 };
    expect(isBehind(late)).toBe(false);
  });

  it('is not behind when one second of the five kept its pace: a process warming up', () => {
    // A cold writer's first seconds, then its pace: 5 s at 0.74 of it on average.
    expect(isBehind(taking([40, 60, 80, 95, 95]))).toBe(false);
    expect(isBehind(taking([40, 60, 80, 89, 89]))).toBe(true);
    expect(isBehind(taking([95, 40, 40, 40, 40]))).toBe(false);
    expect(isBehind(taking([40, 40, 40, 40, 95]))).toBe(false);
  });

  it('counts from the newest sample at least five seconds old', () => {
    // A second at its pace long ago is forgotten.
    expect(isBehind(taking([95, ...slow]))).toBe(true);
    expect(isBehind(taking([95, 95, ...slow]))).toBe(true);
  });

  it('measures each second against the lower of its two rates', () => {
    // 85 a second; the rate falls to 90 at the third sample: 0.9 × 90 = 81, kept.
    expect(isBehind(taking([85, 85, 85, 85, 85], [{}, {}, { rate: 90 }]))).toBe(false);
    expect(isBehind(taking([85, 85, 85, 85, 85], [{}, {}, {}, {}, {}, { rate: 90 }]))).toBe(false);
    expect(isBehind(taking([85, 85, 85, 85, 85]))).toBe(true);
    // Late ticks: 1.5 s apart, 127.5 turns each (85/s) against 100/s.
    const late = taking(slow).map((s, i) => ({ ...s, at: 1_500 * i, taken: 127.5 * i }));
    expect(isBehind(late)).toBe(true);
  });

  it('is not behind while the queue was empty at any sample of the span', () => {
    for (const i of [0, 1, 3, 5]) {
      const over = Array.from({ length: 6 }, (_, j) => (j === i ? { waiting: 0 } : {}));
      expect(isBehind(taking(slow, over)), `empty at sample ${i}`).toBe(false);
    }
    // A sample older than the span does not count.
    expect(isBehind(taking([80, ...slow], [{ waiting: 0 }]))).toBe(true);
  });

  it('is not behind when a 429 came in the span: a Retry-After holds every process', () => {
    const withA429 = (at: number) =>
      taking(slow).map((s, i) => ({ ...s, throttled: i < at ? 2 : 3 }));
    expect(isBehind(withA429(5))).toBe(false);
    expect(isBehind(withA429(1))).toBe(false);
    const before = taking([80, ...slow]).map((s, i) => ({ ...s, throttled: i === 0 ? 1 : 2 }));
    expect(isBehind(before)).toBe(true);
  });

  /** `nextCall` tick by tick over `samples` from `call`: the call after each tick. */
  function calls(samples: PaceSample[], call: HelpCall = NO_CALL): HelpCall[] {
    const out: HelpCall[] = [];
    for (let i = 1; i <= samples.length; i++)
      out.push((call = nextCall(samples.slice(0, i), call)));
    return out;
  }

  it('calls when behind, noting its best second alone; not before, nor with no write waiting', () => {
    const c = calls(taking([40, 60, 85, 70, 80]));
    expect(c.slice(0, 5).every((x) => x.state === 'none')).toBe(true);
    expect(c[5]).toEqual({ state: 'called', at: 5_000, best: 85, paid: false });
    expect(calls(taking([100, 100, 100, 100, 100])).at(-1)).toEqual(NO_CALL);
    expect(nextCall([], NO_CALL)).toEqual(NO_CALL);
  });

  /**
   * A writer behind at 80/s from t = 0 to 5 s (it calls at 5 s), then every
   * process together at `helped` a second to t = 12 s, writes waiting.
   */
  function trial(helped: number): PaceSample[] {
    const s = taking([80, 80, 80, 80, 80, 40, 40, 40, 40, 40, 40, 40]);
    let answered = s[5]!.answered;
    return s.map((x, i) => (i <= 5 ? x : { ...x, answered: (answered += helped) }));
  }

  it('keeps a call that raised every process’s rate by a tenth over its best second', () => {
    const c = calls(trial(88));
    expect(c.slice(5, 11).map((x) => x.state)).toEqual(Array(6).fill('called'));
    // At t = 11 s (HELP_TRIAL_MS after the call): 88/s from t = 7 s, at least 1.1 × 80.
    expect(c[11]).toEqual({ state: 'called', at: 5_000, best: 80, paid: true });
    expect(c[12]).toEqual(c[11]);
  });

  it('withdraws a call that did not, and calls no more until no write waits', () => {
    const c = calls(trial(87.9));
    expect(c[10]!.state).toBe('called');
    expect(c[11]).toEqual({ state: 'withdrawn' });
    // Still behind, still withdrawn.
    const more = taking([80, 80, 80, 80, 80, 40, 40, 40, 40, 40, 40, 40, 50, 50, 50, 50, 50, 50]);
    const after = calls(more.slice(12), c[11]);
    expect(after.every((x) => x.state === 'withdrawn')).toBe(true);
    // The queue empties: no call; a new backlog may call again.
    expect(nextCall(taking([50], [{}, { waiting: 0 }]), { state: 'withdrawn' })).toEqual(NO_CALL);
    expect(nextCall(taking([50], [{}, { waiting: 0 }]), c[10]!)).toEqual(NO_CALL);
  });

  it('counts help from HELP_SETTLE_MS after the call: the helpers’ first seconds do not count', () => {
    // 200/s in the two seconds after the call, then 70/s: 1.1 × 80 is not reached after them.
    const s = taking([80, 80, 80, 80, 80, 200, 200, 70, 70, 70, 70, 70]);
    expect(calls(s)[11]).toEqual({ state: 'withdrawn' });
    // The other way round: slow at first, then 100/s.
    const t = taking([80, 80, 80, 80, 80, 10, 10, 100, 100, 100, 100, 100]);
    expect(calls(t)[11]).toEqual({ state: 'called', at: 5_000, best: 80, paid: true });
    // The second starting at exactly HELP_SETTLE_MS counts: 200, then 60/s, is 95/s from t = 7 s.
    const u = taking([80, 80, 80, 80, 80, 10, 10, 200, 60, 60, 60, 60]);
    expect(calls(u)[11]).toEqual({ state: 'called', at: 5_000, best: 80, paid: true });
  });

  it('waits for a second tick after HELP_SETTLE_MS before judging help: a late tick is no trial', () => {
    const s = taking([80, 80, 80, 80, 80]);
    const called = nextCall(s, NO_CALL);
    expect(called.state).toBe('called');
    // The next tick comes 6.5 s late: nothing measured since the settling, the call stands.
    const late = [...s, { ...s.at(-1)!, at: 11_500, taken: 1_000, answered: 1_000 }];
    expect(nextCall(late, called)).toEqual(called);
  });

  it('answers a call with half a core idle, or when it helps already; never uncalled', () => {
    expect(answersHelp(true, false, 0.5)).toBe(true);
    expect(answersHelp(true, false, 0.49)).toBe(false);
    expect(answersHelp(true, true, 0)).toBe(true);
    expect(answersHelp(false, true, 2)).toBe(false);
    expect(answersHelp(false, false, 2)).toBe(false);
  });
});
