/**
 * Identity keys: how a CRM record and a platform record are known to be the
 * same. Each entity has identity fields in priority order; a record's keys
 * are short typed strings, one per non-empty identity field, in that order:
 *
 * - companies: `x:<external_id>`, `a:<crm_account_id>`, `c:<crm_company_id>`
 * - members:   `x:<external_id>`, `e:<email, lower-cased>`
 *
 * CRM ids come first on purpose: an e-mail can change, and keying on it alone
 * is how duplicates are born. Values are trimmed; an empty or blank value is
 * no identity. The same function reads CRM bodies and listed platform
 * records, so a listed company matches a CRM record when any identity both
 * carry agrees.
 */

export type Entity = 'companies' | 'members';

export const ENTITIES: readonly Entity[] = ['companies', 'members'];

interface IdentityField {
  field: string;
  tag: string;
  normalize(value: string): string;
}

const asIs = (v: string): string => v;

const FIELDS: Record<Entity, readonly IdentityField[]> = {
  companies: [
    { field: 'external_id', tag: 'x', normalize: asIs },
    { field: 'crm_account_id', tag: 'a', normalize: asIs },
    { field: 'crm_company_id', tag: 'c', normalize: asIs },
  ],
  members: [
    { field: 'external_id', tag: 'x', normalize: asIs },
    // E-mail addresses are case-insensitive in practice; CRMs and the platform disagree on case.
    { field: 'email', tag: 'e', normalize: (v) => v.toLowerCase() },
  ],
};

/** The identity fields of an entity, in priority order. */
export function identityFields(entity: Entity): string[] {
  return FIELDS[entity].map((f) => f.field);
}

function text(value: unknown): string | undefined {
  if (typeof value === 'string') {
    const t = value.trim();
    return t === '' ? undefined : t;
  }
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return undefined;
}

/**
 * The identity keys of a mapped CRM body, in priority order. An empty array
 * means the row has no identity and is invalid (see `noIdentityReason`).
 */
export function identityKeys(entity: Entity, body: Readonly<Record<string, unknown>>): string[] {
  const keys: string[] = [];
  for (const f of FIELDS[entity]) {
    const v = text(body[f.field]);
    if (v !== undefined) keys.push(`${f.tag}:${f.normalize(v)}`);
  }
  return keys;
}

/**
 * The identity keys of a record learned from listing the platform: the same
 * keys as `identityKeys` gives for a CRM body carrying the same values.
 */
export function identityKeysOfPlatformRecord(
  entity: Entity,
  record: Readonly<Record<string, unknown>>,
): string[] {
  return identityKeys(entity, record);
}

/** Why a row without identity is invalid, naming the fields that were all empty. */
export function noIdentityReason(entity: Entity): string {
  const names = identityFields(entity);
  const list =
    names.length === 2
      ? `${names[0]} and ${names[1]} are both empty`
      : `${names.slice(0, -1).join(', ')} and ${names.at(-1)} are all empty`;
  return `no identity: ${list}`;
}

/** A key in words, for reports: `x:ACME-1` → `external_id "ACME-1"`. */
export function describeIdentity(entity: Entity, key: string): string {
  const sep = key.indexOf(':');
  const tag = key.slice(0, sep);
  const field = FIELDS[entity].find((f) => f.tag === tag)?.field ?? tag;
  return `${field} ${JSON.stringify(key.slice(sep + 1))}`;
}
