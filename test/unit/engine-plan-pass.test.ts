/**
 * The planning pass keeps BATCHES_UNDER_WAY batches under way: a batch is
 * prepared and looked up while the ones before it are still claimed, planned
 * and accepted. Claims still go one batch at a time and results reach the
 * sink one batch at a time, in export order, with duplicates across batches
 * withdrawn as before; a sink that fails ends the pass with its error, and no
 * later batch is claimed or accepted.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { COLUMNS, companyRow, csvCell } from '../../bench/crm-data.js';
import { loadMapping } from '../../src/crm/presets.js';
import {
  BATCHES_UNDER_WAY,
  PLANNING_BATCH_ROWS,
  planExport,
  type PlanningSink,
} from '../../src/engine/plan-pass.js';
import { silentLogger } from '../../src/log.js';
import type { Action } from '../../src/sync/action.js';
import { MemoryClaims } from '../../src/sync/claims.js';

const dir = mkdtempSync(join(tmpdir(), 'planning-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** 35 companies; the 33rd repeats the 3rd's record id (a duplicate six batches later). */
function exportFile(): string {
  return writeExport(
    'companies.csv',
    Array.from({ length: 35 }, (_, i) => companyRow(i === 32 ? 2 : i)),
  );
}

function writeExport(name: string, rows: readonly string[][]): string {
  const path = join(dir, name);
  const text = [COLUMNS, ...rows].map((r) => r.map((c) => csvCell(c)).join(',')).join('\n');
  writeFileSync(path, `${text}\n`);
  return path;
}

/**
 * A sink that records every call and checks what may be under way at once:
 * one claim, one accept or withdraw, a lookup per batch under way; and how
 * many batches were under way at most (looked up, not yet accepted).
 */
function recordingSink(failOnClaim?: number) {
  const claims = new MemoryClaims();
  const calls: string[] = [];
  const accepted: Action[] = [];
  const withdrawn: number[] = [];
  const busy = { claim: 0, lookup: 0, result: 0 };
  const most = { claim: 1, lookup: BATCHES_UNDER_WAY, result: 1 };
  let lookedUp = 0;
  let acceptedBatches = 0;
  let deepest = 0;
  // Lookups that began while a batch's results were being accepted: the overlap sought.
  let lookupsBesideResults = 0;
  let claimCalls = 0;
  const lookupSizes: number[] = [];
  const step = async <T>(name: string, f: () => T): Promise<T> => {
    calls.push(name);
    const group = name === 'claim' || name === 'lookup' ? name : 'result';
    busy[group]++;
    expect(busy[group], `${name} calls under way at once`).toBeLessThanOrEqual(most[group]);
    if (name === 'lookup') {
      if (busy.result > 0) lookupsBesideResults++;
      deepest = Math.max(deepest, ++lookedUp - acceptedBatches);
      expect(lookedUp - acceptedBatches, 'batches under way').toBeLessThanOrEqual(
        BATCHES_UNDER_WAY,
      );
    }
    await new Promise((r) => setTimeout(r, 2));
    busy[group]--;
    if (name === 'accept') acceptedBatches++;
    return f();
  };
  const sink: PlanningSink = {
    claim: (entries) =>
      step('claim', () => {
        if (++claimCalls === failOnClaim) throw new Error('redis went away');
        return claims.claim(entries);
      }),
    lookup: (records) =>
      step('lookup', () => {
        lookupSizes.push(records.length);
        return records.map(() => ({}));
      }),
    accept: (actions) => step('accept', () => void accepted.push(...actions)),
    withdraw: (rows) =>
      step('withdraw', () => void withdrawn.push(...rows.map((r) => r.action.line))),
  };
  return {
    sink,
    calls,
    accepted,
    withdrawn,
    lookupSizes,
    overlaps: () => lookupsBesideResults,
    deepest: () => deepest,
  };
}

const base = {
  entity: 'companies' as const,
  mapping: loadMapping('hubspot-companies'),
  env: {},
  mode: 'upsert' as const,
  memberUpdates: false,
  logger: silentLogger,
  // Seven batches: more than are under way at once.
  batchSize: 5,
};

describe('planning pass', () => {
  it('hands the sink one batch at a time, in export order, and withdraws an earlier duplicate', async () => {
    const rec = recordingSink();
    const counts = await planExport({ ...base, source: { path: exportFile() }, sink: rec.sink });
    expect(counts.read).toBe(35);
    expect(counts.create).toBe(33);
    expect(counts.conflict).toBe(2);
    // Lines in export order: a batch never overtakes the one before it.
    const lines = rec.accepted.map((a) => a.line);
    expect(lines).toEqual([...lines].sort((a, b) => a - b));
    expect(lines).toHaveLength(35);
    // The 3rd company (line 5: the first one's description holds a line break) was planned
    // in the first batch and withdrawn in the seventh, where its duplicate came.
    expect(rec.withdrawn).toEqual([5]);
    expect(rec.accepted.find((a) => a.kind === 'conflict')).toMatchObject({ otherLines: [5] });
    expect(rec.calls.filter((c) => c === 'accept')).toHaveLength(7);
    // Later batches' lookups went out while a batch was being accepted, as many as may.
    expect(rec.overlaps()).toBeGreaterThan(0);
    expect(rec.deepest()).toBe(BATCHES_UNDER_WAY);
  });

  it('ends with the error of a sink that fails, and sends nothing after it', async () => {
    const rec = recordingSink(2);
    await expect(
      planExport({ ...base, source: { path: exportFile() }, sink: rec.sink }),
    ).rejects.toThrow('redis went away');
    // The first batch was accepted; the second failed at its claim; no later batch was
    // claimed or accepted (the lookups of the batches read meanwhile, reads, may have gone out).
    expect(rec.calls.filter((c) => c === 'accept')).toHaveLength(1);
    expect(rec.calls.filter((c) => c === 'claim')).toHaveLength(2);
    expect(rec.calls.filter((c) => c === 'lookup').length).toBeLessThanOrEqual(
      BATCHES_UNDER_WAY + 1,
    );
  });

  it('plans in batches of PLANNING_BATCH_ROWS when the caller names no size', async () => {
    const rec = recordingSink();
    const n = PLANNING_BATCH_ROWS + 7;
    const path = writeExport(
      'many.csv',
      Array.from({ length: n }, (_, i) => companyRow(i)),
    );
    const { batchSize: _named, ...unsized } = base;
    const counts = await planExport({ ...unsized, source: { path }, sink: rec.sink });
    expect(counts.read).toBe(n);
    expect(rec.lookupSizes).toEqual([PLANNING_BATCH_ROWS, 7]);
  });
});
