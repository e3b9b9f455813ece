/**
 * The planned writes of a run in progress (run scratch), stored compactly:
 * in chunks of up to `CHUNK_LINES` (128) writes, each chunk one deflated JSON
 * array in the run's `plan` hash under the chunk's first line, and every
 * chunk's first line in a sorted set (`plan:ix`) so a line's chunk is found
 * and chunks are read in line order. A planned write of a company row takes
 * about 67 bytes this way (measured: bench state-memory) instead of about 470 as JSON of its own.
 *
 * A planning pass saves each line once (a pass that starts over resets the
 * scratch first). Only one holder of the run writes its planned writes at a
 * time, so a chunk read, filtered and written back (`drop`) races nobody.
 *
 * The write phase frees the plan as it goes: `u:<first>` counts the chunk's
 * lines not settled yet, and the finish script that settles the chunk's last
 * line drops the chunk: its body becomes an empty list and its counts go
 * (lua/includes/settle-plan-chunks.lua; its index entry stays, so a scan's pages keep their
 * bounds), unless a line of it still
 * needs its planned write: an unknown create, which finalize verifies by
 * listing (it finds the line's keys and body here). Invariant, on which the
 * count rests: no line of the run settles while chunks are written (`save`
 * and `drop` run only during planning, before any write is enqueued; a pass
 * that starts over unlinks the settled lines with the plan), so PUT sets `u`
 * to the chunk's count. From then on `u` only goes down when a line settles
 * for the first time with its chunk named, and up when finalize unsettles a
 * line (`RunProgress.unsettle`): it is never below the chunk's unsettled
 * lines, so a chunk is never dropped while a line of it may still be written.
 */
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import type { RedisClient } from '../redis/connection.js';
import { callScript, callScriptBuffer } from '../redis/scripts.js';
import type { WriteAction } from '../sync/action.js';
import { parseStored, redisCall, StateError } from './errors.js';
import type { KeyLayout } from './keys.js';
import { chunks } from './pipeline.js';

/**
 * Writes per stored chunk: small enough that reading a write job's lines
 * inflates at most two chunks, large enough that each chunk's own cost in
 * Redis (hash fields, index entry, allocator rounding) stays small: measured
 * on 100,000 company writes, 82 bytes per write at 64 lines, 67 at 128.
 */
export const CHUNK_LINES = 128;

/**
 * Unknown creates read to decide whether a chunk whose lines have all settled
 * is still needed: up to this many are read and checked against the chunk's
 * lines; with more (a platform answering nothing for a while) every such
 * chunk is kept to the run's end, which costs only memory. Written out in
 * lua/includes/settle-plan-chunks.lua.
 */
export const MAX_UNKNOWN_READ = 256;

/** A page of a scan of planned writes. */
export interface PlanPage {
  /** Where the next page starts; `'0'`: the scan is over. */
  cursor: string;
  /** The page's planned writes, in line order. */
  writes: WriteAction[];
  /**
   * The same writes by the plan chunk that holds them (chunks with none left
   * out). A chunk's lines never change once planned, so work cut within a
   * chunk (the enqueuer's write jobs) comes out the same whenever it is cut,
   * whichever other chunks were dropped meanwhile.
   */
  chunks: WriteAction[][];
}

/** A planned write, and the first line of the chunk that holds it (see `FinishedWrite.planChunk`). */
export interface LocatedWrite {
  write: WriteAction;
  chunk: number;
}

interface Chunk {
  first: number;
  writes: WriteAction[];
}

