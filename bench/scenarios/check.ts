/**
 * `npm run bench -- check [--strict]`: the short form of each scenario behind
 * the committed targets (bench/targets.json; the short forms are listed in
 * bench/lib/short-forms.ts), each run once, every target judged against its
 * figure and printed `pass`, `miss` or `not available` (a scenario with no
 * short form in this build), with the figure and its ratio to the target.
 * The exit code stays 0 whatever the outcome; with `--strict` it is 1 when a
 * target is missed (a short form that fails misses its targets).
 */
import { join } from 'node:path';
import type { BenchTable, Scenario, ShortForm } from '../run.js';
import { ROOT } from '../lib/cli.js';
import { loadAverage, ratio, seconds } from '../lib/measure.js';
import { SHORT_FORMS } from '../lib/short-forms.js';
import {
  failed,
  figure,
  judge,
  notAvailable,
  readTargets,
  type Target,
  type Verdict,
} from '../lib/targets.js';

export const TARGETS_FILE = join(ROOT, 'bench', 'targets.json');

function row(v: Verdict): string[] {
  const t = v.target;
  const wanted = `${t.comparison} ${figure(t.value)} ${t.unit}`;
  if (v.result === 'not available')
    return [t.name, '-', wanted, '-', 'not available', t.issueTarget];
  if ('failed' in v) return [t.name, 'failed', wanted, '-', 'miss', t.issueTarget];
  return [
    t.name,
    `${figure(v.measured)} ${t.unit}`,
    wanted,
    // Three digits: 0.998 is a miss that two would print as 1.00.
    v.ratio === undefined ? '-' : ratio(v.ratio, 3),
    v.result,
    t.issueTarget,
  ];
}

/**
 * Runs the short form of every scenario the targets name (once each, in the
 * order the targets first name them) and judges each target: what the check
 * prints, as verdicts and one note per scenario. `log` hears of progress.
 */
export async function checkTargets(
  targets: readonly Target[],
  forms: Readonly<Record<string, () => Promise<ShortForm>>>,
  log: (line: string) => void = () => {},
): Promise<{ verdicts: Verdict[]; notes: string[] }> {
  const verdicts: Verdict[] = [];
  const notes: string[] = [];
  for (const name of new Set(targets.map((t) => t.scenario))) {
    const mine = targets.filter((t) => t.scenario === name);
    const load = Object.hasOwn(forms, name) ? forms[name] : undefined;
    if (load === undefined) {
      const why = `no short form of ${name} in this build (bench/lib/short-forms.ts)`;
      verdicts.push(...notAvailable(mine, why));
      notes.push(`${name}: not available, ${why}.`);
      continue;
    }
    const t0 = performance.now();
    let what = name;
    let judged: Verdict[];
    try {
      const form = await load();
      what = `${name}: ${form.what}`;
      log(`${what} …`);
      const measures = await form.measure();
      judged = mine.map((t) => judge(t, measures));
      notes.push(`${what}, ${seconds(performance.now() - t0)}.`);
      for (const v of judged)
        if (v.result === 'not available') notes.push(`${v.target.name}: ${v.why}.`);
    } catch (err) {
      judged = failed(mine, err);
      const message = err instanceof Error ? err.message : String(err);
      notes.push(`${what}, failed: ${message.split('\n')[0]}`);
    }
    for (const v of judged) log(row(v).slice(0, 5).join(' | '));
    verdicts.push(...judged);
  }
  return { verdicts, notes };
}

/** 1 under `--strict` when a target is missed; 0 otherwise (not available is no miss). */
export function exitCodeOf(verdicts: readonly Verdict[], strict: boolean): number {
  return strict && verdicts.some((v) => v.result === 'miss') ? 1 : 0;
}

const scenario: Scenario = {
  name: 'check',
  description:
    'the short forms of the scenarios behind bench/targets.json, each target pass or miss',
  async run(): Promise<BenchTable[]> {
    const strict = process.argv.includes('--strict');
    const load0 = await loadAverage();
    const { verdicts, notes } = await checkTargets(readTargets(TARGETS_FILE), SHORT_FORMS, (l) =>
      process.stderr.write(`check: ${l}\n`),
    );
    const count = (r: Verdict['result']): number => verdicts.filter((v) => v.result === r).length;
    process.exitCode = exitCodeOf(verdicts, strict) || process.exitCode;
    const load1 = await loadAverage();
    return [
      {
        title: `Targets of bench/targets.json: ${count('pass')} pass, ${count('miss')} miss, ${count('not available')} not available`,
        columns: ['target', 'measured', 'target', 'ratio', 'result', 'stands for'],
        rows: verdicts.map(row),
        notes: [
          ...notes,
          'ratio = measured / target: a pass is 1 or more for a floor (>=), 1 or less for a ceiling (<=); a target of 0 has none.',
          `Exit code: ${strict ? `${exitCodeOf(verdicts, true)} (--strict: 1 on a miss)` : '0 whatever the outcome (--strict: 1 on a miss)'}.`,
          `Load average (1 min) before → after: ${load0} → ${load1}, on 2 shared cores.`,
        ],
      },
    ];
  },
};

export default scenario;
