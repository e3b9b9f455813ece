/**
 * A queued run may name a mode and a write chunk its entity: each one the
 * sync knows must pass the worker's check, anything else be refused.
 */
import { describe, expect, it } from 'vitest';
import { RunJobData, WriteChunkData } from '../../src/engine/payloads.js';

describe('RunJobData', () => {
  it('takes every mode, and no other', () => {
    for (const mode of ['upsert', 'create-only', 'update-only'])
      expect(RunJobData.parse({ job: 'companies', mode }).mode).toBe(mode);
    expect(RunJobData.safeParse({ job: 'companies', mode: 'delete' }).success).toBe(false);
    expect(RunJobData.safeParse({ job: 'companies', mode: '' }).success).toBe(false);
  });
});

describe('WriteChunkData', () => {
  it('takes both entities, and no other', () => {
    for (const entity of ['companies', 'members'])
      expect(WriteChunkData.parse({ runId: 'r1', entity, round: 0, lines: [2] }).entity).toBe(
        entity,
      );
    for (const entity of ['customers', ''])
      expect(WriteChunkData.safeParse({ runId: 'r1', entity, round: 0, lines: [2] }).success).toBe(
        false,
      );
  });
});
