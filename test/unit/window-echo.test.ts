/**
 * The window's echo (src/queue/window-echo.ts), pure: when a late request
 * moves the turns a window later, how the script's answer becomes turn
 * times, and a fixed limit paced at FIXED_MARGIN on a virtual clock against
 * the sandbox's sliding and fixed windows, with stalls on the worker's side
 * and on the platform's: no 429 with the echo, 429s without it.
 */
import { describe, expect, it } from 'vitest';
import { parseRate, Throttle } from '../../packages/platform-sandbox/src/throttle.js';
import {
  ECHO_GUARD_MS,
  echoOf,
  FIXED_MARGIN,
  fixedPace,
  mergeEchoes,
  TOGETHER_MS,
  turnsOf,
  WINDOW_MS,
} from '../../src/queue/window-echo.js';

const T0 = 1_700_000_000_000;
const SHARE = 1 / FIXED_MARGIN;
/** The slack a fixed limit leaves: W / p − W. */
const SLACK = WINDOW_MS * SHARE - WINDOW_MS;

describe('echoOf', () => {
  it('leaves a request the slack covers alone', () => {
    // Written out late by the slack less the early release and the guard: nothing moves.
    const late = SLACK - TOGETHER_MS - ECHO_GUARD_MS - 0.5;
    expect(echoOf({ turn: T0, firedAt: T0, sentAt: T0 + late }, SHARE)).toBeUndefined();
    expect(echoOf({ turn: T0, firedAt: T0 + late }, SHARE)).toBeUndefined();
  });

  it('holds the turns from a window of the limit’s turns later until a window after it went out', () => {
    const e = echoOf({ turn: T0, firedAt: T0 + 5, sentAt: T0 + 60 }, SHARE)!;
    expect(e.from).toBe(Math.floor(T0 + WINDOW_MS * SHARE));
    expect(e.until).toBe(T0 + 60 + WINDOW_MS + TOGETHER_MS + ECHO_GUARD_MS);
  });

  it('counts an answer later than usual as a late arrival, and its release before it was written out', () => {
    const sent = echoOf({ turn: T0, firedAt: T0, sentAt: T0 + 10, lateBy: 50 }, SHARE)!;
    expect(sent.until).toBe(T0 + 60 + WINDOW_MS + TOGETHER_MS + ECHO_GUARD_MS);
    // Its timer fired late: before it is written out, its release is the least it was.
    const fired = echoOf({ turn: T0, firedAt: T0 + 80 }, SHARE)!;
    expect(fired.until).toBe(T0 + 80 + WINDOW_MS + TOGETHER_MS + ECHO_GUARD_MS);
  });

  it('starts a window of the limit later, never sooner than a window; nothing while no limit is known', () => {
    expect(echoOf({ turn: T0, firedAt: T0 + 80 }, 1)?.from).toBe(T0 + WINDOW_MS);
    expect(echoOf({ turn: T0, firedAt: T0 + 80 }, 0.5)?.from).toBe(T0 + WINDOW_MS);
    // Twice the rate's window: only a request later than a whole window is echoed.
    expect(echoOf({ turn: T0, firedAt: T0 + 900 }, 2)).toBeUndefined();
    expect(echoOf({ turn: T0, firedAt: T0 + 1_100 }, 2)?.from).toBe(T0 + 2 * WINDOW_MS);
    expect(echoOf({ turn: T0, firedAt: T0 + 5_000 }, Infinity)).toBeUndefined();
  });
});

describe('turnsOf and mergeEchoes', () => {
  it('spaces turns from the first, and from each move on', () => {
    expect(turnsOf(100, 5, 4, new Map())).toEqual([100, 105, 110, 115]);
    expect(turnsOf(100, 5, 5, new Map([[2, 140]]))).toEqual([100, 105, 140, 145, 150]);
  });

  it('merges echoes that meet, in order', () => {
    const merged = mergeEchoes([
      { from: 50, until: 60 },
      { from: 10, until: 20 },
      { from: 15, until: 30 },
      { from: 30, until: 35 },
    ]);
    expect(merged).toEqual([
      { from: 10, until: 35 },
      { from: 50, until: 60 },
    ]);
  });
});

