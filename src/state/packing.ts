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
  // The parts between dots, as `split('.')` gives them (a fifth part and on are not read),
  // cut out without the array: every looked-up record passes here.
  const d1 = value.indexOf('.');
  const d2 = d1 < 0 ? -1 : value.indexOf('.', d1 + 1);
  const d3 = d2 < 0 ? -1 : value.indexOf('.', d2 + 1);
  const d4 = d3 < 0 ? -1 : value.indexOf('.', d3 + 1);
  const hash = d1 < 0 ? value : value.slice(0, d1);
  const syncedAt = d1 < 0 ? NaN : parseInt(value.slice(d1 + 1, d2 < 0 ? undefined : d2), 36);
  const runNumber = d2 < 0 ? NaN : parseInt(value.slice(d2 + 1, d3 < 0 ? undefined : d3), 36);
  const jobNumber = d3 < 0 ? undefined : parseInt(value.slice(d3 + 1, d4 < 0 ? undefined : d4), 36);
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
