/**
 * Content hash of a mapped body: what "unchanged" is decided on. It covers
 * the canonical JSON of the body and the mapping fingerprint, so a changed
 * mapping (a new field, a new transform) makes every record look changed once,
 * which is what we want: the platform must receive what the new mapping says.
 */
import { hash } from 'node:crypto';
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
  const digest = hash(
    'sha256',
    `${fingerprint.length}:${fingerprint}\n${canonicalJson(body)}`,
    'base64url',
  );
  return first16Bytes(digest);
}

const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/**
 * The base64url text of the first 16 bytes of a digest, from the base64url
 * text of all of it (one-shot `hash` answers in text about three times as
 * fast as a Buffer). The first 21 characters carry bits 0-125 in both; the
 * 22nd carries bits 126-127 followed, for 16 bytes alone, by four zero bits.
 */
function first16Bytes(digest: string): string {
  return digest.slice(0, 21) + BASE64URL[BASE64URL.indexOf(digest[21]!) & 0b110000]!;
}
