/**
 * Skip rules: the `skip` section of a mapping names the rows that are not
 * live records of the CRM (deleted, merged, system users, archived) and says
 * why. They are checked before any field is mapped, so a system user's odd
 * e-mail never makes its row invalid: the row is skipped with its reason.
 *
 * ```yaml
 * skip:
 *   deleted: { from: IsDeleted, transforms: [boolean], equals: true, reason: "deleted in Salesforce" }
 *   not-a-person: { from: UserType, notIn: [Standard], reason: "not a person (UserType {value})" }
 * ```
 *
 * A rule tests exactly one of `equals` (a scalar), `in` / `notIn` (scalars),
 * compared as text without regard to case, `matches` / `notMatches` (a
 * JavaScript regular expression, always case-insensitive, tested on the
 * trimmed text), or `present: true|false`. An absent value (null marker)
 * matches only `present: false`; a transform that fails means the rule does
 * not match. `{value}` in the reason is the value as read. A job can turn a
 * rule off by name (`chooseSkipRules`, through the compiled mapping's
 * `withSkipRules`).
 *
 * A pattern is checked when the mapping is validated (an invalid one is a
 * problem naming the rule and what it reads) and compiled once per rule. It
 * runs once per row, so its length is capped (MAX_PATTERN_LENGTH) and it is
 * compiled with the `i` flag only: no `g` or `y`, whose `lastIndex` would
 * carry from one row to the next.
 */
import { z } from 'zod';
import type { ShownValue } from './mapped.js';
import { Invalid, pipeline, TransformSpecSchema } from './transforms.js';

const Scalar = z.union([z.string(), z.number(), z.boolean()]);
type Scalar = z.output<typeof Scalar>;

export const SKIP_RULE_NAME = /^[a-z0-9][a-z0-9_-]*$/;

/** The longest `matches` / `notMatches` pattern taken, in characters. */
export const MAX_PATTERN_LENGTH = 500;

const TESTS = ['equals', 'in', 'notIn', 'matches', 'notMatches', 'present'] as const;
const TEST_NAMES = 'equals, in, notIn, matches, notMatches or present';

/** The pattern compiled as a rule runs it, or the reason it cannot be. */
function compilePattern(source: string): RegExp | string {
  if (source.length > MAX_PATTERN_LENGTH) {
    return `a pattern of at most ${MAX_PATTERN_LENGTH} characters (got ${source.length})`;
  }
  try {
    return new RegExp(source, 'i');
  } catch (err) {
    return `not a valid regular expression (JavaScript syntax): ${(err as Error).message}`;
  }
}

const SkipRule = z
  .strictObject({
    from: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]),
    transforms: z.array(TransformSpecSchema).default([]),
    equals: Scalar.optional(),
    in: z.array(Scalar).min(1).optional(),
    notIn: z.array(Scalar).min(1).optional(),
    matches: z.string().min(1).optional(),
    notMatches: z.string().min(1).optional(),
    present: z.boolean().optional(),
    reason: z.string().trim().min(1),
  })
  .superRefine((r, ctx) => {
    const tests = TESTS.filter((k) => r[k] !== undefined);
    if (tests.length !== 1) {
      ctx.addIssue({
        code: 'custom',
        message:
          tests.length === 0
            ? `needs one of ${TEST_NAMES}`
            : `set only one of ${TEST_NAMES} (got ${tests.join(', ')})`,
      });
    }
    for (const key of ['matches', 'notMatches'] as const) {
      const source = r[key];
      if (source === undefined) continue;
      const re = compilePattern(source);
      if (typeof re === 'string') {
        const from = Array.isArray(r.from) ? r.from.join(', ') : r.from;
        ctx.addIssue({ code: 'custom', path: [key], message: `${re} (testing ${from})` });
      }
    }
  });

/** The `skip` section: rule name → rule, checked in the order written. */
export const SkipSection = z.record(z.string(), SkipRule).superRefine(
  (section, ctx) => {
    for (const name of Object.keys(section)) {
      if (!SKIP_RULE_NAME.test(name)) {
        ctx.addIssue({
          code: 'custom',
          path: [name],
          message: 'a rule name uses lower-case letters, digits, - and _',
        });
      }
    }
  },
  // Also when a rule failed, so that every problem is reported at once.
  { when: () => true },
);
export type SkipSectionOutput = z.output<typeof SkipSection>;

