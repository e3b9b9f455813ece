/**
 * Which record a row is: for a batch of rows, each by its identity keys, what
 * our state and the platform's listing know of the record it names (see
 * `Known` in src/sync/plan.ts). Read-only; `RecordStates` (records.ts) holds
 * the writes (commits, pending creates, orphans).
 */
import type { RedisClient } from '../queue/connection.js';
import type { Entity } from '../sync/identity.js';
import { strongestMatch } from '../sync/match.js';
import type { Known } from '../sync/plan.js';
import { parseStored } from './errors.js';
import type { KeyLayout } from './keys.js';
import type { Numbering } from './numbering.js';
import { parsePending, platformIdOf, unpackRecord } from './packing.js';
import { readIndexInfo } from './platform-index.js';
import { execAll, hgets } from './pipeline.js';

// KEYS: the pending hash, then the identity-map bucket of each key. ARGV: the keys. Replies
// {ids, pending}: each key's platform id in our identity map (nil for none), and each key's
// pending create (nil for none), or an empty list when no create is pending at all (the
// usual case: the keys are sent once and the pending hash is not searched).
const IDS_AND_PENDING = `local ids, pending = {}, {}
for i = 1, #ARGV do ids[i] = redis.call('HGET', KEYS[i + 1], ARGV[i]) end
if redis.call('EXISTS', KEYS[1]) == 1 then
  for i = 1, #ARGV, 1000 do
    local part = redis.call('HMGET', KEYS[1], unpack(ARGV, i, math.min(i + 999, #ARGV)))
    for j = 1, #part do pending[#pending + 1] = part[j] end
  end
end
return {ids, pending}`;

/** How a lookup reads. */
export interface LookupOptions {
  /** The job asking: a record another job wrote last is reported (`Known.writtenBy`). */
  job?: string;
  /** A listing the caller made just now (a dry run), read instead of the stored index. */
  listing?: Listing;
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
 * create of any of its keys, and another job that wrote it last. Three
 * round trips per batch, whatever its size (a fourth only to name a job
 * this process has not seen, which a conflict needs).
 */
export async function lookupRecords(
  from: LookupSources,
  entity: Entity,
  records: readonly { keys: readonly string[] }[],
  opts: LookupOptions = {},
): Promise<Known[]> {
  const k = from.keys;
  const { job, listing } = opts;
  // 1: the index pointer, our identity map, pending creates, the asking job's number.
  const allKeys = records.flatMap((r) => r.keys);
  const askJob = job !== undefined && from.jobNumbers.cached(job) === undefined;
  const p1 = from.redis.pipeline();
  p1.hgetall(k.index(entity));
  p1.eval(
    IDS_AND_PENDING,
    1 + allKeys.length,
    k.pending(entity),
    ...allKeys.map((key) => k.ids(entity, k.idBucketOf(key))),
    ...allKeys,
  );
  if (askJob) p1.hget(from.jobNumbers.key, `r:${job}`);
  const [indexHash, [idValues, pendingValues], jobValue] = (await execAll(
    p1,
    'looking up records',
  )) as [Record<string, string>, [(string | null)[], (string | null)[]], string | null];
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
  });

  // 2: record state of the records our state names; the listing's ids of every stronger key.
  const stateOf: [number, readonly [string, string]][] = [];
  const remoteOfMatched: [number, readonly [string, string]][] = [];
  const indexIdOf: [number, number, readonly [string, string]][] = [];
  const listedIds: (number | undefined)[][] = records.map((r) => r.keys.map(() => undefined));
  records.forEach((r, n) => {
    const at = stateAt[n]!;
    if (at < r.keys.length) {
      const id = stateIds[n]![at]!;
      stateOf.push([n, stateField(id)]);
      if (index) remoteOfMatched.push([n, indexedField(index.generation, id)]);
    }
    for (let m = 0; m < at; m++) {
      const key = r.keys[m]!;
      if (listing) listedIds[n]![m] = listing.idOf(key);
      else if (index)
        indexIdOf.push([n, m, [k.indexIds(entity, index.generation, k.idBucketOf(key)), key]]);
    }
  });
  const states: (string | null)[] = [];
  const remotes: (string | null)[] = [];
  if (stateOf.length > 0 || indexIdOf.length > 0) {
    const p2 = from.redis.pipeline();
    hgets(
      p2,
      stateOf.map(([, pair]) => pair),
    );
    hgets(
      p2,
      remoteOfMatched.map(([, pair]) => pair),
    );
    hgets(
      p2,
      indexIdOf.map(([, , pair]) => pair),
    );
    const [s, rm, ix] = (await execAll(p2, 'looking up records')) as (string | null)[][];
    states.push(...s!);
    remotes.push(...rm!);
    ix!.forEach((value, m) => {
      const [n, at] = indexIdOf[m]!;
      listedIds[n]![at] = platformIdOf(value);
    });
  }
  const stateById = new Map<number, string | null>();
  stateOf.forEach(([n], m) => stateById.set(n, states[m] ?? null));
  const remoteById = new Map<number, string | null>();
  remoteOfMatched.forEach(([n], m) => remoteById.set(n, remotes[m] ?? null));

  // Resolve each record; those the listing names through a stronger key need step 3.
  const remoteJson = new Map<number, string>();
  const writerOf = new Map<number, number>();
  const listedOnly: number[] = [];
  records.forEach((r, n) => {
    const kn = known[n]!;
    const match = strongestMatch(r.keys, stateIds[n]!, listedIds[n]!);
    if (!match) return;
    kn.platformId = match.platformId;
    kn.matchedBy = match.key;
    const at = stateAt[n]!;
    if (at < r.keys.length && stateIds[n]![at] === match.platformId) {
      const value = stateById.get(n);
      let stale = false;
      if (typeof value === 'string') {
        const s = unpackRecord(value);
        kn.storedHash = s.hash;
        if (s.jobNumber !== undefined) writerOf.set(n, s.jobNumber);
        // The listing reflects our write only if it started after the write was confirmed.
        stale = index !== null && s.syncedAt > index.refreshedAt;
      }
      const remote = remoteById.get(n);
      if (typeof remote === 'string' && !stale) remoteJson.set(n, remote);
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
