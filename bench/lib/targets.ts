/**
 * The committed targets of `npm run bench -- check` (bench/targets.json) and
 * how a measured figure is judged against one. Pure but for reading the
 * file: the check scenario (bench/scenarios/check.ts) measures, this judges.
 *
 * A target names the scenario whose short form measures it, the metric (a
 * key of the figures that short form returns), a comparison (`>=`: at least
 * `value`; `<=`: at most) and the issue target it stands for. The ratio
 * printed is measured / value (for `>=` a pass is 1 or more, for `<=` 1 or
 * less); a value of 0 has no ratio.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';

const TargetSchema = z.strictObject({
  /** Unique, kebab-case: what a reader greps for. */
  name: z.string().regex(/^[a-z0-9]+(-[a-z0-9]+)*$/, 'kebab-case'),
  scenario: z.string().min(1),
  metric: z.string().min(1),
  comparison: z.enum(['>=', '<=']),
  value: z.number().finite(),
  /** The unit of `value` and of the figure, as printed (`rows/s`, `ms`, `B/row`). */
  unit: z.string(),
  /** The issue's target this one stands for, in its words. */
  issueTarget: z.string().min(1),
});

const TargetsSchema = z.strictObject({
  targets: z
    .array(TargetSchema)
    .min(1)
    .refine((ts) => new Set(ts.map((t) => t.name)).size === ts.length, 'target names repeat'),
});

export type Target = z.infer<typeof TargetSchema>;
/** A short form's figures by metric name. */
export type Measures = Readonly<Record<string, number>>;

export type Verdict =
  | { target: Target; result: 'pass' | 'miss'; measured: number; ratio: number | undefined }
  | { target: Target; result: 'miss'; failed: string }
  | { target: Target; result: 'not available'; why: string };

/** The targets of a targets file, checked (a bad file throws, naming every problem). */
export function parseTargets(json: unknown): Target[] {
  const parsed = TargetsSchema.safeParse(json);
  if (!parsed.success)
    throw new Error(
      `bench targets: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
  return parsed.data.targets;
}

export function readTargets(path: string): Target[] {
  return parseTargets(JSON.parse(readFileSync(path, 'utf8')));
}

/**
 * One target against its scenario's figures: `not available` when the
 * short form gave no such metric, `miss` when the figure is not a number.
 */
export function judge(target: Target, measures: Measures): Verdict {
  if (!Object.hasOwn(measures, target.metric))
    return {
      target,
      result: 'not available',
      why: `${target.scenario} gives no ${target.metric} (it gives ${Object.keys(measures).join(', ') || 'nothing'})`,
    };
  const measured = measures[target.metric]!;
  const ratio = target.value === 0 ? undefined : measured / target.value;
  const met =
    Number.isFinite(measured) &&
    (target.comparison === '>=' ? measured >= target.value : measured <= target.value);
  return { target, result: met ? 'pass' : 'miss', measured, ratio };
}

/** Every target of a scenario that has no short form. */
export function notAvailable(targets: readonly Target[], why: string): Verdict[] {
  return targets.map((target) => ({ target, result: 'not available', why }));
}

/** Every target of a scenario whose short form threw: not met, with the reason. */
export function failed(targets: readonly Target[], err: unknown): Verdict[] {
  const message = err instanceof Error ? err.message : String(err);
  return targets.map((target) => ({
    target,
    result: 'miss',
    failed: message.split('\n')[0]!.slice(0, 200),
  }));
}

/** A figure as the check prints it: thousands separated, three significant digits below 100. */
export function figure(x: number): string {
  if (!Number.isFinite(x)) return 'n/a';
  if (Math.abs(x) >= 100 || Number.isInteger(x)) return Math.round(x).toLocaleString('en-US');
  return String(Number(x.toPrecision(3)));
}