/** Why a row is skipped: the rule, its reason (with `{value}` filled in) and the value read. */
export interface SkipMatch {
  rule: string;
  reason: string;
  /** The value as read, as the export had it (ShownValue); absent when there was none. */
  value?: ShownValue;
}

export interface CompiledSkipRule {
  name: string;
  /** The match when the rule applies to the record, else undefined. */
  test(rec: Record<string, unknown>): SkipMatch | undefined;
}

export interface SkipRuleContext {
  /** Reads `from` as a field's `from` is read: the first non-null value, or null when absent. */
  reader(from: string | string[]): (rec: Record<string, unknown>) => unknown;
  /** The value as shown in reports (ShownValue). */
  shown(value: unknown): ShownValue | undefined;
}

/** A value as text: a JSON list or object as its JSON text; trimmed. */
function text(v: unknown): string {
  const s =
    typeof v === 'string'
      ? v
      : typeof v === 'number' || typeof v === 'boolean'
        ? String(v)
        : (JSON.stringify(v) ?? '');
  return s.trim();
}

/** Text for comparing with `equals` / `in` / `notIn`: trimmed and lower-cased. */
function comparable(v: unknown): string {
  return text(v).toLowerCase();
}

function compileTest(r: z.output<typeof SkipRule>): (value: unknown) => boolean {
  if (r.present !== undefined) {
    const present = r.present;
    return (v) => (v !== null) === present;
  }
  const source = r.matches ?? r.notMatches;
  if (source !== undefined) {
    const re = compilePattern(source);
    // Unreachable through compileMapping: its schema refuses such a pattern with its path.
    if (typeof re === 'string') throw new Error(`skip rule pattern: ${re}`);
    const wanted = r.matches !== undefined;
    // An absent value matches only `present: false`, as with notIn.
    return (v) => v !== null && re.test(text(v)) === wanted;
  }
  const list: Scalar[] = r.equals !== undefined ? [r.equals] : (r.in ?? r.notIn ?? []);
  const set = new Set(list.map(comparable));
  const inside = r.notIn === undefined;
  // An absent value matches only `present: false`.
  return (v) => v !== null && set.has(comparable(v)) === inside;
}

export function compileSkipRules(
  section: SkipSectionOutput | undefined,
  ctx: SkipRuleContext,
): CompiledSkipRule[] {
  return Object.entries(section ?? {}).map(([name, r]) => {
    const read = ctx.reader(r.from);
    const transform = pipeline(r.transforms);
    const matches = compileTest(r);
    const parts = r.reason.split('{value}');
    return {
      name,
      test(rec) {
        const raw = read(rec);
        const v = raw === null ? null : transform(raw);
        if (v instanceof Invalid || !matches(v)) return undefined;
        const value = ctx.shown(raw);
        const reason =
          parts.length === 1 ? r.reason : parts.join(value === undefined ? '' : String(value));
        return value === undefined ? { rule: name, reason } : { rule: name, reason, value };
      },
    };
  });
}

/** The first rule that applies to the record, in the order written. */
export function firstSkip(
  rules: readonly CompiledSkipRule[],
  rec: Record<string, unknown>,
): SkipMatch | undefined {
  for (const r of rules) {
    const m = r.test(rec);
    if (m) return m;
  }
  return undefined;
}

/**
 * The rules a job keeps: `overrides` maps rule names to false (off) or true
 * (kept). A name the mapping does not have is a problem naming the known ones.
 */
export function chooseSkipRules(
  rules: readonly CompiledSkipRule[],
  overrides: Readonly<Record<string, boolean>>,
): { rules: CompiledSkipRule[]; problems: { name: string; message: string }[] } {
  const known = rules.map((r) => r.name);
  const problems = Object.keys(overrides)
    .filter((name) => !known.includes(name))
    .map((name) => ({
      name,
      message:
        known.length === 0
          ? `no skip rule "${name}": the mapping has no skip rules`
          : `no skip rule "${name}" in the mapping (known: ${known.join(', ')})`,
    }));
  return { rules: rules.filter((r) => overrides[r.name] !== false), problems };
}
