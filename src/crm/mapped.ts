/**
 * What a compiled mapping produces for each source row: a request body ready
 * for the platform (already valid against its request schema), or the reason
 * the row is refused, with the field at fault and the line it came from.
 */
import type { CompanyRequest, MemberRequest } from '../platform/schemas.js';
import type { DuplicatesRule } from './duplicates.js';
import type { PathUse } from './path-coverage.js';
import type { Entity } from '../sync/identity.js';
import type { SourceRow } from './row.js';

export type { Entity };

export interface BodyOf {
  companies: CompanyRequest;
  members: MemberRequest;
}

export type MappedBody = CompanyRequest | MemberRequest;

/**
 * A value as a report shows it, as the export had it: text as text (cut to
 * 80 characters), a JSON number or boolean as itself (Odoo's `false` stays
 * `false`, not the text "false"), a list or object as its JSON text (cut).
 */
export type ShownValue = string | number | boolean;

/**
 * An optional field whose value failed: it is left out of the body, and the
 * row still maps. Or the reader's warning on the row (row.ts), as field `(row)`.
 */
export interface FieldWarning {
  /** The platform field, `custom.<key>` for a custom entry, or `(row)`. */
  field: string;
  reason: string;
  /** The value as the export had it (ShownValue); absent when there was none. */
  value?: ShownValue;
}

export interface MappedRow<B extends MappedBody = MappedBody> {
  ok: true;
  /** Physical line where the row starts. */
  line: number;
  body: B;
  /** Fields left out because their value failed, and the reader's warning (absent when none). */
  warnings?: FieldWarning[];
}

export interface InvalidRow {
  ok: false;
  skip?: undefined;
  line: number;
  /** The platform field at fault, `custom.<key>` for a custom entry, or `(row)` for an unreadable row. */
  field: string;
  /** Human reason, e.g. "not a valid e-mail address", "missing: no value in columns Company name". */
  reason: string;
  /** The offending value as the export had it (ShownValue); absent when there was none. */
  value?: ShownValue;
  /** The row's first identity key (`x:…`), when its identity fields mapped: who the row was. */
  identity?: string;
}

/** A row that is not a live record of the CRM (deleted, merged, …): a skip rule of the mapping matched. */
export interface SkippedRow {
  ok: false;
  skip: true;
  line: number;
  /** The skip rule's name. */
  rule: string;
  /** `skip.<rule>`, so that code reading any refused row's field still can. */
  field: string;
  /** The rule's reason, `{value}` filled in. */
  reason: string;
  /** The value the rule read, as the export had it (ShownValue). */
  value?: ShownValue;
  /** The row's first identity key, when its identity fields map. */
  identity?: string;
}

export type MapResult<B extends MappedBody = MappedBody> = MappedRow<B> | InvalidRow | SkippedRow;

export interface CompiledMapping<E extends Entity = Entity> {
  name: string;
  entity: E;
  version: number;
  /** `name@version`: part of every record's content hash, so a version bump re-syncs. */
  fingerprint: string;
  map(row: SourceRow): MapResult<BodyOf[E]>;
  /** What each field reads (columns, paths, placeholders), for path coverage (path-coverage.ts). */
  paths: readonly PathUse[];
  /** Names of the mapping's skip rules, in the order they are checked. */
  skipRules: readonly string[];
  /** Whether one of its skip rules skips the record (as `map` would, before any field). */
  skips(record: Record<string, unknown>): boolean;
  /** Which row keeps a record several rows claim: the mapping's `duplicates` (default `none`). */
  duplicates: DuplicatesRule;
  /**
   * The same mapping with some skip rules turned off (`{ merged: false }`, a
   * job's `skip`). Throws MappingError naming the known rules for an unknown name.
   */
  withSkipRules(overrides: Readonly<Record<string, boolean>>): CompiledMapping<E>;
}
