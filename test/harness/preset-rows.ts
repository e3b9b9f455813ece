/**
 * Rows a mapping preset should map, for property tests: built from the
 * preset's own columns and paths (every `from`, template placeholder and skip
 * rule it reads), each given a valid-looking value for what it reads it as
 * (an integer, an e-mail address, a website, a Salesforce id, a GUID, a
 * person's name, text), in the shapes the paths name (`values.name[0].value`
 * builds a nested record). A share of rows is then broken on purpose: some
 * cells replaced by hostile values or removed, or a skip rule made to match.
 * Derived from the preset file, so a new preset is covered as it is added.
 */
import fc from 'fast-check';
import { ALL, parsePath, PathSyntax, type Segment } from '../../src/crm/json-path.js';
import { salesforceChecksum } from '../../src/crm/salesforce-id.js';

type Scalar = string | number | boolean;

interface RawRule {
  from?: string | string[];
  transforms?: unknown[];
  equals?: Scalar;
  in?: Scalar[];
  notIn?: Scalar[];
  present?: boolean;
}

interface RawEntry {
  from?: string | string[];
  template?: string;
  transforms?: unknown[];
}

/** The parts of a preset file read here (the rest is the mapping's business). */
export interface RawPreset {
  fields?: Record<string, RawEntry>;
  custom?: Record<string, RawEntry>;
  skip?: Record<string, RawRule>;
}

export type RowShape = 'valid' | 'broken' | 'skip-rule';

export interface PresetRow {
  record: Record<string, unknown>;
  shape: RowShape;
}

/** Values that are hard on a mapping: empty, null markers, big numbers, formulas, wrong types. */
export const hostileCell: fc.Arbitrary<unknown> = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.constantFrom(
    '',
    'N/A',
    ' 512 ',
    '512.0',
    '12.5',
    '9007199254740993',
    'acme.com',
    'https://www.Acme.com/x/',
    'info@acme.com',
    'Jane.Roe@Example.com',
    'a@b',
    'true',
    'no',
    '001M000000qfPyS',
    '001M000000qfPySIAU',
    '001M000000qfPySAAA',
    '=SUM(A1)',
  ),
  fc.integer(),
  fc.boolean(),
  fc.constant(null),
  fc.constant({ nested: 'object' }),
  fc.constant(['a', 'list']),
);

const word = fc.stringMatching(/^[A-Z][a-z]{1,9}$/);
const lowerWord = fc.stringMatching(/^[a-z][a-z0-9]{1,9}$/);
const positive = fc.integer({ min: 1, max: 2_000_000_000 });

/** What a path is read as, from the transforms applied to it. */
type Kind =
  'integer' | 'email' | 'website' | 'salesforce-id' | 'boolean' | 'guid' | 'name' | 'text' | 'id';

function transformNames(transforms: unknown[] | undefined): string[] {
  return (transforms ?? []).map((t) =>
    typeof t === 'string' ? t : Object.keys(t as Record<string, unknown>)[0]!,
  );
}

function kindOf(names: string[], placeholder: boolean): Kind {
  for (const k of ['integer', 'email', 'website', 'salesforce-id', 'boolean'] as const)
    if (names.includes(k)) return k;
  if (names.includes('split-name')) return 'name';
  if (names.includes('lower')) return 'guid';
  return placeholder ? 'id' : 'text';
}

