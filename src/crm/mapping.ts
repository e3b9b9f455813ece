/**
 * Declarative mappings: a YAML (or inline) definition of how a CRM row becomes
 * a platform request body, validated with zod (every problem, with its path)
 * and compiled once into closures, so that mapping a row does no lookups in
 * the definition. The format is documented in docs/MAPPING.md.
 */
import { z } from 'zod';
import { CompanyRequest, MemberRequest } from '../platform/schemas.js';
import { identityFields, identityKeys } from '../sync/identity.js';
import type {
  CompiledMapping,
  Entity,
  FieldWarning,
  MapResult,
  MappedBody,
  ShownValue,
  SkippedRow,
} from './mapped.js';
import type { SourceRow } from './row.js';
import type { PathUse } from './path-coverage.js';
import { compileRef } from './record-ref.js';
import {
  SkipSection,
  chooseSkipRules,
  compileSkipRules,
  firstSkip,
  type CompiledSkipRule,
} from './skip-rules.js';
import {
  Invalid,
  TransformSpecSchema,
  buildTransform,
  pipeline,
  toBoolean,
  toInteger,
  type Transform,
} from './transforms.js';

export const DEFAULT_NULL_MARKERS = ['', 'N/A', '#N/A'];

export class MappingError extends Error {
  constructor(
    readonly code: 'mapping.invalid' | 'mapping.not-found',
    /** Every problem, each prefixed with its path, e.g. `fields.website.transforms[1]: …`. */
    readonly problems: string[],
    options?: { cause?: unknown },
  ) {
    super(problems.join('\n'), options);
    this.name = 'MappingError';
  }
}

const REQUEST_SCHEMAS = { companies: CompanyRequest, members: MemberRequest } as const;

// ---------------------------------------------------------------- schema

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
const Field = z.preprocess((v) => (typeof v === 'string' ? { from: v } : v), FieldObject);
type FieldDef = z.output<typeof FieldObject>;

export const MappingDefinition = z
  .strictObject({
    name: z.string().regex(/^[a-z0-9][a-z0-9_-]*$/, 'lower-case letters, digits, - and _'),
    version: z.number().int().positive(),
    entity: z.enum(['companies', 'members']),
    description: z.string().optional(),
    nullMarkers: z.array(z.string()).default(DEFAULT_NULL_MARKERS),
    /** Rows that are not live records (deleted, merged, …), checked before the fields. */
    skip: SkipSection.optional(),
    fields: z.record(z.string(), Field),
    /** A list of columns (keys as written), or key → field. Stored as JSON in `custom`. */
    // A list is shorthand for key = column; one record schema keeps inner problems' paths.
    custom: z
      .preprocess(
        (v) =>
          Array.isArray(v) && v.every((c) => typeof c === 'string')
            ? Object.fromEntries(v.map((c) => [c, c]))
            : v,
        z.record(z.string(), Field),
      )
      .optional(),
  })
  // Runs even when another part failed, so that every problem is reported at once.
  .superRefine((m, ctx) => checkFields(m, ctx), { when: () => true });

/** Field names against the entity's request schema; the input may be partly invalid here. */
function checkFields(
  m: { entity?: unknown; fields?: unknown; custom?: unknown },
  ctx: z.RefinementCtx,
) {
  if (!m.fields || typeof m.fields !== 'object') return;
  const keys = Object.keys(m.fields);
  if (keys.length === 0) {
    ctx.addIssue({ code: 'custom', path: ['fields'], message: 'map at least one field' });
  }
  if (m.entity !== 'companies' && m.entity !== 'members') return;
  const shape = REQUEST_SCHEMAS[m.entity].shape;
  for (const key of keys) {
    if (!Object.hasOwn(shape, key)) {
      ctx.addIssue({
        code: 'custom',
        path: ['fields', key],
        message: `not a ${m.entity} request field (known: ${Object.keys(shape).join(', ')})`,
      });
    } else if (key === 'custom' && m.custom !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['fields', key],
        message: 'custom is built from the custom section; map it in one place only',
      });
    }
  }
}

export type MappingDefinitionInput = z.input<typeof MappingDefinition>;
export type MappingDefinitionOutput = z.output<typeof MappingDefinition>;

function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const p of path) {
    if (typeof p === 'number') out += `[${p}]`;
    else out += out === '' ? String(p) : `.${String(p)}`;
  }
  return out || '(top level)';
}

/** zod issues as `path: message` lines, for every schema of this project's YAML files. */
export function formatIssues(error: z.ZodError, prefix = ''): string[] {
  return error.issues.map((i) => {
    const path = formatPath(i.path);
    return `${prefix}${prefix && path !== '(top level)' ? '.' : ''}${path}: ${i.message}`;
  });
}

// ---------------------------------------------------------------- compile

type Rec = Record<string, unknown>;
type Getter = (rec: Rec) => unknown;
type FieldKind = 'string' | 'email' | 'integer' | 'boolean' | 'object' | 'list' | 'json';

