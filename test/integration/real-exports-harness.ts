/**
 * Syncing the real exports of test/fixtures/real (see SOURCES.md there) with
 * the shipped presets, end to end: one engine (sandbox and state on the
 * harness Redis) for every test of a file, one job per fixture. Each test
 * says, from the fixture itself, which records are live (created once, with
 * their CRM id and name) and why every other row was not synced; a second
 * run of the same job must write nothing.
 */
import { readFileSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { afterAll, beforeAll, expect } from 'vitest';
import type { FailureRow, RunRecord } from '../../src/state/runs.js';
import { countWrites, startEngine, statsSince, type EngineHarness } from '../harness/engine.js';

export const REAL = join(import.meta.dirname, '..', 'fixtures', 'real');

type Rec = Record<string, unknown>;

/** The records of a JSON fixture: the array under `key` of its top-level object. */
export function jsonRecords(file: string, key: string): Rec[] {
  const doc = JSON.parse(readFileSync(join(REAL, file), 'utf8')) as Record<string, unknown>;
  const list = doc[key];
  if (!Array.isArray(list)) throw new Error(`${file}: no array under ${key}`);
  return list as Rec[];
}

/** One engine for the whole file, opened before its tests and closed after them. */
export function useRealEngine(): () => EngineHarness {
  let h: EngineHarness | undefined;
  beforeAll(async () => {
    h = await startEngine({ settings: { batchSize: 50 } });
  });
  afterAll(async () => {
    await h?.close();
  });
  return () => {
    if (!h) throw new Error('the engine is not started');
    return h;
  };
}

export interface FixtureJob {
  /** The job's name (one per fixture). */
  job: string;
  preset: string;
  entity: 'companies' | 'members';
  /** Relative to test/fixtures/real, or absolute (an export the test wrote). */
  file: string;
  recordsPath?: string;
  /** Where each line's record is: Airbyte or Singer stream, or a path (docs/MAPPING.md). */
  stream?: string;
  recordPath?: string;
}

export interface Synced {
  first: RunRecord;
  second: RunRecord;
  /** Every row of the first run that was not synced, and why. */
  failures: FailureRow[];
}

/**
 * Runs the fixture's job twice: the first run must complete; the second must
 * complete without a single write (the platform is already in step).
 */
export async function syncTwice(h: EngineHarness, f: FixtureJob): Promise<Synced> {
  h.writeJob(f.job, {
    entity: f.entity,
    source: {
      path: isAbsolute(f.file) ? f.file : join(REAL, f.file),
      ...(f.recordsPath !== undefined && { recordsPath: f.recordsPath }),
      ...(f.stream !== undefined && { stream: f.stream }),
      ...(f.recordPath !== undefined && { recordPath: f.recordPath }),
    },
    mapping: f.preset,
  });
  const first = await h.runJob(f.job);
  expect(first.status, first.error).toBe('completed');
  const failures = await h.failures(first.id);
  const before = await h.stats();
  const second = await h.runJob(f.job);
  expect(second.status, second.error).toBe('completed');
  expect(countWrites(statsSince(before, await h.stats())), 'writes of the second run').toBe(0);
  expect(second.counts.created + second.counts.updated + second.counts.adopted).toBe(0);
  return { first, second, failures };
}

/** What a live record must be on the platform: its external_id and the fields to compare. */
export interface Expected {
  external_id: string;
  [field: string]: unknown;
}

/**
 * Every expected record is on the platform exactly once under its
 * external_id, with the expected fields.
 */
export async function expectOnPlatform(
  h: EngineHarness,
  entity: 'companies' | 'members',
  expected: readonly Expected[],
): Promise<void> {
  const records = (await h.dump())[entity];
  for (const e of expected) {
    const found = records.filter((r) => r.external_id === e.external_id);
    expect(found, `${entity} with external_id ${e.external_id}`).toHaveLength(1);
    expect(found[0]).toMatchObject(e);
  }
}

/** The failures of a run as `kind identity: reason`, sorted, for comparing with what the fixture says. */
export function failureLines(failures: readonly FailureRow[]): string[] {
  return failures.map((f) => `${f.kind} ${f.identity ?? '-'}: ${f.reason}`).sort();
}

/**
 * A fixture whose every record is live: the job syncs twice (`syncTwice`),
 * the first run reads and creates `read` records and reports no row, and
 * every expected record is on the platform once.
 */
export async function expectAllSynced(
  h: EngineHarness,
  job: FixtureJob,
  read: number,
  expected: readonly Expected[],
): Promise<void> {
  const { first, failures } = await syncTwice(h, job);
  expect(first.counts).toMatchObject({ read, created: read, invalid: 0, skipped: 0 });
  expect(failureLines(failures)).toEqual([]);
  await expectOnPlatform(h, job.entity, expected);
}
