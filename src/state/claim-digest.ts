/**
 * The short name under which a run's scratch claims an identity key: a
 * bucket (one of `CLAIM_BUCKETS` small hashes, from FNV-1a of the key) and a
 * 10-character field (a 64-bit hash of the key, cyrb53's two 32-bit lanes
 * kept whole, 7 bits per character so the field is ASCII and travels as a
 * plain string). Two keys share a claim only if both hashes agree, 78 bits
 * in all: for 30 million keys in one run the chance that any two distinct
 * keys do is about one in a billion. Short fixed-width fields keep each
 * claim near 14 bytes of a listpack, against 40 or more for the key's text.
 */
import { CLAIM_BUCKETS, fnv1a } from './keys.js';

/** Where each key of a batch is claimed: its bucket and its field. */
export interface ClaimNames {
  buckets: number[];
  fields: string[];
}

/** The claim bucket and field of each key, in order. */
export function claimNames(keys: readonly string[]): ClaimNames {
  const buckets: number[] = new Array<number>(keys.length);
  const fields: string[] = new Array<string>(keys.length);
  for (let n = 0; n < keys.length; n++) {
    const key = keys[n]!;
    buckets[n] = fnv1a(key) % CLAIM_BUCKETS;
    let h1 = 0xdeadbeef;
    let h2 = 0x41c6ce57;
    for (let i = 0; i < key.length; i++) {
      const ch = key.charCodeAt(i);
      h1 = Math.imul(h1 ^ ch, 2654435761);
      h2 = Math.imul(h2 ^ ch, 1597334677);
    }
    h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507);
    h1 ^= Math.imul(h2 ^ (h2 >>> 13), 3266489909);
    h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507);
    h2 ^= Math.imul(h1 ^ (h1 >>> 13), 3266489909);
    fields[n] = String.fromCharCode(
      h1 & 127,
      (h1 >>> 7) & 127,
      (h1 >>> 14) & 127,
      (h1 >>> 21) & 127,
      h1 >>> 28,
      h2 & 127,
      (h2 >>> 7) & 127,
      (h2 >>> 14) & 127,
      (h2 >>> 21) & 127,
      h2 >>> 28,
    );
  }
  return { buckets, fields };
}
