/**
 * Declarative mappings: a YAML (or inline) definition of how a CRM row becomes
 * a platform request body, validated with zod (every problem, with its path)
 * and compiled once into closures, so that mapping a row does no lookups in
 * the definition. The format is documented in docs/MAPPING.md.
 */
import { z } from 'zod';
import { CompanyRequest, MemberRequest } from '../platform/schemas.js';
import { identityFields, identityKeys } from '../sync/identity.js';
import {
  Failure,
  Field,
  compileField,
  fieldKind,
  pathUses,
  readFrom,
  shown,
  warningOf,
  type Evaluator,
  type FieldDef,
} from './field.js';
import type {
  CompiledMapping,
  Entity,
  FieldWarning,
  MapResult,
  MappedBody,
  SkippedRow,
} from './mapped.js';
import { DuplicatesSection, compileDuplicates, duplicatesPathUses } from './duplicates.js';
import { readingRecord } from './record-ref.js';
import type { SourceRow } from './row.js';
import {
  SkipSection,
  chooseSkipRules,
  compileSkipRules,
  firstSkip,
  type CompiledSkipRule,
} from './skip-rules.js';

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

export const MappingDefinition = z
  .strictObject({
    name: z.string().regex(/^[a-z0-9][a-z0-9_-]*$/, 'lower-case letters, digits, - and _'),
    version: z.number().int().positive(),
    entity: z.enum(['companies', 'members']),
    description: z.string().optional(),
    nullMarkers: z.array(z.string()).default(DEFAULT_NULL_MARKERS),
    /** Rows that are not live records (deleted, merged, …), checked before the fields. */
    skip: SkipSection.optional(),
    /** Which row keeps a record several rows claim (src/sync/survivors.ts); none: all conflict. */
    duplicates: DuplicatesSection.optional(),
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
  const longest = Math.max(0, ...[...markers].map((s) => s.length));
  const isNull = (v: unknown): boolean => {
    if (v === undefined || v === null) return true;
    if (typeof v === 'string') {
      // Longer than every marker, with printable ASCII at both ends (so
      // nothing to trim): not a marker, without trimming or hashing the text.
      const n = v.length;
      if (n > longest) {
        const a = v.charCodeAt(0);
        const b = v.charCodeAt(n - 1);
        if (a > 0x20 && a < 0x7f && b > 0x20 && b < 0x7f) return false;
      }
      return markers.has(v.trim());
    }
    return (typeof v === 'number' || typeof v === 'boolean') && markers.has(String(v));
  };

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
          json += `${json === '' ? '{' : ','}${c.prefix}${jsonText(v)}`;
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
  const duplicates = compileDuplicates(m.duplicates);
  const paths = [
    ...Object.entries(m.fields).flatMap(([name, def]) => pathUses(`fields.${name}`, def)),
    ...Object.entries(m.custom ?? {}).flatMap(([key, def]) => pathUses(`custom.${key}`, def)),
    ...duplicatesPathUses(duplicates),
  ];
  const build = (rules: CompiledSkipRule[]): CompiledMapping => {
    const map = (row: SourceRow): MapResult => {
      const line = row.line;
      if (!('record' in row)) return { ok: false, line, field: '(row)', reason: row.problem };
      const rec = row.record;
      if (rec === null || typeof rec !== 'object' || Array.isArray(rec)) {
        return { ok: false, line, field: '(row)', reason: 'expected an object' };
      }
      const out = readingRecord(rec, () => mapRecord(line, rec));
      // The reader's warning on the row (row.ts), first of the warnings of a row that maps.
      return row.warning === undefined ? out : withRowWarning(out, row.warning);
    };
    const mapRecord = (line: number, rec: Rec): MapResult => {
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
      skips: (rec) => firstSkip(rules, rec) !== undefined,
      duplicates,
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

// What JSON.stringify escapes in a string: `"`, `\`, control characters and
// (lone) surrogates. A string with none of them is itself between quotes.
// eslint-disable-next-line no-control-regex
const JSON_ESCAPED = /["\\\u0000-\u001f\ud800-\udfff]/;

/** JSON.stringify(v), without its cost for the common string that needs no escape. */
function jsonText(v: unknown): string {
  return typeof v === 'string' && !JSON_ESCAPED.test(v) ? `"${v}"` : String(JSON.stringify(v));
}

interface CompiledField {
  name: string;
  /** A failure makes the row invalid (else the field is dropped with a warning). */
  strict: boolean;
  eval: Evaluator;
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

/** `out` with the reader's warning on its row first among its warnings, when it maps. */
function withRowWarning(out: MapResult, reason: string): MapResult {
  if (!out.ok) return out;
  return { ...out, warnings: [{ field: '(row)', reason }, ...(out.warnings ?? [])] };
}
