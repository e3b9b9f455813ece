/**
 * The platform's values of the fields we could send: what a listed record is
 * compared against to adopt it or to show a field-level diff. Only request
 * ("both") fields are kept; response-only fields (id, timestamps, avatar)
 * can never be part of a body, and storing them would only cost memory.
 */
import { CompanyRequest, MemberRequest } from '../platform/schemas.js';
import type { Entity } from './identity.js';

// Icon fields are write-only in practice (a file or base64 going in, a URL
// coming out): comparing them would report a change on every run.
const WRITE_ONLY = new Set(['icon', 'icon_base64', 'icon_delete']);

const FIELDS: Record<Entity, readonly string[]> = {
  companies: Object.keys(CompanyRequest.shape).filter((f) => !WRITE_ONLY.has(f)),
  members: Object.keys(MemberRequest.shape).filter((f) => !WRITE_ONLY.has(f)),
};

/** The request fields of an entity that a listed record's values are kept for. */
export function remoteFields(entity: Entity): readonly string[] {
  return FIELDS[entity];
}

/**
 * The values of `record`'s request fields; `null` values are kept (the
 * platform says "empty"), absent ones are left out.
 */
export function remoteValues(
  entity: Entity,
  record: Readonly<Record<string, unknown>>,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of FIELDS[entity]) {
    const v = record[f];
    if (v !== undefined) out[f] = v;
  }
  return out;
}
