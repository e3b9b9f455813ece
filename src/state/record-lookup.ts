/**
 * Which record a row is: for a batch of rows, each by its identity keys, what
 * our state and the platform's listing know of the record it names (see
 * `Known` in src/sync/plan.ts). Read-only; `RecordStates` (records.ts) holds
 * the writes (commits, pending creates, orphans).
 */
import type { RedisClient } from '../redis/connection.js';
import { queueScript } from '../redis/scripts.js';
import type { Entity } from '../sync/identity.js';
import { strongestMatch } from '../sync/match.js';
import { remoteMatters, type Known } from '../sync/plan.js';
import { parseStored } from './errors.js';
import type { KeyLayout } from './keys.js';
import type { Numbering } from './numbering.js';
import { parsePending, platformIdOf, unpackRecord, type RecordState } from './packing.js';
import { readIndexInfo } from './platform-index.js';
import { execAll, hgets } from './pipeline.js';

/** A key's length in bytes that a layout can carry: three characters of 7 bits. */
const MAX_KEY_BYTES = 2 ** 21 - 1;

/**
 * The layout and keys arguments of lua/ids-and-states-1.lua: each record's key count, then its keys'
 * buckets and lengths; and the keys end to end.
 */
function idsLayout(keys: KeyLayout, records: readonly LookupRecord[]): [string, string] {
  if (keys.buckets.ids > 1 << 21)
    throw new RangeError(`${keys.buckets.ids} identity buckets: at most ${1 << 21}`);
  let size = 0;
  for (const r of records) {
    if (r.keys.length > 127) throw new RangeError(`a record with ${r.keys.length} identity keys`);
    size += 1 + 6 * r.keys.length;
  }
  // Every code is below 128: one byte each, read back as Latin-1 (the same characters).
  const codes = Buffer.allocUnsafe(size);
  let text = '';
  let at = 0;
  for (const r of records) {
    codes[at++] = r.keys.length;
    for (const key of r.keys) {
      const b = keys.idBucketOf(key);
      const bytes = Buffer.byteLength(key);
      if (bytes > MAX_KEY_BYTES)
        throw new RangeError(`an identity key of ${bytes} bytes: at most ${MAX_KEY_BYTES}`);
      codes[at++] = b >>> 14;
      codes[at++] = (b >>> 7) & 127;
      codes[at++] = b & 127;
      codes[at++] = bytes >>> 14;
      codes[at++] = (bytes >>> 7) & 127;
      codes[at++] = bytes & 127;
      text += key;
    }
  }
  return [codes.toString('latin1', 0, size), text];
}

/** What the listing maps each key of a record to when there is no listing: nothing. */
const NOTHING_LISTED: readonly undefined[] = [];

/** A record to look up: its identity keys, and for planning the row's content hash. */
export interface LookupRecord {
  keys: readonly string[];
  /** The row's content hash: with `planning`, the platform's values are read only where they matter. */
  hash?: string;
}

/** How a lookup reads. */
export interface LookupOptions {
  /** The job asking: a record another job wrote last is reported (`Known.writtenBy`). */
  job?: string;
  /** A listing the caller made just now (a dry run), read instead of the stored index. */
  listing?: Listing;
  /**
   * A planning pass asks: the stored index's values of a record are read only
   * where they can change the action of the row's hash (`remoteMatters`,
   * src/sync/plan.ts); a record given without a hash gets them always.
   */
  planning?: { verifyRemote: boolean };
}

/** A listing of platform records held by the caller. */
export interface Listing {
  idOf(identityKey: string): number | undefined;
  /** The record's request fields (see src/sync/remote.ts). */
  valuesOf(platformId: number): Record<string, unknown> | undefined;
}

/** What a lookup reads from: the store's connection, key layout and job numbers. */
export interface LookupSources {
  redis: RedisClient;
  keys: KeyLayout;
  jobNumbers: Numbering;
}

