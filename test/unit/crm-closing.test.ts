import { describe, expect, it } from 'vitest';
import { decodeText } from '../../src/crm/decode.js';
import { gunzipIfNeeded } from '../../src/crm/gzip.js';

/** Bytes that say whether the reader below them was closed. */
function source(chunks: string[]): { bytes: AsyncIterable<Uint8Array>; closed: () => boolean } {
  let closed = false;
  async function* gen(): AsyncGenerator<Uint8Array> {
    try {
      for (const c of chunks) yield new TextEncoder().encode(c);
    } finally {
      closed = true;
    }
  }
  return { bytes: gen(), closed: () => closed };
}

describe('a read stage that stops early closes the bytes below it', () => {
  it('decodeText', async () => {
    const s = source(['a,b\n', '1,2\n', '3,4\n']);
    for await (const chunk of decodeText(s.bytes, { source: 'x.csv', currentLine: () => 1 })) {
      expect(chunk).toBeDefined();
      break;
    }
    expect(s.closed()).toBe(true);
  });

  it('gunzipIfNeeded', async () => {
    const s = source(['a,b\n', '1,2\n', '3,4\n']);
    for await (const chunk of gunzipIfNeeded(s.bytes, 'x.csv')) {
      expect(chunk.length).toBeGreaterThan(0);
      break;
    }
    expect(s.closed()).toBe(true);
  });
});
