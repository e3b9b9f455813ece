/**
 * Salesforce record ids. The API uses 18 characters; reports often show the
 * case-sensitive 15-character form. The 18-character form appends a checksum
 * of three characters that encodes the case of the first 15, so ids are only
 * compared in the 18-character form (see docs/MAPPING.md, Salesforce presets).
 */

const SUFFIX_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ012345';
const ID_CHARS = /^[a-zA-Z0-9]+$/;

export type SalesforceIdResult = { ok: true; id: string } | { ok: false; reason: string };

/** The three checksum characters of a 15-character id (not validated here). */
export function salesforceChecksum(id15: string): string {
  let suffix = '';
  for (let chunk = 0; chunk < 3; chunk++) {
    let v = 0;
    for (let j = 0; j < 5; j++) {
      const c = id15.charCodeAt(chunk * 5 + j);
      // Uppercase A-Z sets bit j.
      if (c >= 65 && c <= 90) v |= 1 << j;
    }
    suffix += SUFFIX_ALPHABET[v];
  }
  return suffix;
}

/**
 * Normalises a Salesforce id to its 18-character form: a 15-character id gets
 * its checksum appended; an 18-character id is kept when its checksum matches
 * its first 15 characters; anything else is invalid, with the reason.
 */
export function toSalesforceId18(raw: string): SalesforceIdResult {
  const id = raw.trim();
  if (id.length !== 15 && id.length !== 18) {
    return { ok: false, reason: `not a Salesforce id: ${id.length} characters, expected 15 or 18` };
  }
  if (!ID_CHARS.test(id)) {
    return { ok: false, reason: 'not a Salesforce id: only letters and digits are allowed' };
  }
  const base = id.slice(0, 15);
  const checksum = salesforceChecksum(base);
  if (id.length === 15) return { ok: true, id: base + checksum };
  // The suffix alphabet is upper case; some tools lower-case the whole id,
  // which loses the case of the first 15 too, so a mismatch is never repaired.
  if (id.slice(15) !== checksum) {
    return {
      ok: false,
      reason: `not a Salesforce id: checksum ${id.slice(15)} does not match ${checksum}`,
    };
  }
  return { ok: true, id };
}
