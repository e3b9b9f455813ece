/**
 * A run's identity claims while it plans, kept in Redis so a killed run
 * resumes without re-reading its export: which row claimed each identity key
 * first (to find duplicates across the whole export) and the rows found in
 * conflict. A job with a survivor rule claims the same buckets its own way
 * (survivor-claims.ts). Run scratch: every key carries a TTL (a claim bucket
 * gets it once per planning pass and process), so claims outlive a crash,
 * not the week.
 */
import type { RedisClient } from '../redis/connection.js';
import { callScript } from '../redis/scripts.js';
import {
  decideClaims,
  type Claim,
  type ClaimConflict,
  type ConflictRecord,
} from '../sync/claims.js';
import { claimNames, type ClaimNames } from './claim-digest.js';
import { parseStored, redisCall, StateError } from './errors.js';
import { CLAIM_BUCKETS, type KeyLayout } from './keys.js';
import { BucketTtls } from './bucket-ttls.js';
import { ClaimedBuckets } from './claimed-buckets.js';
import { execAll, unlinks } from './pipeline.js';
import type { PlannedWrites } from './planned-writes.js';

/** Lines a claim layout can carry: five characters of 7 bits. */
const MAX_LINE = 2 ** 35 - 1;

/**
 * The layout argument of lua/claim-identities-2.lua (see there); `fields` and
 * `buckets` are each key's, in order.
 */
export function claimLayout(entries: readonly Claim[], names: ClaimNames): string {
  let size = 0;
  for (const e of entries) {
    const line = e.line;
    if (!Number.isSafeInteger(line) || line < 0 || line > MAX_LINE)
      throw new RangeError(`line ${line} cannot be claimed (0 to ${MAX_LINE})`);
    if (e.keys.length > 127)
      throw new RangeError(`line ${line} has ${e.keys.length} identity keys`);
    size += 6 + 12 * e.keys.length;
  }
  // Every code is below 128 (fields are 7-bit characters): one byte each, read back as Latin-1.
  const codes = Buffer.allocUnsafe(size);
  let at = 0;
  let n = 0;
  for (const e of entries) {
    const line = e.line;
    codes[at++] = Math.floor(line / 2 ** 28) & 127;
    codes[at++] = (line >>> 21) & 127;
    codes[at++] = (line >>> 14) & 127;
    codes[at++] = (line >>> 7) & 127;
    codes[at++] = line & 127;
    codes[at++] = e.keys.length;
    for (let m = 0; m < e.keys.length; m++, n++) {
      const b = names.buckets[n]!;
      codes[at++] = b >>> 7;
      codes[at++] = b & 127;
      // The claim field: ten 7-bit characters (claim-digest.ts), as the script reads them.
      const field = names.fields[n]!;
      for (let i = 0; i < 10; i++) codes[at++] = field.charCodeAt(i);
    }
  }
  return codes.toString('latin1', 0, size);
}

/** The claims marker's value once the claims are released. */
const RELEASED = 'released';

