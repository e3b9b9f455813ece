/**
 * Content hash of a mapped body: what "unchanged" is decided on. It covers
 * the canonical JSON of the body and the mapping fingerprint, so a changed
 * mapping (a new field, a new transform) makes every record look changed once,
 * which is what we want: the platform must receive what the new mapping says.
 */
import { createHash } from 'node:crypto';
import { canonicalJson } from './canonical.js';

/** Length of a content hash: 16 bytes of sha256, base64url, no padding. */
export const CONTENT_HASH_LENGTH = 22;

/**
 * A short, stable hash (22 characters, base64url) of `body` under the mapping
 * `fingerprint`. Equal bodies (whatever their key order) give equal hashes.
 */
export function contentHash(body: unknown, fingerprint: string): string {
  // The fingerprint is length-prefixed so that no (fingerprint, body) pair can
  // spell the same input as another one.
  return createHash('sha256')
    .update(`${fingerprint.length}:${fingerprint}\n`)
    .update(canonicalJson(body))
    .digest()
    .subarray(0, 16)
    .toString('base64url');
}
