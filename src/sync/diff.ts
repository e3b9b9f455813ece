/**
 * Field-level difference between what the platform holds and what we would
 * send. Only fields present in `after` are compared: we send only mapped
 * fields, so a platform field the mapping does not touch is never a change.
 *
 * Values are sent as the CRM spells them, so two spellings of one value must
 * not look like a change: websites and e-mail addresses are compared in a
 * canonical form (`comparable`). The form is for comparison only; nothing
 * sent is rewritten to it.
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
 * A website without what does not change where it leads: no scheme (http and
 * https are one site), the host in lower case and in ASCII (IDN as punycode),
 * without a leading `www.` or a trailing dot, no default port, no trailing
 * slash on the path. Query and fragment stay. Text that is not a URL is
 * compared as it is.
 */
export function canonicalWebsite(value: string): string {
  const s = value.trim();
  const m = /^(?:https?:)?\/\//i.exec(s);
  if (!m && /^[a-z][a-z0-9+.-]*:(?!\d)/i.test(s)) return s;
  let url: URL;
  try {
    url = new URL(`https://${s.slice(m ? m[0].length : 0)}`);
  } catch {
    return s;
  }
  let host = url.hostname.replace(/\.$/, '');
  if (host.startsWith('www.')) host = host.slice(4);
  const user = url.username ? `${url.username}${url.password ? `:${url.password}` : ''}@` : '';
  const port = url.port && url.port !== '80' ? `:${url.port}` : '';
  return `${user}${host}${port}${url.pathname.replace(/\/+$/, '')}${url.search}${url.hash}`;
}

/** E-mail addresses are one address whatever their case (as identity keys treat them). */
function canonicalEmail(value: string): string {
  return value.trim().toLowerCase();
}

const COMPARE: Readonly<Record<string, (value: string) => string>> = {
  website: canonicalWebsite,
  email: canonicalEmail,
};

/** The form `field`'s value is compared in: canonical JSON, after the field's own canonical form. */
export function comparable(field: string, value: unknown): string {
  const canonical = Object.hasOwn(COMPARE, field) ? COMPARE[field] : undefined;
  return canonicalJson(canonical && typeof value === 'string' ? canonical(value) : value);
}

/**
 * The fields of `after` whose value differs from `before`, in sorted field
 * order, compared as canonical JSON (so `{a:1,b:2}` equals `{b:2,a:1}`), with
 * websites and e-mail addresses in their canonical forms (`comparable`). A
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
    if (comparable(field, from) !== comparable(field, to)) changes.push({ field, from, to });
  }
  return changes;
}