export class PlannedWrites {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: KeyLayout,
    private readonly ttlMs: number,
  ) {}

  /** Stores write actions of the run, in chunks of consecutive actions. */
  async save(runId: string, actions: readonly WriteAction[]): Promise<void> {
    if (actions.length === 0) return;
    const sorted = [...actions].sort((a, b) => a.line - b.line);
    const parts: Chunk[] = [];
    for (const part of chunks(sorted, CHUNK_LINES))
      parts.push({ first: part[0]!.line, writes: part });
    await this.put(runId, parts, 'saving planned writes');
  }

  /**
   * A page of planned writes, in line order. Start with cursor `'0'`; the scan
   * is over when the returned cursor is `'0'` again. `count` is a hint, as
   * with a Redis SCAN: whole chunks are read. Dropping writes while scanning
   * skips nothing (the cursor is a line, not a position).
   */
  async scan(runId: string, cursor = '0', count = 500): Promise<PlanPage> {
    const want = Math.max(1, Math.ceil(count / CHUNK_LINES));
    const from = cursor === '0' ? '-inf' : cursor;
    const read = await this.call('reading planned writes', 'plan-page', runId, [
      from,
      String(want),
    ]);
    const chunks = read.map((c) => c.writes).filter((w) => w.length > 0);
    const last = read[read.length - 1];
    const done = read.length < want || last === undefined;
    return { cursor: done ? '0' : String(last.first + 1), writes: chunks.flat(), chunks };
  }

  /** The planned writes of these lines (lines without one are left out), in the order given. */
  async of(runId: string, lines: readonly number[]): Promise<WriteAction[]> {
    return (await this.located(runId, lines)).map((l) => l.write);
  }

  /**
   * As `of`, each with its chunk's first line: the write path names it when
   * the line settles, so the chunk is counted down and dropped once all its
   * lines have settled. A line whose chunk was dropped has no planned write.
   */
  async located(runId: string, lines: readonly number[]): Promise<LocatedWrite[]> {
    if (lines.length === 0) return [];
    const byLine = new Map<number, LocatedWrite>();
    for (const c of await this.chunksOf(runId, lines, 'reading planned writes'))
      for (const w of c.writes) byLine.set(w.line, { write: w, chunk: c.first });
    return lines.flatMap((l) => {
      const w = byLine.get(l);
      return w ? [w] : [];
    });
  }

  /** Removes the planned writes of these lines (a chunk left empty is deleted). */
  async drop(runId: string, lines: readonly number[]): Promise<void> {
    if (lines.length === 0) return;
    const gone = new Set(lines);
    const found = await this.chunksOf(runId, lines, 'dropping planned writes');
    const changed = found
      .map((c) => ({ first: c.first, writes: c.writes.filter((w) => !gone.has(w.line)) }))
      .filter((c, n) => c.writes.length !== found[n]!.writes.length);
    if (changed.length > 0) await this.put(runId, changed, 'dropping planned writes');
  }

  async count(runId: string): Promise<number> {
    const total: string | null = await redisCall('counting planned writes', () =>
      this.redis.hget(this.keys.plan(runId), 'total'),
    );
    return Number(total ?? 0);
  }

  private async put(runId: string, parts: readonly Chunk[], what: string): Promise<void> {
    const args: (string | Buffer)[] = [String(this.ttlMs)];
    for (const c of parts) {
      args.push(String(c.first), String(c.writes.length));
      args.push(
        c.writes.length === 0 ? '' : deflateRawSync(JSON.stringify(c.writes), { level: 1 }),
      );
    }
    await redisCall(what, () =>
      callScript(
        this.redis,
        'put-plan-chunks',
        this.keys.plan(runId),
        this.keys.planIndex(runId),
        ...args,
      ),
    );
  }

  private chunksOf(runId: string, lines: readonly number[], what: string): Promise<Chunk[]> {
    return this.call(what, 'plan-chunks-of', runId, lines.map(String));
  }

  private async call(
    what: string,
    script: string,
    runId: string,
    args: readonly string[],
  ): Promise<Chunk[]> {
    const reply = (await redisCall(what, () =>
      callScriptBuffer(
        this.redis,
        script,
        this.keys.plan(runId),
        this.keys.planIndex(runId),
        ...args,
      ),
    )) as Buffer[];
    const out: Chunk[] = [];
    for (let i = 0; i < reply.length; i += 2) {
      const first = Number(reply[i]!.toString());
      const body = reply[i + 1]!;
      out.push({ first, writes: body.length === 0 ? [] : decode(body, first) });
    }
    return out;
  }
}

function decode(body: Buffer, first: number): WriteAction[] {
  let json: string;
  try {
    json = inflateRawSync(body).toString();
  } catch {
    throw new StateError(
      'state.corrupt',
      `planned writes from line ${first} are not readable`,
      false,
    );
  }
  const writes = parseStored(json, 'planned writes');
  if (!Array.isArray(writes))
    throw new StateError(
      'state.corrupt',
      `planned writes from line ${first} are not a list`,
      false,
    );
  return writes as WriteAction[];
}