const VALUES: Record<Kind, fc.Arbitrary<unknown>> = {
  // CSV cells are text, JSON values numbers: both.
  integer: fc.oneof(positive, positive.map(String)),
  email: fc
    .tuple(lowerWord, lowerWord, fc.constantFrom('example.com', 'Acme.example', 'mail.example.org'))
    .map(([a, b, d]) => `${a}.${b}@${d}`),
  website: fc
    .tuple(lowerWord, fc.constantFrom('com', 'example', 'io', 'co.uk'), fc.nat({ max: 2 }))
    .map(([w, tld, form]) =>
      form === 0
        ? `${w}.${tld}`
        : form === 1
          ? `https://www.${w}.${tld}/`
          : `http://${w}.${tld}/about`,
    ),
  'salesforce-id': fc
    .tuple(
      fc.constantFrom('001', '005', '00Q'),
      fc.stringMatching(/^[0-9A-Za-z]{12}$/),
      fc.boolean(),
    )
    .map(([prefix, rest, long]) => {
      const id15 = prefix + rest;
      return long ? id15 + salesforceChecksum(id15) : id15;
    }),
  boolean: fc.constantFrom(true, false, 'true', 'false', '1', '0'),
  guid: fc.uuid().chain((u) => fc.constantFrom(u, u.toUpperCase())),
  name: fc.tuple(word, word).map(([a, b]) => `${a} ${b}`),
  text: fc.oneof(
    {
      weight: 6,
      arbitrary: fc.array(word, { minLength: 1, maxLength: 3 }).map((ws) => ws.join(' ')),
    },
    {
      weight: 2,
      arbitrary: fc.array(word, { minLength: 1, maxLength: 2 }).map((ws) => `  ${ws.join(' ')} `),
    },
    // A JSON number where text is read (a count, a code): written as text.
    { weight: 1, arbitrary: positive },
  ),
  id: fc.oneof(
    fc.stringMatching(/^[a-z0-9][a-z0-9_-]{0,23}$/),
    fc.stringMatching(/^[1-9]\d{18}$/),
    positive,
  ),
};

function segmentsOf(path: string): Segment[] {
  const parsed = parsePath(path);
  if (parsed instanceof PathSyntax) throw new Error(`${path}: ${parsed.reason}`);
  return parsed.segments;
}

/**
 * `container` with `value` at `segments`, building objects and lists on the
 * way (a copy). With `keep`, a value already there stays: two reads of one
 * path (`domains[0].domain` and `domains[*].domain`) share the first value.
 */
function setIn(
  container: unknown,
  segments: readonly Segment[],
  value: unknown,
  keep = false,
): unknown {
  const [s, ...rest] = segments;
  if (s === undefined) return keep && container !== undefined ? container : value;
  if (s === ALL) {
    const items = Array.isArray(container) && container.length > 0 ? container : [{}];
    return items.map((item) => setIn(item, rest, value, keep));
  }
  if ('index' in s) {
    const items = Array.isArray(container) ? [...container] : [];
    for (let i = 0; i < s.index; i++) items[i] ??= {};
    items[s.index] = setIn(items[s.index], rest, value, keep);
    return items;
  }
  const obj =
    container !== null && typeof container === 'object' && !Array.isArray(container)
      ? { ...(container as Record<string, unknown>) }
      : {};
  obj[s.key] = setIn(obj[s.key], rest, value, keep);
  return obj;
}

/** `container` without what is at `segments` (a copy; unchanged when nothing is there). */
function removeIn(container: unknown, segments: readonly Segment[]): unknown {
  const [s, ...rest] = segments;
  if (s === undefined || container === null || typeof container !== 'object') return container;
  if (s === ALL)
    return Array.isArray(container) ? container.map((item) => removeIn(item, rest)) : container;
  if (Array.isArray(container)) {
    if (!('index' in s) || s.index >= container.length) return container;
    const items = [...container];
    items[s.index] = rest.length === 0 ? null : removeIn(items[s.index], rest);
    return items;
  }
  const obj = { ...(container as Record<string, unknown>) };
  if (!Object.hasOwn(obj, s.key)) return obj;
  if (rest.length === 0) delete obj[s.key];
  else obj[s.key] = removeIn(obj[s.key], rest);
  return obj;
}

/** One path the preset reads, as alternatives (`from` lists, `{A ?? B}`), and what it reads it as. */
interface Read {
  alternatives: Segment[][];
  kind: Kind;
}

