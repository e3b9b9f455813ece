/**
 * Planned writes in run scratch, stored as deflated chunks of lines: pages in
 * line order, a drop while scanning skips nothing, a chunk left empty is
 * removed, every key has a TTL, claim holders are answered from them once
 * the claims are released, and a planned company write takes a fraction of
 * its JSON in Redis.
 */
import { describe, expect, it } from 'vitest';
import { CLAIM_BUCKETS } from '../../src/state/keys.js';
import { CHUNK_LINES } from '../../src/state/planned-writes.js';
import { StateStore } from '../../src/state/store.js';
import type { WriteAction } from '../../src/sync/action.js';
import { useRedis } from '../harness/redis.js';

const { redis, prefix } = useRedis();
const store = new StateStore(redis, { prefix });

function write(line: number): WriteAction {
  return {
    kind: 'create',
    line,
    keys: [`x:hubspot:company:${5_120_000_000 + line}`, `c:${5_120_000_000 + line}`],
    hash: `h${line.toString(36).padStart(21, 'x')}`,
    body: {
      crm_company_id: 5_120_000_000 + line,
      external_id: `hubspot:company:${5_120_000_000 + line}`,
      name: `Company ${line}`,
      website: `https://company${line}.example`,
    },
  } as WriteAction;
}

async function scanAll(run: string, count: number, each?: (ws: WriteAction[]) => Promise<void>) {
  const lines: number[] = [];
  let cursor = '0';
  do {
    const page = await store.plannedWrites.scan(run, cursor, count);
    cursor = page.cursor;
    lines.push(...page.writes.map((w) => w.line));
    await each?.(page.writes);
  } while (cursor !== '0');
  return lines;
}

describe('planned writes', () => {
  it('pages in line order, and a drop of what was read while scanning skips nothing', async () => {
    const run = 'pw-order';
    // Three batches, with gaps (lines of invalid rows) and out of order within a batch.
    const lines = Array.from({ length: 1500 }, (_, n) => 2 + n * 2);
    await store.plannedWrites.save(run, lines.slice(0, 700).reverse().map(write));
    await store.plannedWrites.save(run, lines.slice(700, 1200).map(write));
    await store.plannedWrites.save(run, lines.slice(1200).map(write));
    expect(await store.plannedWrites.count(run)).toBe(1500);
    expect(await scanAll(run, 500)).toEqual(lines);

    // A consumer that drops each page once handled (to free memory) still sees every line once.
    const seen = await scanAll(run, 300, (ws) =>
      store.plannedWrites.drop(
        run,
        ws.map((w) => w.line),
      ),
    );
    expect(seen).toEqual(lines);
    expect(await store.plannedWrites.count(run)).toBe(0);
    expect(await redis.zcard(store.keys.planIndex(run))).toBe(0);
    expect(await redis.hlen(store.keys.plan(run))).toBe(1); // the total, at 0
  });

  it('reads lines across chunks, drops some of a chunk, and keeps a TTL on every key', async () => {
    const run = 'pw-of';
    const writes = Array.from({ length: CHUNK_LINES * 2 + 10 }, (_, n) => write(n + 2));
    await store.plannedWrites.save(run, writes);
    const pick = [CHUNK_LINES + 5, 3, CHUNK_LINES * 2 + 8, 999_999];
    expect(await store.plannedWrites.of(run, pick)).toEqual(
      [CHUNK_LINES + 5, 3, CHUNK_LINES * 2 + 8].map(write),
    );
    await store.plannedWrites.drop(run, [3, CHUNK_LINES + 5]);
    expect(await store.plannedWrites.count(run)).toBe(writes.length - 2);
    expect(await store.plannedWrites.of(run, [2, 3, 4])).toEqual([write(2), write(4)]);
    expect(await redis.pttl(store.keys.plan(run))).toBeGreaterThan(0);
    expect(await redis.pttl(store.keys.planIndex(run))).toBeGreaterThan(0);
  });

  it('answers claim holders from the planned writes once the claims are released', async () => {
    const run = 'pw-release';
    const writes = [2, 3, 5].map(write);
    await store.claims.claim(run, [
      ...writes.map((w) => ({ line: w.line, keys: w.keys })),
      { line: 4, keys: ['x:unchanged'] },
    ]);
    await store.plannedWrites.save(run, writes);
    const asked = [writes[1]!.keys[1]!, 'x:unchanged', writes[2]!.keys[0]!, 'x:nobody'];
    expect(await store.claims.holders(run, asked)).toEqual([3, 4, 5, null]);
    await store.claims.release(run);
    const buckets = Array.from({ length: CLAIM_BUCKETS }, (_, b) => store.keys.claimBucket(run, b));
    expect(await redis.exists(...buckets)).toBe(0);
    expect(await redis.pttl(store.keys.claims(run))).toBeGreaterThan(0);
    // A row without a planned write (unchanged) is no longer named; the writes' rows are.
    expect(await store.claims.holders(run, asked)).toEqual([3, null, 5, null]);
  });

  it('keeps a planned company write in well under a fifth of its JSON', async () => {
    const run = 'pw-size';
    const writes = Array.from({ length: 5000 }, (_, n) => write(n + 2));
    const json = writes.reduce((s, w) => s + Buffer.byteLength(JSON.stringify(w)), 0);
    await store.plannedWrites.save(run, writes);
    // SAMPLES 0: every field counted (the default estimate samples five, and the plan's
    // fields differ in size: deflated chunks beside their small counts).
    const usage = async (key: string) => Number(await redis.memory('USAGE', key, 'SAMPLES', 0));
    const bytes = (await usage(store.keys.plan(run))) + (await usage(store.keys.planIndex(run)));
    expect(bytes / writes.length).toBeLessThan(json / writes.length / 5);
  });
});