/**
 * What is known of each record: the platform record named by its strongest
 * identity key that our state or the listing knows (match.ts), the hash of
 * our last confirmed write to it, the platform's values (from the listing,
 * and only when the listing is no older than our last write), a pending
 * create of any of its keys, and another job that wrote it last. One round
 * trip per batch when our state maps each record's strongest key and, for
 * planning, the platform's values do not matter (a nightly run's unchanged
 * rows); at most three otherwise (a fourth only to name a job this process
 * has not seen, which a conflict needs).
 */
export async function lookupRecords(
  from: LookupSources,
  entity: Entity,
  records: readonly LookupRecord[],
  opts: LookupOptions = {},
): Promise<Known[]> {
  const k = from.keys;
  const { job, listing, planning } = opts;
  // 1: the index pointer; our identity map, record states and pending creates; the job's number.
  const askJob = job !== undefined && from.jobNumbers.cached(job) === undefined;
  const p1 = from.redis.pipeline();
  p1.hgetall(k.index(entity));
  queueScript(
    p1,
    'ids-and-states',
    k.pending(entity),
    k.idsPrefix(entity),
    k.recsPrefix(entity),
    String(k.buckets.records),
    ...idsLayout(k, records),
  );
  if (askJob) p1.hget(from.jobNumbers.key, `r:${job}`);
  const [indexHash, [idValues, pendingValues, stateValues], jobValue] = (await execAll(
    p1,
    'looking up records',
  )) as [
    Record<string, string>,
    [(string | null)[], (string | null)[], (string | null)[]],
    string | null,
  ];
  const index = listing ? null : readIndexInfo(indexHash);
  // Where a platform id's record state is, and (with a stored index) its listed values.
  const stateField = (id: number) => [k.recs(entity, k.recBucketOf(id)), String(id)] as const;
  const indexedField = (generation: number, id: number) =>
    [k.indexRecs(entity, generation, k.recBucketOf(id)), String(id)] as const;
  const myJob =
    job === undefined
      ? undefined
      : askJob
        ? from.jobNumbers.learned(job, jobValue)
        : from.jobNumbers.cached(job);

  const known: Known[] = records.map(() => ({}));
  const stateIds: (number | undefined)[][] = [];
  // Per record: the position of the first key our state maps (keys.length: none).
  const stateAt: number[] = [];
  // Per record: the state stored under that key's platform id, unpacked.
  const states: (RecordState | undefined)[] = [];
  let j = 0;
  records.forEach((r, n) => {
    const kn = known[n]!;
    const ids: (number | undefined)[] = [];
    for (let m = 0; m < r.keys.length; m++, j++) {
      ids.push(platformIdOf(idValues[j]));
      const pending = kn.pending ?? parsePending(pendingValues[j] ?? null);
      if (pending) kn.pending = pending;
    }
    stateIds.push(ids);
    const at = ids.findIndex((id) => id !== undefined);
    stateAt.push(at < 0 ? r.keys.length : at);
    const value = stateValues[n];
    states.push(typeof value === 'string' ? unpackRecord(value) : undefined);
  });

  // 2: the listed values of the records our state names, where they matter; the listing's ids
  // of every stronger key.
  const remoteOfMatched: [number, readonly [string, string]][] = [];
  const indexIdOf: [number, number, readonly [string, string]][] = [];
  // Without a listing or a stored index nothing is listed (NOTHING_LISTED), nor read here.
  const listedIds: (number | undefined)[][] | undefined =
    listing || index ? records.map((r) => r.keys.map(() => undefined)) : undefined;
  if (listedIds)
    records.forEach((r, n) => {
      const at = stateAt[n]!;
      if (at < r.keys.length && index) {
        const id = stateIds[n]![at]!;
        const state = states[n];
        // Listed values older than our last write are not used; nor read.
        const fresh = state === undefined || state.syncedAt <= index.refreshedAt;
        const matters =
          planning === undefined ||
          r.hash === undefined ||
          remoteMatters(
            { keys: r.keys, hash: r.hash },
            { matchedBy: r.keys[at], ...(state && { storedHash: state.hash }) },
            planning.verifyRemote,
          );
        if (fresh && matters) remoteOfMatched.push([n, indexedField(index.generation, id)]);
      }
      for (let m = 0; m < at; m++) {
        const key = r.keys[m]!;
        if (listing) listedIds[n]![m] = listing.idOf(key);
        else if (index)
          indexIdOf.push([n, m, [k.indexIds(entity, index.generation, k.idBucketOf(key)), key]]);
      }
    });
  const remoteById = new Map<number, string | null>();
  if (remoteOfMatched.length > 0 || indexIdOf.length > 0) {
    const p2 = from.redis.pipeline();
    hgets(
      p2,
      remoteOfMatched.map(([, pair]) => pair),
    );
    hgets(
      p2,
      indexIdOf.map(([, , pair]) => pair),
    );
    const [rm, ix] = (await execAll(p2, 'looking up records')) as (string | null)[][];
    remoteOfMatched.forEach(([n], m) => remoteById.set(n, rm![m] ?? null));
    ix!.forEach((value, m) => {
      const [n, at] = indexIdOf[m]!;
      listedIds![n]![at] = platformIdOf(value);
    });
  }

  // Resolve each record; those the listing names through a stronger key need step 3.
  const remoteJson = new Map<number, string>();
  const writerOf = new Map<number, number>();
  const listedOnly: number[] = [];
  records.forEach((r, n) => {
    const kn = known[n]!;
    const match = strongestMatch(r.keys, stateIds[n]!, listedIds?.[n] ?? NOTHING_LISTED);
    if (!match) return;
    kn.platformId = match.platformId;
    kn.matchedBy = match.key;
    const at = stateAt[n]!;
    if (at < r.keys.length && stateIds[n]![at] === match.platformId) {
      const s = states[n];
      if (s) {
        kn.storedHash = s.hash;
        if (s.jobNumber !== undefined) writerOf.set(n, s.jobNumber);
      }
      const remote = remoteById.get(n);
      if (typeof remote === 'string') remoteJson.set(n, remote);
    } else {
      listedOnly.push(n);
    }
  });

  // 3: the platform's values and our record state of records named by the listing only.
  if (listedOnly.length > 0) {
    const p3 = from.redis.pipeline();
    hgets(
      p3,
      listedOnly.map((n) => stateField(known[n]!.platformId!)),
    );
    if (index)
      hgets(
        p3,
        listedOnly.map((n) => indexedField(index.generation, known[n]!.platformId!)),
      );
    const [recValues, values] = (await execAll(p3, 'looking up records')) as (string | null)[][];
    listedOnly.forEach((n, m) => {
      const rec = recValues![m];
      if (typeof rec === 'string') {
        const s = unpackRecord(rec);
        if (s.jobNumber !== undefined) writerOf.set(n, s.jobNumber);
      }
      const value = values?.[m];
      if (typeof value === 'string') remoteJson.set(n, value);
    });
  }
  for (const [n, json] of remoteJson)
    known[n]!.remote = parseStored(json, 'indexed platform record') as Record<string, unknown>;
  // A listing made by the caller just now is newer than any write we confirmed.
  if (listing) {
    known.forEach((kn) => {
      const values = kn.platformId === undefined ? undefined : listing.valuesOf(kn.platformId);
      if (values) kn.remote = values;
    });
  }

  if (job !== undefined) {
    const foreign = [...writerOf].filter(([, w]) => w !== myJob);
    if (foreign.length > 0) {
      const names = await from.jobNumbers.namesOf(foreign.map(([, w]) => w));
      foreign.forEach(([n, w], m) => {
        known[n]!.writtenBy = names[m] ?? `#${w}`;
      });
    }
  }
  return known;
}
