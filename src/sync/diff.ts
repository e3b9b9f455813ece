/**
 * Field-level difference between what the platform holds and what we would
 * send. Only fields present in `after` are compared: we send only mapped
 * fields, so a platform field the mapping does not touch is never a change.
 */
import { canonicalJson } from './canonical.js';

export interface FieldChange {
  field: string;
  /** The platform's value (`null` when it has none or it is unknown). */
  from: unknown;
  /** The value we would send. */
  to: unknown;
}

/**
 * The fields of `after` whose value differs from `before`, in sorted field
 * order, compared as canonical JSON (so `{a:1,b:2}` equals `{b:2,a:1}`). A
 * field missing from `before` counts as `null`: the platform leaves empty
 * fields out or sends null, and both mean "no value".
 */
export function diffFields(
  before: Readonly<Record<string, unknown>> | undefined,
  after: Readonly<Record<string, unknown>>,
): FieldChange[] {
  const changes: FieldChange[] = [];
  for (const field of Object.keys(after).sort()) {
    const to = after[field];
    if (to === undefined) continue;
    const from = before?.[field] ?? null;
    if (canonicalJson(from) !== canonicalJson(to)) changes.push({ field, from, to });
  }
  return changes;
}
