/**
 * One field of a mapping: its definition (a column, a template or a
 * constant, with transforms, a default, `required` and `onInvalid`) and its
 * compiled evaluator, which reads the value from a record, transforms it and
 * converts it to the platform field's type. An evaluator returns the value,
 * null when absent, or a `Failure` with the reason and the value at fault;
 * the mapping (mapping.ts) decides what a failure costs.
 */
import { z } from 'zod';
import type { FieldWarning, ShownValue } from './mapped.js';
import type { PathUse } from './path-coverage.js';
import { compileRef } from './record-ref.js';
import {
  Invalid,
  TransformSpecSchema,
  buildTransform,
  pipeline,
  toBoolean,
  toInteger,
  type Transform,
} from './transforms.js';

const Scalar = z.union([z.string(), z.number(), z.boolean()]);

const FieldObject = z
  .strictObject({
    from: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]).optional(),
    template: z.string().min(1).optional(),
    constant: Scalar.optional(),
    default: Scalar.optional(),
    transforms: z.array(TransformSpecSchema).default([]),
    required: z.boolean().default(false),
    /**
     * What a failing value costs: `drop-field` leaves the field out and warns,
     * `reject-row` makes the row invalid. Required and identity fields always reject.
     */
    onInvalid: z.enum(['drop-field', 'reject-row']).default('drop-field'),
  })
  .superRefine((f, ctx) => {
    const sources = (['from', 'template', 'constant'] as const).filter((k) => f[k] !== undefined);
    if (sources.length !== 1) {
      ctx.addIssue({
        code: 'custom',
        message:
          sources.length === 0
            ? 'needs one of from, template or constant'
            : `set only one of from, template or constant (got ${sources.join(', ')})`,
      });
    }
    if (f.template !== undefined) {
      const parsed = parseTemplate(f.template);
      if (typeof parsed === 'string')
        ctx.addIssue({ code: 'custom', path: ['template'], message: parsed });
    }
  });

/** A field: a column name (shorthand) or a full field object. */
export const Field = z.preprocess((v) => (typeof v === 'string' ? { from: v } : v), FieldObject);
export type FieldDef = z.output<typeof FieldObject>;

type Rec = Record<string, unknown>;
export type Getter = (rec: Rec) => unknown;
export type FieldKind = 'string' | 'email' | 'integer' | 'boolean' | 'object' | 'list' | 'json';

interface SchemaNode {
  def: { type: string; innerType?: SchemaNode; format?: string };
}

/** The platform field's type, read from its zod schema so the two never drift. */
export function fieldKind(schema: unknown): FieldKind {
  let s = schema as SchemaNode;
  while ((s.def.type === 'optional' || s.def.type === 'nullable') && s.def.innerType) {
    s = s.def.innerType;
  }
  switch (s.def.type) {
    case 'number':
      return 'integer';
    case 'boolean':
      return 'boolean';
    case 'record':
    case 'object':
      return 'object';
    case 'array':
      return 'list';
    default:
      return s.def.format === 'email' ? 'email' : 'string';
  }
}

const EMAIL = z.regexes.email;

/** Converts a mapped value to the platform field's type, with the human reason when it cannot. */
const COERCE: Record<FieldKind, Transform> = {
  string: (v) =>
    typeof v === 'string'
      ? v
      : typeof v === 'number' || typeof v === 'boolean'
        ? String(v)
        : new Invalid(`expected text, got ${Array.isArray(v) ? 'a list' : typeof v}`),
  email: (v) =>
    typeof v === 'string' && EMAIL.test(v) ? v : new Invalid('not a valid e-mail address'),
  integer: toInteger,
  boolean: toBoolean,
  object: (v) =>
    v !== null && typeof v === 'object' && !Array.isArray(v)
      ? v
      : new Invalid('expected an object'),
  list: (v) =>
    Array.isArray(v) && v.every((x) => typeof x === 'string')
      ? v
      : typeof v === 'string'
        ? [v]
        : new Invalid('expected a list of text values'),
  // Entries of `custom` keep their JSON type: it is serialised as a whole.
  json: (v) => v,
};

/**
 * Reads a column or a path (record-ref.ts, json-path.ts): an exact column
 * first, else one matching case-insensitively after trimming (Data Loader
 * before v61 wrote `NAME`), else the path (`values.name[0].value`).
 */
function getter(ref: string): Getter {
  return compileRef(ref).read;
}

interface TemplatePart {
  literal: string;
  /** The placeholder as written, e.g. `Record ID ?? id`. */
  ref?: string;
  /** Its alternatives: the first present one is used (`{Record ID ?? id}`: a UI export or an API record). */
  refs?: string[];
  transforms?: string[];
}

/**
 * `hubspot:company:{Record ID}` → parts; `{{` and `}}` are literal braces;
 * `{Record ID ?? id|integer}` reads the first of its alternatives that is
 * present. A string is the problem.
 */