function readsOf(preset: RawPreset): Read[] {
  const reads: Read[] = [];
  const entries = [...Object.values(preset.fields ?? {}), ...Object.values(preset.custom ?? {})];
  for (const e of entries) {
    if (e.from !== undefined) {
      const from = Array.isArray(e.from) ? e.from : [e.from];
      reads.push({
        alternatives: from.map(segmentsOf),
        kind: kindOf(transformNames(e.transforms), false),
      });
    }
    for (const m of (e.template ?? '').matchAll(/(?<!\{)\{([^{}]+)\}/g)) {
      const [paths, ...transforms] = m[1]!.split('|').map((p) => p.trim());
      reads.push({
        alternatives: paths!.split('??').map((p) => segmentsOf(p.trim())),
        kind: kindOf(transforms, true),
      });
    }
  }
  return reads;
}

/** A value of the rule's path that the rule does not match, or (`match`) one it does. */
function ruleValue(rule: RawRule, match: boolean): fc.Arbitrary<unknown> | undefined {
  const other = (list: Scalar[]): Scalar =>
    typeof list[0] === 'number'
      ? Math.max(...list.map(Number)) + 1
      : typeof list[0] === 'boolean'
        ? !list[0]
        : `not-${String(list[0])}`;
  if (rule.present !== undefined) return rule.present === match ? fc.constant('x') : undefined;
  if (rule.equals !== undefined) return fc.constant(match ? rule.equals : other([rule.equals]));
  if (rule.in !== undefined)
    return match ? fc.constantFrom(...rule.in) : fc.constant(other(rule.in));
  if (rule.notIn !== undefined)
    return match ? fc.constant(other(rule.notIn)) : fc.constantFrom(...rule.notIn);
  return undefined;
}

/**
 * Records for `preset`: most valid-looking (`valid`), some with one to three
 * cells broken (`broken`), a few matching one of its skip rules (`skip-rule`).
 */
export function presetRows(preset: RawPreset): fc.Arbitrary<PresetRow> {
  const reads = readsOf(preset);
  const rules = Object.values(preset.skip ?? {}).filter((r) => r.from !== undefined);
  const rulePath = (r: RawRule) => segmentsOf(Array.isArray(r.from) ? r.from[0]! : r.from!);

  // Each read takes one of its alternatives, so every shape a preset reads comes up.
  const valid = fc
    .tuple(
      fc.tuple(
        ...reads.map((r) => fc.tuple(fc.nat({ max: r.alternatives.length - 1 }), VALUES[r.kind])),
      ),
      fc.tuple(...rules.map((r) => ruleValue(r, false) ?? fc.constant(undefined))),
    )
    .map(([picked, ruleValues]) => {
      let record: unknown = {};
      picked.forEach(([alt, value], i) => {
        record = setIn(record, reads[i]!.alternatives[alt]!, value, true);
      });
      ruleValues.forEach((value, i) => {
        if (value !== undefined) record = setIn(record, rulePath(rules[i]!), value);
      });
      return record as Record<string, unknown>;
    });

  const paths = [...reads.flatMap((r) => r.alternatives), ...rules.map(rulePath)];
  const change = fc.oneof(
    { weight: 4, arbitrary: hostileCell.map((value) => ({ value })) },
    // The cell is not there at all (a column or key missing).
    { weight: 1, arbitrary: fc.constant({ remove: true as const }) },
  );
  const broken = fc
    .tuple(
      valid,
      fc.array(fc.tuple(fc.nat({ max: paths.length - 1 }), change), {
        minLength: 1,
        maxLength: 3,
      }),
    )
    .map(([record, changes]): PresetRow => {
      let out: unknown = record;
      for (const [at, c] of changes)
        out = 'remove' in c ? removeIn(out, paths[at]!) : setIn(out, paths[at]!, c.value);
      return { record: out as Record<string, unknown>, shape: 'broken' };
    });

  const matching = rules.flatMap((r) => {
    const v = ruleValue(r, true);
    return v ? [{ rule: r, value: v }] : [];
  });
  const skipped =
    matching.length === 0
      ? undefined
      : fc.tuple(valid, fc.constantFrom(...matching)).chain(([record, m]) =>
          m.value.map((value): PresetRow => ({
            record: setIn(record, rulePath(m.rule), value) as Record<string, unknown>,
            shape: 'skip-rule',
          })),
        );

  return fc.oneof(
    { weight: 6, arbitrary: valid.map((record): PresetRow => ({ record, shape: 'valid' })) },
    { weight: 3, arbitrary: broken },
    ...(skipped ? [{ weight: 1, arbitrary: skipped }] : []),
  );
}
