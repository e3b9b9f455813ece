/**
 * The short encoding of one record's state, kept as a hash value under its
 * platform id: `<content hash>.<synced at, base36 ms>.<run number, base36>`,
 * about 35 bytes, so buckets stay under the listpack value limit (64 bytes).
 * Runs are stored by number (see runs.ts) because a run id can be long.
 */
import { StateError } from './errors.js';

export interface RecordState {
  hash: string;
  /** When the write was confirmed (ms since the epoch). */
  syncedAt: number;
  /** Number of the run that made it (see `RunNumbers`). */
  runNumber: number;
}

export function packRecord(s: RecordState): string {
  return `${s.hash}.${s.syncedAt.toString(36)}.${s.runNumber.toString(36)}`;
}

export function unpackRecord(value: string): RecordState {
  const [hash, at, run] = value.split('.');
  const syncedAt = at === undefined ? NaN : parseInt(at, 36);
  const runNumber = run === undefined ? NaN : parseInt(run, 36);
  if (!hash || !Number.isFinite(syncedAt) || !Number.isFinite(runNumber)) {
    throw new StateError(
      'state.corrupt',
      `record state ${JSON.stringify(value)} is not readable`,
      false,
    );
  }
  return { hash, syncedAt, runNumber };
}
