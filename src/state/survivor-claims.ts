/**
 * Identity claims of a run whose job keeps one survivor of its duplicates
 * (a `duplicates` rule other than `none`): the same claim buckets as the
 * conflict claims (identity-claims.ts), each key's claim holding its holder's line,
 * whether it is sticky, its rank (`rankText`) and its CRM record
 * (`<line>|<sticky>|<rank>|<record>`). The record is most often one of the
 * row's own keys (its strongest): the claim of that key leaves the record
 * out (`<line>|<sticky + 2>|<rank>|`), since whoever reads the claim knows
 * the key's text. One Lua script decides a batch by the rules of
 * `decideSurvivors` (src/sync/survivors.ts) and moves each key to its
 * winner; the rows that lost are kept in the run's `duplicates` hash
 * (line → its record and the key it lost on) until the export is planned,
 * then reported, each naming the row that holds that key at the end: the
 * survivor.
 */
import type { RedisClient } from '../redis/connection.js';
import { callScript } from '../redis/scripts.js';
import type { Entrant, KeepRule, Loss } from '../sync/survivors.js';
import { claimNames } from './claim-digest.js';
import { parseStored, redisCall } from './errors.js';
import type { KeyLayout } from './keys.js';
import { execAll } from './pipeline.js';
import type { BucketTtls } from './bucket-ttls.js';
import type { ClaimedBuckets } from './claimed-buckets.js';
import { claimLayout } from './identity-claims.js';

/** The digits of a rank in a claim, 0 to 63; none is `|` (lua/contend-survivors-1.lua reads them). */
export const RANK_DIGITS = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-_';

/**
 * A rank as a claim holds it: a whole number from 0 to 2^53 - 1 (a time in
 * ms, mostly) as `~` and its digits in base 64 (8 characters for a time of
 * this century, against 13 in decimal: the claims of a row are the largest
 * part of a planning pass's Redis), any other number as its decimal text,
 * none as nothing. The script reads both forms back to the same number.
 */
export function rankText(rank: number | undefined): string {
  if (rank === undefined) return '';
  if (!Number.isSafeInteger(rank) || rank < 0) return String(rank);
  let text = '';
  let n = rank;
  do {
    text = RANK_DIGITS[n % 64]! + text;
    n = Math.floor(n / 64);
  } while (n > 0);
  return `~${text}`;
}

/** A row kept in the `duplicates` hash: its record and the key it lost on. */
interface LostRow {
  record: string;
  identity: string;
}

/** A duplicate as reported once the export is planned: the survivor is the key's holder then. */
export interface DuplicateRow {
  line: number;
  record: string;
  identity: string;
  survivor: { line: number; record: string };
}

export class SurvivorClaims {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: KeyLayout,
    private readonly ttlMs: number,
    /** The claim buckets' TTL flags, shared with the conflict claims (one kind of bucket). */
    private readonly ttls: BucketTtls,
    /** The buckets each run's pass claimed into, shared with the conflict claims (their release). */
    private readonly claimed: ClaimedBuckets,
  ) {}

  /**
   * Claims each row's identities for the run under `keep`; returns the rows
   * that lost (rows of the batch, and rows of earlier batches the batch beat,
   * `earlier`). One round trip decides; a second keeps the losers, only when
   * there are any.
   */
  async contend(runId: string, keep: KeepRule, entries: readonly Entrant[]): Promise<Loss[]> {
    if (entries.length === 0) return [];
    const keys: string[] = [];
    for (const e of entries) for (const key of e.keys) keys.push(key);
    const names = claimNames(keys);
    const layout = claimLayout(entries, names);
    const expire = this.ttls.flags(runId, names.buckets);
    this.claimed.mark(runId, names.buckets);
    // Per row: which of its keys (1-based, 0 for none) is its record, then its claim's tail.
    const tails = entries.map(
      (e) => `${e.keys.indexOf(e.ref) + 1}|${e.sticky ? 1 : 0}|${rankText(e.rank)}|${e.ref}`,
    );
    let out: (string | number)[];
    let unset: number[];
    let fresh: number;
    try {
      [out, unset, fresh] = (await redisCall('claiming identities', () =>
        callScript(
          this.redis,
          'contend-survivors',
          this.keys.claims(runId),
          String(this.ttlMs),
          expire,
          this.keys.claimBucketPrefix(runId),
          layout,
          keep,
          RANK_DIGITS,
          ...tails,
        ),
      )) as [(string | number)[], number[], number];
    } catch (err) {
      this.ttls.failed(names.buckets);
      throw err;
    }
    // Flagged buckets only losers touched have no TTL yet: flagged again next time.
    if (fresh === 1) this.ttls.forgetAll();
    const missed = new Set(unset.map(Number));
    this.ttls.sent(names.buckets.filter((b) => !missed.has(b)));
    this.ttls.failed([...missed]);
    const reply = out;
    if (reply.length === 0) return [];
    const lines = new Set(entries.map((e) => e.line));
    const lost: Loss[] = [];
    for (let i = 0; i < reply.length; i += 5) {
      const line = Number(reply[i]);
      const identity = keys[Number(reply[i + 4])]!;
      // 0: the record of a claim that left it out, the shared key itself.
      const ref = (v: string | number | undefined): string =>
        typeof v === 'number' ? identity : String(v);
      lost.push({
        line,
        ref: ref(reply[i + 1]),
        winner: Number(reply[i + 2]),
        winnerRef: ref(reply[i + 3]),
        identity,
        earlier: !lines.has(line),
      });
    }
    const tx = this.redis.multi();
    tx.hset(
      this.keys.duplicates(runId),
      ...lost.flatMap((l) => [
        String(l.line),
        JSON.stringify({ record: l.ref, identity: l.identity } satisfies LostRow),
      ]),
    );
    tx.pexpire(this.keys.duplicates(runId), this.ttlMs);
    await execAll(tx, 'recording duplicates');
    return lost;
  }

  /**
   * Every row that lost, a page at a time, each with the row holding its key
   * now (call before the claims are released, once the export is planned).
   */
  async *duplicates(runId: string, pageSize = 1000): AsyncGenerator<DuplicateRow[]> {
    let cursor = '0';
    do {
      const [next, flat] = await redisCall('reading duplicates', () =>
        this.redis.hscan(this.keys.duplicates(runId), cursor, 'COUNT', pageSize),
      );
      cursor = next;
      if (flat.length === 0) continue;
      const rows: { line: number; lost: LostRow }[] = [];
      for (let i = 0; i < flat.length; i += 2)
        rows.push({
          line: Number(flat[i]),
          lost: parseStored(flat[i + 1]!, 'duplicate row') as LostRow,
        });
      const names = claimNames(rows.map((r) => r.lost.identity));
      const values = (await redisCall('reading duplicates', () =>
        callScript(
          this.redis,
          'hgets',
          rows.length,
          ...names.buckets.map((b) => this.keys.claimBucket(runId, b)),
          ...names.fields,
        ),
      )) as (string | null)[];
      yield rows
        .map((r, i) => {
          const v = values[i] ?? '';
          const bar = v.indexOf('|');
          const parts = v.split('|');
          // A claim whose record is its own key leaves the record out (sticky + 2).
          const ref = Number(parts[1]) >= 2 ? r.lost.identity : parts.slice(3).join('|');
          return {
            line: r.line,
            record: r.lost.record,
            identity: r.lost.identity,
            survivor: { line: bar < 0 ? 0 : Number(v.slice(0, bar)), record: ref },
          };
        })
        .sort((a, b) => a.line - b.line);
    } while (cursor !== '0');
  }
}
