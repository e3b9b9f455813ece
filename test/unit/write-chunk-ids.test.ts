/**
 * Which `platform-writes` job ids are chunks of a run (`isWriteChunkOf`, what
 * a cancel removes from the queue): the ids `writeChunks` gives the run's
 * chunks, and none of another run's, even one whose id starts with this one's.
 */
import { describe, expect, it } from 'vitest';
import { isWriteChunkOf, writeChunks } from '../../src/engine/payloads.js';

const def = { entity: 'companies', createVia: 'companies' } as const;
const ids = (runId: string, round = 0) =>
  writeChunks({ id: runId }, def, [2, 3, 4, 5, 6, 7, 8], round, 3).map((j) => j.opts.jobId);

describe('isWriteChunkOf', () => {
  it("knows every chunk id of the run's rounds", () => {
    const run = 'run-20250101T000000Z-ab12cd';
    const mine = [...ids(run), ...ids(run, 4)];
    expect(mine).toHaveLength(6);
    for (const id of mine) expect(isWriteChunkOf(id, run)).toBe(true);
  });

  it("refuses another run's chunks, whether its id starts or extends this one's", () => {
    const run = 'run-20250101T000000Z-ab12cd';
    for (const other of [`${run}-7`, `${run}x`, 'run-20250101T000000Z-ab12c', 'run']) {
      for (const id of ids(other)) expect(isWriteChunkOf(id, run)).toBe(false);
    }
    expect(isWriteChunkOf(run, run)).toBe(false);
    expect(isWriteChunkOf(`${run}-0-2`, run)).toBe(false);
  });
});