interface SchemaNode {
  def: { type: string; innerType?: SchemaNode; format?: string };
}

/** The platform field's type, read from its zod schema so the two never drift. */
function fieldKind(schema: unknown): FieldKind {
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
function shown(v: unknown): ShownValue | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'number' || typeof v === 'boolean') return v;
  const s = typeof v === 'string' ? v : (JSON.stringify(v) ?? String(v));
  return s.length > 80 ? s.slice(0, 80) : s;
}

/** One field's failure: the reason and the offending value. */
class Failure {
  constructor(
    readonly reason: string,
    readonly value?: unknown,
    /** Set for entries of custom: `custom.<key>`. */
    readonly field?: string,
  ) {}
}
/** A field's value, null when absent, or a Failure; dropped custom entries go to `warnings`. */
type Evaluator = (rec: Rec, warnings: FieldWarning[]) => unknown;

/** Reads a `from` (a column or path, or a list of them where the first non-null wins); null when absent. */
function readFrom(from: string | string[], isNull: (v: unknown) => boolean): Getter {
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

function compileField(def: FieldDef, kind: FieldKind, isNull: (v: unknown) => boolean) {
  const transform = pipeline(def.transforms);
  const coerce = COERCE[kind];
  let read: (rec: Rec) => unknown;
  let columns: string[] = [];
  if (def.constant !== undefined) {
    const c = def.constant;
    read = () => c;
  } else if (def.template !== undefined) {
    const parts = parseTemplate(def.template) as TemplatePart[];
    const compiled = parts.map((p) => ({
      literal: p.literal,
      get: p.refs === undefined ? null : readFrom(p.refs, isNull),
      ref: p.ref,
      transform: pipeline((p.transforms ?? []).map((t) => buildTransform(t) as Transform)),
    }));
    columns = parts.flatMap((p) => p.refs ?? []);
    read = (rec) => {
      let out = '';
      for (const p of compiled) {
        out += p.literal;
        if (p.get === null) continue;
        const raw = p.get(rec);
        if (isNull(raw)) return null;
        // Placeholders are trimmed: a stray space must never make a new identity.
        const v = p.transform(typeof raw === 'string' ? raw.trim() : raw);
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

/** Validates a definition and compiles it; throws MappingError with every problem. */
export interface CompileOptions {
  /** Prefix of every problem's path, e.g. `mapping` for a mapping inside a job file. */
  origin?: string;
  /**
   * Also parse every mapped body with the platform's zod request schema. The
   * per-field conversions already give exactly what the schema accepts (unit
   * tests check that every accepted body passes it), so this only costs time:
   * about a third of the mapping (docs/BENCHMARKS.md). For debugging.
   */
  verifyWithSchema?: boolean;
}

export function compileMapping<E extends Entity = Entity>(
  input: unknown,
  options: CompileOptions = {},
): CompiledMapping<E> {
  const origin = options.origin ?? '';
  const verify = options.verifyWithSchema ?? false;
  const parsed = MappingDefinition.safeParse(input);
  if (!parsed.success) {
    throw new MappingError('mapping.invalid', formatIssues(parsed.error, origin));
  }
  const m = parsed.data;
  const schema = REQUEST_SCHEMAS[m.entity];
  const shape = schema.shape as Record<string, unknown>;
  const markers = new Set(m.nullMarkers.map((s) => s.trim()));
  // JSON scalars match a marker by their text: Odoo writes an empty field as
  // `false`, which `nullMarkers: ["", "false"]` makes absent.
  const isNull = (v: unknown): boolean =>
    v === undefined ||
    v === null ||
    (typeof v === 'string'
      ? markers.has(v.trim())
      : (typeof v === 'number' || typeof v === 'boolean') && markers.has(String(v)));

  // A failing value costs only its field, unless the field is strict: required,
  // an identity (a row must never be synced under a different identity), or
  // marked `onInvalid: reject-row`.
  const identity = new Set(identityFields(m.entity));
  const fields: CompiledField[] = Object.entries(m.fields).map(([name, def]) => ({
    name,
    strict: def.required || def.onInvalid === 'reject-row' || identity.has(name),
    eval: compileField(def, fieldKind(shape[name]), isNull),
  }));
  const idFields = fields.filter((f) => identity.has(f.name));

  if (m.custom !== undefined) {
    const entries: [string, FieldDef][] = Object.entries(m.custom);
    const custom = entries.map(([key, def]) => ({
      field: `custom.${key}`,
      strict: def.required || def.onInvalid === 'reject-row',
      // The JSON is written directly, in the mapping's key order: cheaper than
      // building an object per row, and integer-like keys keep their place.
      prefix: `${JSON.stringify(key)}:`,
      eval: compileField(def, 'json', isNull),
    }));
    fields.push({
      name: 'custom',
      // A failing entry that is not strict is dropped here, with its warning.
      strict: true,
      eval: (rec, warnings) => {
        let json = '';
        for (const c of custom) {
          const v = c.eval(rec);
          if (v === null) continue;
          if (v instanceof Failure) {
            if (c.strict) return new Failure(v.reason, v.value, c.field);
            warnings.push(warningOf(c.field, v));
            continue;
          }
          json += `${json === '' ? '{' : ','}${c.prefix}${JSON.stringify(v)}`;
        }
        return json === '' ? null : `${json}}`;
      },
    });
  }

  /** The first identity key of the identity fields that do map (for a row refused anyway). */
  const identityOf = (rec: Rec): string | undefined => {
    const ids: Rec = {};
    for (const f of idFields) {
      const v = f.eval(rec, []);
      if (v !== null && !(v instanceof Failure)) ids[f.name] = v;
    }
    return identityKeys(m.entity, ids)[0];
  };

  const allRules = compileSkipRules(m.skip, {
    reader: (from) => readFrom(from, isNull),
    shown,
  });

  const name = m.name;
  const version = m.version;
  const paths = [
    ...Object.entries(m.fields).flatMap(([name, def]) => pathUses(`fields.${name}`, def)),
    ...Object.entries(m.custom ?? {}).flatMap(([key, def]) => pathUses(`custom.${key}`, def)),
  ];
  const build = (rules: CompiledSkipRule[]): CompiledMapping => {
    const map = (row: SourceRow): MapResult => {
      const line = row.line;
      if (!('record' in row)) return { ok: false, line, field: '(row)', reason: row.problem };
      const rec = row.record;
      if (rec === null || typeof rec !== 'object' || Array.isArray(rec)) {
        return { ok: false, line, field: '(row)', reason: 'expected an object' };
      }
      // Before any field: a row that is not a live record is never invalid.
      if (rules.length > 0) {
        const hit = firstSkip(rules, rec);
        if (hit) {
          const out: SkippedRow = {
            ok: false,
            skip: true,
            line,
            field: `skip.${hit.rule}`,
            ...hit,
          };
          const id = identityOf(rec);
          if (id !== undefined) out.identity = id;
          return out;
        }
      }
      const body: Rec = {};
      const warnings: FieldWarning[] = [];
      for (const f of fields) {
        const v = f.eval(rec, warnings);
        if (v === null) continue;
        if (v instanceof Failure) {
          if (!f.strict) {
            warnings.push(warningOf(f.name, v));
            continue;
          }
          return invalid(line, v.field ?? f.name, v.reason, v.value, identityOf(rec));
        }
        body[f.name] = v;
      }
      let out = body;
      if (verify) {
        const checked = schema.safeParse(body);
        if (!checked.success) {
          const issue = checked.error.issues[0]!;
          const field = String(issue.path[0] ?? '(row)');
          return invalid(line, field, issue.message, body[field], identityOf(rec));
        }
        out = checked.data as Rec;
      }
      return warnings.length === 0
        ? { ok: true, line, body: out as MappedBody }
        : { ok: true, line, body: out as MappedBody, warnings };
    };
    return {
      name,
      entity: m.entity,
      version,
      fingerprint: `${name}@${version}`,
      map,
      skipRules: rules.map((r) => r.name),
      paths,
      withSkipRules(overrides) {
        const chosen = chooseSkipRules(allRules, overrides);
        if (chosen.problems.length > 0) {
          throw new MappingError(
            'mapping.invalid',
            chosen.problems.map((p) => `skip.${p.name}: ${p.message}`),
          );
        }
        return build(chosen.rules);
      },
    };
  };
  return build(allRules) as CompiledMapping<E>;
}

/** What a field reads, for path coverage: its `from` list, or each template placeholder. */
function pathUses(field: string, def: FieldDef): PathUse[] {
  const required = def.required && def.default === undefined;
  if (def.from !== undefined)
    return [{ field, refs: typeof def.from === 'string' ? [def.from] : def.from, required }];
  if (def.template === undefined) return [];
  return (parseTemplate(def.template) as TemplatePart[]).flatMap((p) =>
    p.refs === undefined ? [] : [{ field, refs: p.refs, required }],
  );
}

interface CompiledField {
  name: string;
  /** A failure makes the row invalid (else the field is dropped with a warning). */
  strict: boolean;
  eval: Evaluator;
}

function warningOf(field: string, f: Failure): FieldWarning {
  const value = shown(f.value);
  return value === undefined ? { field, reason: f.reason } : { field, reason: f.reason, value };
}

function invalid(
  line: number,
  field: string,
  reason: string,
  raw: unknown,
  identity: string | undefined,
): MapResult {
  const value = shown(raw);
  return {
    ok: false,
    line,
    field,
    reason,
    ...(value !== undefined && { value }),
    ...(identity !== undefined && { identity }),
  };
}
