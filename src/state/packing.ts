/**
 * The short encoding of one record's state, kept as a hash value under its
 * platform id: `<content hash>.<synced at, base36 ms>.<run number, base36>.<job number, base36>`,
 * about 37 bytes, so buckets stay under the listpack value limit (64 bytes).
 * Runs and jobs are stored by number (see numbering.ts) because their names
 * can be long. State written before jobs were recorded has no fourth part:
 * its writer is unknown. Beside it, how the other stored values read back:
 * platform ids and pending creates.
 */
import type { PendingCreate } from '../sync/action.js';
import { parseStored, StateError } from './errors.js';

export interface RecordState {
  hash: string;
  /** When the write was confirmed (ms since the epoch). */
  syncedAt: number;
  /** Number of the run that made it (see `Numbering`). */
  runNumber: number;
  /** Number of the job whose run made it; undefined in state written before it was kept. */
  jobNumber?: number;
}

export function packRecord(s: RecordState): string {
  const base = `${s.hash}.${s.syncedAt.toString(36)}.${s.runNumber.toString(36)}`;
  return s.jobNumber === undefined ? base : `${base}.${s.jobNumber.toString(36)}`;
}

export function unpackRecord(value: string): RecordState {
  const [hash, at, run, job] = value.split('.');
  const syncedAt = at === undefined ? NaN : parseInt(at, 36);
  const runNumber = run === undefined ? NaN : parseInt(run, 36);
  const jobNumber = job === undefined ? undefined : parseInt(job, 36);
  if (
    !hash ||
    !Number.isFinite(syncedAt) ||
    !Number.isFinite(runNumber) ||
    (jobNumber !== undefined && !Number.isFinite(jobNumber))
  ) {
    throw new StateError(
      'state.corrupt',
      `record state ${JSON.stringify(value)} is not readable`,
      false,
    );
  }
  return jobNumber === undefined
    ? { hash, syncedAt, runNumber }
    : { hash, syncedAt, runNumber, jobNumber };
}

/** A stored platform id (a hash value or field); undefined when absent. */
export function platformIdOf(value: unknown): number | undefined {
  if (value === null || value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isSafeInteger(n)) {
    throw new StateError(
      'state.corrupt',
      `platform id ${JSON.stringify(value)} is not an integer`,
      false,
    );
  }
  return n;
}

/** A pending create as stored: JSON `{ runId, since }`, under each identity key. */
export function packPending(p: PendingCreate): string {
  return JSON.stringify({ runId: p.runId, since: p.since });
}

/** A stored pending create (JSON `{ runId, since }`); undefined when absent. */
export function parsePending(value: unknown): PendingCreate | undefined {
  if (typeof value !== 'string') return undefined;
  const v = parseStored(value, 'pending create') as Partial<PendingCreate>;
  if (typeof v.runId !== 'string' || typeof v.since !== 'number') {
    throw new StateError('state.corrupt', `pending create ${value} is not readable`, false);
  }
  return { runId: v.runId, since: v.since };
}