/**
 * A fixed limit on a virtual clock: turns booked as the pacer's script
 * books them (spaced at the paced rate; a turn inside an echo goes at its
 * end and the schedule after it), each booked 200 ms before it is due with
 * the echoes reported by then. Each request is released on its turn, up to
 * TOGETHER_MS early; a stall of the worker (`workerStalls`) holds what is
 * released in it until its end, before it is written out; a stall of the
 * platform (`platformStalls`) holds what arrives in it until its end, before
 * it is counted. Answers come back `latencyMs` after the platform counted the
 * request; an echo is reported a booking later (100 ms).
 */
function run(opts: {
  limit: number;
  mode: 'sliding' | 'fixed';
  requests: number;
  workerStalls: [number, number][];
  platformStalls: [number, number][];
  echo: boolean;
}) {
  const latencyMs = 40;
  let now = T0;
  const server = new Throttle(parseRate(opts.limit)!, opts.mode, () => now);
  const interval = 1_000 / fixedPace(opts.limit);
  const after = (stalls: [number, number][], t: number): number => {
    for (const [from, to] of stalls) if (t >= T0 + from && t < T0 + to) return T0 + to;
    return t;
  };
  let seed = 11;
  const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
  /** Echoes, each with when the script has it. */
  const known: { at: number; from: number; until: number }[] = [];
  let cursor = T0;
  let limited = 0;
  let last = T0;
  for (let i = 0; i < opts.requests; i++) {
    // Booked 200 ms ahead with the echoes reported by then.
    let turn = cursor;
    for (const e of mergeEchoes(known.filter((k) => k.at <= turn - 200))) {
      if (turn >= e.from && turn < e.until) turn = e.until;
    }
    cursor = turn + interval;
    const firedAt = turn - random() * TOGETHER_MS;
    const sentAt = after(opts.workerStalls, firedAt);
    const arrived = after(opts.platformStalls, sentAt);
    now = arrived;
    if (server.check('k') !== undefined) limited++;
    last = arrived;
    const answered = arrived + latencyMs;
    // The answer began `arrived − sentAt` later than the usual wait (latencyMs).
    const e = echoOf({ turn, firedAt, sentAt, lateBy: arrived - sentAt }, 1 / FIXED_MARGIN);
    if (opts.echo && e) known.push({ at: answered + 100, ...e });
  }
  return { limited, rate: opts.requests / ((last - T0) / 1_000) };
}

describe('a fixed limit paced at FIXED_MARGIN (virtual clock)', () => {
  // Inside a second of the clock, and across one (what a fixed window sees).
  const stalls: [number, number][] = [
    [2_310, 2_390],
    [5_950, 6_080],
    [9_500, 9_545],
    [12_930, 13_100],
    [16_001, 16_200],
  ];
  it.each([
    ['sliding', 'worker'],
    ['sliding', 'platform'],
    ['fixed', 'worker'],
    ['fixed', 'platform'],
  ] as const)(
    '%s window, stalls on the %s side: no 429 with the echo, some without; the rate stays close to the pace',
    (mode, side) => {
      const base = {
        limit: 200,
        mode,
        requests: 4_000,
        workerStalls: side === 'worker' ? stalls : [],
        platformStalls: side === 'platform' ? stalls : [],
      };
      const withEcho = run({ ...base, echo: true });
      const without = run({ ...base, echo: false });
      const shown = `${mode}/${side}: ${withEcho.limited} refused with the echo (${withEcho.rate.toFixed(1)}/s), ${without.limited} without`;
      expect(withEcho.limited, shown).toBe(0);
      expect(without.limited, shown).toBeGreaterThan(0);
      // Each stall moves the schedule once, by what the slack does not cover.
      const cover = SLACK - TOGETHER_MS - ECHO_GUARD_MS;
      const moved = stalls.reduce(
        (a, [from, to]) => a + Math.max(0, to - from + TOGETHER_MS - cover),
        0,
      );
      const least = (4_000 / ((4_000 / fixedPace(200)) * 1_000 + moved + 200)) * 1_000;
      expect(withEcho.rate, shown).toBeGreaterThanOrEqual(least);
    },
  );
});