export class IdentityClaims {
  /** Which claim buckets got their TTL (shared with the survivor claims: the same buckets). */
  readonly claimTtls = new BucketTtls(CLAIM_BUCKETS);
  /** Which claim buckets each run's pass wrote to here (shared with the survivor claims). */
  readonly claimed = new ClaimedBuckets(CLAIM_BUCKETS);

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: KeyLayout,
    private readonly ttlMs: number,
    /** The run's planned writes: where `holders` looks once the claims are released. */
    private readonly planned: PlannedWrites,
  ) {}

  /**
   * Claims each row's identities for the run and decides its conflicts with
   * `decideClaims` (src/sync/claims.ts, the rules). One round trip claims the
   * keys (first claimer wins) and reads what the decision needs; a second
   * stores the conflict records, only when the batch found any.
   */
  async claim(runId: string, entries: readonly Claim[]): Promise<ClaimConflict[]> {
    if (entries.length === 0) return [];
    const conflicted = this.keys.conflicted(runId);
    const keys: string[] = [];
    for (const e of entries) for (const key of e.keys) keys.push(key);
    const names = claimNames(keys);
    const layout = claimLayout(entries, names);
    const expire = this.claimTtls.flags(runId, names.buckets);
    this.claimed.mark(runId, names.buckets);
    let reply: [(string | number)[], string[], (string | null)[], number];
    try {
      reply = (await redisCall('claiming identities', () =>
        callScript(
          this.redis,
          'claim-identities',
          conflicted,
          this.keys.claims(runId),
          String(this.ttlMs),
          expire,
          this.keys.claimBucketPrefix(runId),
          layout,
        ),
      )) as typeof reply;
    } catch (err) {
      this.claimTtls.failed(names.buckets);
      throw err;
    }
    const [others, lines, records, fresh] = reply;
    if (fresh === 1) this.claimTtls.forgetAll();
    this.claimTtls.sent(names.buckets);
    // Keys held by the row's own line are left out: the decision reads them as unheld.
    const holders = new Map<string, number>();
    for (let i = 0; i < others.length; i += 2)
      holders.set(keys[Number(others[i])]!, Number(others[i + 1]));
    const conflicts = new Map<number, ConflictRecord>();
    lines.forEach((line, i) => {
      const record = records[i];
      if (record !== null && record !== undefined) conflicts.set(Number(line), parseInfo(record));
    });

    // No key held by another line and no line in conflict before: nothing to decide (the usual batch).
    if (holders.size === 0 && conflicts.size === 0) return [];
    // The keys are claimed already: the decision's `claimed` is empty, its records are to keep.
    const decision = decideClaims({ holders, conflicts }, entries);
    if (decision.recorded.size > 0) {
      const tx = this.redis.multi();
      tx.hset(
        conflicted,
        ...[...decision.recorded].flatMap(([line, info]) => [String(line), JSON.stringify(info)]),
      );
      tx.pexpire(conflicted, this.ttlMs);
      await execAll(tx, 'recording conflicts');
    }
    return decision.conflicts;
  }

  /**
   * Frees the run's identity claims once the whole export is planned: only
   * planning decides by them. The marker stays (as `released`), so that
   * `holders` answers from the planned writes from then on; once every
   * bucket is unlinked, `claimsUnlinked` says so (see `releasedAndUnlinked`).
   * The buckets are those this process's pass claimed into (`claimed`), or
   * all of them when it has no marks of the run.
   */
  async release(runId: string): Promise<void> {
    const buckets = this.keys.claimBuckets(runId, this.claimed.take(runId));
    // The marker first: a release cut off midway leaves buckets to their TTL, never a reader
    // that trusts half the claims. Small UNLINKs: one of 16,384 keys would hold a megabyte
    // of arguments in Redis at the moment the run's scratch is largest.
    await redisCall('releasing identity claims', () =>
      this.redis.set(this.keys.claims(runId), RELEASED, 'PX', this.ttlMs),
    );
    const p = this.redis.pipeline();
    unlinks(p, buckets);
    await execAll(p, 'releasing identity claims');
    await redisCall('releasing identity claims', () =>
      this.redis.set(this.keys.claimsUnlinked(runId), '1', 'PX', this.ttlMs),
    );
  }

  /**
   * Whether the run's claims are released and every bucket was unlinked
   * then, so none is left to delete: not after a release cut off midway,
   * nor once a new pass has claimed again (its marker is no longer
   * `released`).
   */
  async releasedAndUnlinked(runId: string): Promise<boolean> {
    const [marker, unlinked] = await redisCall('reading identity claims', () =>
      this.redis.mget(this.keys.claims(runId), this.keys.claimsUnlinked(runId)),
    );
    return marker === RELEASED && unlinked !== null;
  }

  /**
   * The line that claimed each key in this run (null where none did), aligned
   * with `keys`. Once the claims are released (planning over), the line of the
   * planned write carrying the key, which is the line that claimed it: a row
   * with a planned write holds every one of its keys.
   */
  async holders(runId: string, keys: readonly string[]): Promise<(number | null)[]> {
    if (keys.length === 0) return [];
    const marker: string | null = await redisCall('reading identity claims', () =>
      this.redis.get(this.keys.claims(runId)),
    );
    if (marker === RELEASED) return this.plannedHolders(runId, keys);
    const names = claimNames(keys);
    const values: (string | null)[] = (await redisCall('reading identity claims', () =>
      callScript(
        this.redis,
        'hgets',
        keys.length,
        ...names.buckets.map((b) => this.keys.claimBucket(runId, b)),
        ...names.fields,
      ),
    )) as (string | null)[];
    // A claim under a survivor rule holds more after its line (survivor-claims.ts).
    return values.map((v) => (v === null || v === undefined ? null : Number.parseInt(v, 10)));
  }

  /** The line of the planned write carrying each key (null where none does): a full scan. */
  private async plannedHolders(runId: string, keys: readonly string[]): Promise<(number | null)[]> {
    const wanted = new Set(keys);
    const lineOf = new Map<string, number>();
    let cursor = '0';
    do {
      const page = await this.planned.scan(runId, cursor, 5000);
      cursor = page.cursor;
      for (const w of page.writes)
        for (const key of w.keys) if (wanted.has(key) && !lineOf.has(key)) lineOf.set(key, w.line);
    } while (cursor !== '0');
    return keys.map((key) => lineOf.get(key) ?? null);
  }
}

function parseInfo(value: string): ConflictRecord {
  const v = parseStored(value, 'conflict record') as Partial<ConflictRecord>;
  if (typeof v.identity !== 'string' || !Array.isArray(v.otherLines)) {
    throw new StateError('state.corrupt', `conflict record ${value} is not readable`, false);
  }
  return { identity: v.identity, otherLines: v.otherLines };
}
