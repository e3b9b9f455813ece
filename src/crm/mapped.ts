/**
 * What a compiled mapping produces for each source row: a request body ready
 * for the platform (already valid against its request schema), or the reason
 * the row is refused, with the field at fault and the line it came from.
 */
import type { CompanyRequest, MemberRequest } from '../platform/schemas.js';
import type { SourceRow } from './row.js';

export type Entity = 'companies' | 'members';

export interface BodyOf {
  companies: CompanyRequest;
  members: MemberRequest;
}

export type MappedBody = CompanyRequest | MemberRequest;

export interface MappedRow<B extends MappedBody = MappedBody> {
  ok: true;
  /** Physical line where the row starts. */
  line: number;
  body: B;
}

export interface InvalidRow {
  ok: false;
  line: number;
  /** The platform field at fault, `custom.<key>` for a custom entry, or `(row)` for an unreadable row. */
  field: string;
  /** Human reason, e.g. "not a valid e-mail address", "missing: no value in columns Company name". */
  reason: string;
  /** The offending value as text, cut to 80 characters; absent when there was none. */
  value?: string;
}

export type MapResult<B extends MappedBody = MappedBody> = MappedRow<B> | InvalidRow;

export interface CompiledMapping<E extends Entity = Entity> {
  name: string;
  entity: E;
  version: number;
  /** `name@version`: part of every record's content hash, so a version bump re-syncs. */
  fingerprint: string;
  map(row: SourceRow): MapResult<BodyOf[E]>;
}
