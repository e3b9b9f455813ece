/**
 * A mapping's or job's `duplicates` section: which row of an export keeps
 * a platform record that several rows claim (src/sync/survivors.ts, the
 * rules), and where a row's modified time is (`by`), read as a rank.
 */
import { z } from 'zod';
import { KEEP_RULES, rankOf, type KeepRule } from '../sync/survivors.js';
import type { PathUse } from './path-coverage.js';
import { compileRef, readingRecord } from './record-ref.js';

/** The section's fields, unchecked (a job's, which its mapping's completes). */
export const DuplicatesFields = z.strictObject({
  /** Default: `newest` with `by`, `first` without. */
  keep: z.enum(KEEP_RULES).optional(),
  /** Columns or paths of the row holding a date or a number (its modified time): the first with a value. */
  by: z.union([z.string().trim().min(1), z.array(z.string().trim().min(1)).min(1)]).optional(),
});
export type DuplicatesDef = z.output<typeof DuplicatesFields>;

/** Why a section cannot be compiled (`keep: newest` without `by`), or undefined. */
export function duplicatesProblem(d: DuplicatesDef): string | undefined {
  return (d.keep === 'newest' || d.keep === 'oldest') && d.by === undefined
    ? `keep: ${d.keep} needs by`
    : undefined;
}

/** A mapping's section, checked. */
export const DuplicatesSection = DuplicatesFields.superRefine((d, ctx) => {
  const problem = duplicatesProblem(d);
  if (problem !== undefined) ctx.addIssue({ code: 'custom', path: ['by'], message: problem });
});

/** The survivor rule of a run: how to keep one row of those claiming one record. */
export interface DuplicatesRule {
  keep: KeepRule;
  /** The `by` columns or paths, as written. */
  by?: readonly string[];
  /** The row's rank under `by` (undefined: none, or no `by`). */
  rank(record: Readonly<Record<string, unknown>>): number | undefined;
}

/** Where the rule reads (for path coverage: a `by` that finds nothing makes every rank absent). */
export function duplicatesPathUses(rule: DuplicatesRule): PathUse[] {
  return rule.by === undefined ? [] : [{ field: 'duplicates.by', refs: rule.by, required: false }];
}

/** Today's rule without a section: every row sharing an identity is a conflict. */
export const NO_DUPLICATE_RULE: DuplicatesRule = { keep: 'none', rank: () => undefined };

export function compileDuplicates(def: DuplicatesDef | undefined): DuplicatesRule {
  if (def === undefined || def.keep === 'none') return NO_DUPLICATE_RULE;
  const keep = def.keep ?? (def.by === undefined ? 'first' : 'newest');
  if (def.by === undefined) return { keep, rank: () => undefined };
  const by = typeof def.by === 'string' ? [def.by] : def.by;
  const refs = by.map(compileRef);
  return {
    keep,
    by,
    rank(rec) {
      // The record's keys are read once for all the `by` references, not once each.
      return readingRecord(rec, () => {
        for (const ref of refs) {
          const v = ref.read(rec as Record<string, unknown>);
          if (v !== undefined && v !== null && v !== '') return rankOf(v);
        }
        return undefined;
      });
    },
  };
}

/**
 * A job's section over its mapping's rule: the job's `by` and `keep` where
 * it says them, else the mapping's (`keep: oldest` alone keeps the oldest by
 * the preset's modified time); a job's `by` alone keeps the newest.
 */
export function jobDuplicates(job: DuplicatesDef, mapping: DuplicatesRule): DuplicatesDef {
  const by = job.by ?? mapping.by;
  const keep =
    job.keep ?? (job.by === undefined && mapping.keep !== 'none' ? mapping.keep : undefined);
  return {
    ...(keep !== undefined && { keep }),
    ...(by !== undefined && { by: typeof by === 'string' ? by : [...by] }),
  };
}