function parseTemplate(template: string): TemplatePart[] | string {
  const parts: TemplatePart[] = [];
  let literal = '';
  for (let i = 0; i < template.length; i++) {
    const c = template[i];
    const next = template[i + 1];
    if ((c === '{' && next === '{') || (c === '}' && next === '}')) {
      literal += c;
      i++;
    } else if (c === '{') {
      const end = template.indexOf('}', i);
      if (end < 0) return `unclosed { at character ${i + 1}`;
      const [ref = '', ...transforms] = template
        .slice(i + 1, end)
        .split('|')
        .map((s) => s.trim());
      if (ref === '') return `empty placeholder at character ${i + 1}`;
      const refs = ref.split('??').map((s) => s.trim());
      if (refs.includes('')) return `{${ref}}: an empty alternative around ??`;
      for (const t of transforms) {
        const built = buildTransform(t);
        if (typeof built === 'string') return `{${ref}|${t}}: ${built}`;
      }
      parts.push({ literal, ref, refs, transforms });
      literal = '';
      i = end;
    } else if (c === '}') {
      return `unmatched } at character ${i + 1}; write }} for a literal brace`;
    } else {
      literal += c;
    }
  }
  if (parts.length === 0) return 'has no {column} placeholder; use constant for a fixed value';
  parts.push({ literal });
  return parts;
}

/** The value for a report, as the export had it (ShownValue): a JSON `false` stays `false`. */
export function shown(v: unknown): ShownValue | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'number' || typeof v === 'boolean') return v;
  const s = typeof v === 'string' ? v : (JSON.stringify(v) ?? String(v));
  return s.length > 80 ? s.slice(0, 80) : s;
}

/** One field's failure: the reason and the offending value. */
export class Failure {
  constructor(
    readonly reason: string,
    readonly value?: unknown,
    /** Set for entries of custom: `custom.<key>`. */
    readonly field?: string,
  ) {}
}
/** A field's value, null when absent, or a Failure; dropped custom entries go to `warnings`. */
export type Evaluator = (rec: Rec, warnings: FieldWarning[]) => unknown;

/** 1 to 15 digits without a leading zero: text that String(toInteger(text)) gives back as it is. */
function plainDigits(s: string): boolean {
  const n = s.length;
  if (n === 0 || n > 15 || (n > 1 && s.charCodeAt(0) === 0x30)) return false;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x30 || c > 0x39) return false;
  }
  return true;
}

/** Reads a `from` (a column or path, or a list of them where the first non-null wins); null when absent. */
export function readFrom(from: string | string[], isNull: (v: unknown) => boolean): Getter {
  const getters = (typeof from === 'string' ? [from] : from).map(getter);
  const first = getters[0]!;
  return getters.length === 1
    ? (rec) => {
        const v = first(rec);
        return isNull(v) ? null : v;
      }
    : (rec) => {
        for (const g of getters) {
          const v = g(rec);
          if (!isNull(v)) return v;
        }
        return null;
      };
}

export function compileField(def: FieldDef, kind: FieldKind, isNull: (v: unknown) => boolean) {
  const transform = pipeline(def.transforms);
  const coerce = COERCE[kind];
  let read: (rec: Rec) => unknown;
  let columns: string[] = [];
  if (def.constant !== undefined) {
    const c = def.constant;
    read = () => c;
  } else if (def.template !== undefined) {
    const parts = parseTemplate(def.template) as TemplatePart[];
    const compiled = parts.map((p) => {
      const transform = pipeline((p.transforms ?? []).map((t) => buildTransform(t) as Transform));
      return {
        literal: p.literal,
        get: p.refs === undefined ? null : readFrom(p.refs, isNull),
        ref: p.ref,
        transform,
        integer: transform === toInteger,
      };
    });
    columns = parts.flatMap((p) => p.refs ?? []);
    read = (rec) => {
      let out = '';
      for (const p of compiled) {
        out += p.literal;
        if (p.get === null) continue;
        const raw = p.get(rec);
        if (isNull(raw)) return null;
        // Placeholders are trimmed: a stray space must never make a new identity.
        const text = typeof raw === 'string' ? raw.trim() : raw;
        // `|integer` of plain digits gives the same digits back: no number to print.
        if (p.integer && typeof text === 'string' && plainDigits(text)) {
          out += text;
          continue;
        }
        const v = p.transform(text);
        if (v === null) return null;
        if (v instanceof Invalid) return new Failure(`${p.ref}: ${v.reason}`, raw);
        if (typeof v === 'object')
          return new Failure(`${p.ref}: expected text, got an object`, raw);
        out += String(v);
      }
      return out;
    };
  } else {
    columns = typeof def.from === 'string' ? [def.from] : (def.from ?? []);
    read = readFrom(columns, isNull);
  }
  const fallback = def.default ?? null;
  const missing = `missing: no value in ${columns.length === 1 ? 'column' : 'columns'} ${columns.join(', ')}`;
  const required = def.required;
  // Returns the value, null when absent, or a Failure.
  return (rec: Rec): unknown => {
    const raw = read(rec);
    if (raw instanceof Failure) return raw;
    let v = raw === null ? null : transform(raw);
    if (v instanceof Invalid) return new Failure(v.reason, raw);
    if (v === null) v = fallback;
    if (v === null) return required ? new Failure(missing) : null;
    const c = coerce(v);
    return c instanceof Invalid ? new Failure(c.reason, v) : c;
  };
}

/** What a field reads, for path coverage: its `from` list, or each template placeholder. */
export function pathUses(field: string, def: FieldDef): PathUse[] {
  const required = def.required && def.default === undefined;
  if (def.from !== undefined)
    return [{ field, refs: typeof def.from === 'string' ? [def.from] : def.from, required }];
  if (def.template === undefined) return [];
  return (parseTemplate(def.template) as TemplatePart[]).flatMap((p) =>
    p.refs === undefined ? [] : [{ field, refs: p.refs, required }],
  );
}

/** A failure of an optional field, as the warning its row carries. */
export function warningOf(field: string, f: Failure): FieldWarning {
  const value = shown(f.value);
  return value === undefined ? { field, reason: f.reason } : { field, reason: f.reason, value };
}
