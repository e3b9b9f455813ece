/**
 * A mapping's or job's `duplicates` section: which row of an export keeps
 * a platform record that several rows claim (src/sync/survivors.ts, the
 * rules), and where a row's modified time is (`by`), read as a rank.
 */
import { z } from 'zod';
import { KEEP_RULES, rankOf, type KeepRule } from '../sync/survivors.js';
import { compileRef } from './record-ref.js';

export const DuplicatesSection = z
  .strictObject({
    /** Default: `newest` with `by`, `first` without. */
    keep: z.enum(KEEP_RULES).optional(),
    /** Columns or paths of the row holding a date or a number (its modified time): the first with a value. */
    by: z.union([z.string().trim().min(1), z.array(z.string().trim().min(1)).min(1)]).optional(),
  })
  .superRefine((d, ctx) => {
    if ((d.keep === 'newest' || d.keep === 'oldest') && d.by === undefined) {
      ctx.addIssue({ code: 'custom', path: ['by'], message: `keep: ${d.keep} needs by` });
    }
  });
export type DuplicatesDef = z.output<typeof DuplicatesSection>;

/** The survivor rule of a run: how to keep one row of those claiming one record. */
export interface DuplicatesRule {
  keep: KeepRule;
  /** The `by` columns or paths, as written. */
  by?: readonly string[];
  /** The row's rank under `by` (undefined: none, or no `by`). */
  rank(record: Readonly<Record<string, unknown>>): number | undefined;
}

/** Today's rule without a section: every row sharing an identity is a conflict. */
export const NO_DUPLICATE_RULE: DuplicatesRule = { keep: 'none', rank: () => undefined };

export function compileDuplicates(def: DuplicatesDef | undefined): DuplicatesRule {
  if (def === undefined) return NO_DUPLICATE_RULE;
  const keep = def.keep ?? (def.by === undefined ? 'first' : 'newest');
  if (def.by === undefined) return { keep, rank: () => undefined };
  const by = typeof def.by === 'string' ? [def.by] : def.by;
  const refs = by.map(compileRef);
  return {
    keep,
    by,
    rank(rec) {
      for (const ref of refs) {
        const v = ref.read(rec as Record<string, unknown>);
        if (v !== undefined && v !== null && v !== '') return rankOf(v);
      }
      return undefined;
    },
  };
}
