import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SHORT_FORMS } from '../../bench/lib/short-forms.js';
import { checkTargets, exitCodeOf } from '../../bench/scenarios/check.js';
import {
  failed,
  figure,
  judge,
  notAvailable,
  parseTargets,
  type Target,
} from '../../bench/lib/targets.js';

const FILE = join(import.meta.dirname, '..', '..', 'bench', 'targets.json');

const floor: Target = {
  name: 'rows-per-second',
  scenario: 'plan-scale',
  metric: 'rowsPerSecond',
  comparison: '>=',
  value: 50_000,
  unit: 'rows/s',
  issueTarget: 'planning at 50,000 rows/s',
};
const ceiling: Target = { ...floor, name: 'cpu', metric: 'cpuMs', comparison: '<=', value: 0.5 };
const none: Target = { ...floor, name: 'no-429', metric: 'limited', comparison: '<=', value: 0 };

describe('the committed targets', () => {
  const targets = parseTargets(JSON.parse(readFileSync(FILE, 'utf8')));

  it('parse, each naming its scenario, metric and issue target', () => {
    expect(targets.length).toBeGreaterThanOrEqual(10);
    for (const t of targets) expect(t.issueTarget.length).toBeGreaterThan(10);
  });

  it('cover plan-scale, sync-cost, rate and fairness, and every registered short form', () => {
    const scenarios = new Set(targets.map((t) => t.scenario));
    for (const s of ['plan-scale', 'sync-cost', 'rate', 'fairness']) expect(scenarios).toContain(s);
    for (const s of Object.keys(SHORT_FORMS)) expect(scenarios).toContain(s);
  });
});

describe('parseTargets', () => {
  const file = (targets: unknown[]): unknown => ({ targets });

  it('refuses a target without its issue target, an unknown comparison or an extra field', () => {
    const { issueTarget: _, ...bare } = floor;
    expect(() => parseTargets(file([bare]))).toThrow(/0\.issueTarget/);
    expect(() => parseTargets(file([{ ...floor, comparison: '>' }]))).toThrow(/0\.comparison/);
    expect(() => parseTargets(file([{ ...floor, ratio: 1 }]))).toThrow(/bench targets/);
  });

  it('refuses two targets of one name, and none at all', () => {
    expect(() => parseTargets(file([floor, { ...floor, metric: 'other' }]))).toThrow(/repeat/);
    expect(() => parseTargets(file([]))).toThrow(/targets/);
  });
});

describe('judge', () => {
  it('a floor passes at or above its value, with measured / value as the ratio', () => {
    expect(judge(floor, { rowsPerSecond: 50_000 })).toMatchObject({ result: 'pass', ratio: 1 });
    expect(judge(floor, { rowsPerSecond: 55_000 })).toMatchObject({ result: 'pass', ratio: 1.1 });
    expect(judge(floor, { rowsPerSecond: 45_000 })).toMatchObject({
      result: 'miss',
      measured: 45_000,
      ratio: 0.9,
    });
  });

  it('a ceiling passes at or below its value', () => {
    expect(judge(ceiling, { cpuMs: 0.5 })).toMatchObject({ result: 'pass', ratio: 1 });
    expect(judge(ceiling, { cpuMs: 0.4 })).toMatchObject({ result: 'pass', ratio: 0.8 });
    expect(judge(ceiling, { cpuMs: 0.6 })).toMatchObject({ result: 'miss' });
  });

  it('a target of 0 has no ratio; a figure that is not a number misses', () => {
    expect(judge(none, { limited: 0 })).toEqual({
      target: none,
      result: 'pass',
      measured: 0,
      ratio: undefined,
    });
    expect(judge(none, { limited: 1 })).toMatchObject({ result: 'miss', ratio: undefined });
    expect(judge(floor, { rowsPerSecond: NaN })).toMatchObject({ result: 'miss' });
    // A rate over no time at all is no figure either.
    expect(judge(floor, { rowsPerSecond: Infinity })).toMatchObject({ result: 'miss' });
    expect(judge(ceiling, { cpuMs: NaN })).toMatchObject({ result: 'miss' });
  });

  it('a metric the short form does not give is not available, naming those it gives', () => {
    expect(judge(floor, { rows: 1, wall: 2 })).toEqual({
      target: floor,
      result: 'not available',
      why: 'plan-scale gives no rowsPerSecond (it gives rows, wall)',
    });
  });

  it('a scenario without a short form, or one that failed', () => {
    expect(notAvailable([floor, ceiling], 'no short form').map((v) => v.result)).toEqual([
      'not available',
      'not available',
    ]);
    expect(failed([floor], new Error('run ended failed\nstack'))).toEqual([
      { target: floor, result: 'miss', failed: 'run ended failed' },
    ]);
  });
});

describe('figure', () => {
  it('separates thousands and keeps three significant digits below 100', () => {
    expect(figure(53_156.4)).toBe('53,156');
    expect(figure(0.4168)).toBe('0.417');
    expect(figure(10.64)).toBe('10.6');
    expect(figure(0.0012)).toBe('0.0012');
    expect(figure(0)).toBe('0');
    expect(figure(NaN)).toBe('n/a');
  });
});

describe('checkTargets', () => {
  const rate: Target = { ...floor, name: 'steady', scenario: 'rate', metric: 'steady', value: 0.9 };
  const fair: Target = {
    ...floor,
    name: 'fair',
    scenario: 'fairness',
    metric: 'share',
    value: 0.9,
  };
  const form = (measure: () => Promise<Record<string, number>>) => async () => ({
    what: 'short',
    measure,
  });

  it('runs each short form once, judges its targets, and leaves a scenario without one not available', async () => {
    let runs = 0;
    const { verdicts, notes } = await checkTargets([floor, rate, ceiling, fair], {
      'plan-scale': form(async () => {
        runs++;
        return { rowsPerSecond: 60_000, cpuMs: 0.7 };
      }),
      rate: form(async () => ({ steady: 0.95 })),
    });
    expect(runs).toBe(1);
    // Grouped by scenario, in the order the targets first name them.
    expect(verdicts.map((v) => [v.target.name, v.result])).toEqual([
      ['rows-per-second', 'pass'],
      ['cpu', 'miss'],
      ['steady', 'pass'],
      ['fair', 'not available'],
    ]);
    expect(notes.at(-1)).toBe(
      'fairness: not available, no short form of fairness in this build (bench/lib/short-forms.ts).',
    );
    expect(exitCodeOf(verdicts, false)).toBe(0);
    expect(exitCodeOf(verdicts, true)).toBe(1);
  });

  it('misses every target of a short form that fails, and the others still run', async () => {
    const { verdicts, notes } = await checkTargets([floor, rate], {
      'plan-scale': form(async () => {
        throw new Error('run ended failed');
      }),
      rate: form(async () => ({ steady: 0.95 })),
    });
    expect(verdicts.map((v) => v.result)).toEqual(['miss', 'pass']);
    expect(notes[0]).toBe('plan-scale: short, failed: run ended failed');
  });

  it('misses the targets of a short form that cannot be loaded', async () => {
    const { verdicts, notes } = await checkTargets([floor], {
      'plan-scale': async () => {
        throw new Error('Cannot find module');
      },
    });
    expect(verdicts.map((v) => v.result)).toEqual(['miss']);
    expect(notes).toEqual(['plan-scale, failed: Cannot find module']);
  });

  it('not available alone is no miss, even under --strict', async () => {
    const { verdicts } = await checkTargets([fair], {});
    expect(exitCodeOf(verdicts, true)).toBe(0);
  });
});
