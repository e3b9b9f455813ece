/**
 * Records inside an envelope. Each NDJSON line, JSON array element or API
 * page record is a value; the source's `stream` and `recordPath` say where
 * its record is inside it (docs/MAPPING.md, "Record streams and envelopes").
 *
 * `stream: NAME` reads the output of an Airbyte or Singer source connector,
 * one message per line, and keeps the RECORD messages of stream NAME:
 *
 *   {"type":"RECORD","record":{"stream":"x","data":{...},"emitted_at":1}}  Airbyte protocol
 *   {"stream":"x","data":{...},"emitted_at":1}                             Airbyte, bare record
 *   {"type":"RECORD","stream":"x","record":{...}}                          Singer
 *
 * the record being `data` (Airbyte) or `record` (Singer). Every other message
 * (STATE, LOG, SCHEMA, TRACE, ACTIVATE_VERSION, …) and the records of other
 * streams are passed over. `recordPath` then takes the record at that path of
 * the value (or of the stream's record). A value where either finds no record
 * is a problem row with its line; the tally counts those and the records of
 * each stream seen, for `validate` and the end-of-read log. Pure: no I/O.
 */
import {
  evaluate,
  explainMiss,
  formatSegments,
  parsePath,
  PathSyntax,
  type JsonPath,
} from './json-path.js';
import type { SourceRow } from './row.js';

export interface EnvelopeSpec {
  stream?: string;
  recordPath?: string;
}

type Obj = Record<string, unknown>;

/** Problem rows the envelope made, kept by their first few. */
const KEPT_PROBLEMS = 3;
/** Keys named in a problem, at most. */
const SHOWN_KEYS = 8;

/** What the envelope saw in the values read so far. */
export class EnvelopeTally {
  /** RECORD messages by stream name, passed over or not. */
  readonly streams = new Map<string, number>();
  /** Values read. */
  values = 0;
  /** Values where no record was found (problem rows). */
  problems = 0;
  readonly firstProblems: { line: number; problem: string }[] = [];
}

function isObject(v: unknown): v is Obj {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function kind(v: unknown): string {
  if (v === undefined) return 'nothing';
  if (v === null) return 'null';
  return Array.isArray(v) ? 'a list' : `a ${typeof v}`;
}

function keysOf(v: Obj): string {
  const keys = Object.keys(v);
  if (keys.length === 0) return 'an empty object';
  const shown = keys.slice(0, SHOWN_KEYS).join(', ');
  return `keys: ${keys.length > SHOWN_KEYS ? `${shown}, …` : shown}`;
}

/** A `recordPath` as written: a path of the mapping grammar that finds one value (no `[*]`). */
export function parseRecordPath(text: string): JsonPath | PathSyntax {
  const path = parsePath(text);
  if (path instanceof PathSyntax) return path;
  if (path.multi) return new PathSyntax('[*] finds a list; a recordPath finds one record');
  return path;
}

export class Envelope {
  readonly tally: EnvelopeTally;
  private readonly stream: string | undefined;
  private readonly path: JsonPath | undefined;

  constructor(spec: EnvelopeSpec, tally = new EnvelopeTally()) {
    this.stream = spec.stream;
    const path = spec.recordPath === undefined ? undefined : parseRecordPath(spec.recordPath);
    if (path instanceof PathSyntax) throw new Error(`recordPath: ${path.reason}`);
    this.path = path;
    this.tally = tally;
  }

  /** Whether a spec asks for any unwrapping (the readers skip it otherwise). */
  static wanted(spec: EnvelopeSpec): boolean {
    return spec.stream !== undefined || spec.recordPath !== undefined;
  }

  /** The record in `value` read at `line`, a problem row, or undefined for a value passed over. */
  open(line: number, value: Obj): SourceRow | undefined {
    this.tally.values++;
    if (this.stream === undefined) return this.pick(line, value);
    return this.message(line, value);
  }

  private message(line: number, msg: Obj): SourceRow | undefined {
    const type = msg.type;
    let stream: unknown;
    let record: unknown;
    let what: string;
    if (type === 'RECORD' && typeof msg.stream === 'string') {
      // Singer: the stream beside the type, the record under `record`.
      stream = msg.stream;
      record = msg.record;
      what = 'record';
    } else if (type === 'RECORD') {
      // Airbyte protocol: an AirbyteRecordMessage under `record`.
      const inner = msg.record;
      if (!isObject(inner)) {
        return this.problem(line, `a RECORD message whose record is ${kind(inner)}`);
      }
      stream = inner.stream;
      record = inner.data;
      what = 'record.data';
    } else if (type === undefined && typeof msg.stream === 'string' && Object.hasOwn(msg, 'data')) {
      // Airbyte, a bare AirbyteRecordMessage.
      stream = msg.stream;
      record = msg.data;
      what = 'data';
    } else if (typeof type === 'string') {
      return undefined;
    } else {
      return this.problem(
        line,
        `not an Airbyte or Singer message: no "type", nor "stream" and "data" (${keysOf(msg)})`,
      );
    }
    // Only an Airbyte protocol message gets here without a name: the others were tested for one.
    if (typeof stream !== 'string') {
      return this.problem(line, `a RECORD message whose record.stream is ${kind(stream)}`);
    }
    this.tally.streams.set(stream, (this.tally.streams.get(stream) ?? 0) + 1);
    if (stream !== this.stream) return undefined;
    if (!isObject(record)) {
      return this.problem(line, `the RECORD's ${what} is ${kind(record)}, not a JSON object`);
    }
    return this.pick(line, record);
  }

  private pick(line: number, value: Obj): SourceRow {
    const path = this.path;
    if (path === undefined) return { line, record: value };
    const found = evaluate(path.segments, value);
    if (isObject(found)) return { line, record: found };
    const at = `recordPath "${path.text}"`;
    if (found !== undefined)
      return this.problem(line, `${at} is ${kind(found)}, not a JSON object`);
    const miss = explainMiss(path.segments, value);
    const depth = miss?.depth ?? 0;
    const where = depth === 0 ? 'the record' : formatSegments(path.segments, depth);
    const there = isObject(miss?.at) ? keysOf(miss.at) : kind(miss?.at);
    return this.problem(
      line,
      `${at} found nothing: no ${formatSegments([path.segments[depth]!]) || 'value'} in ${where} (${there})`,
    );
  }

  private problem(line: number, problem: string): SourceRow {
    const t = this.tally;
    t.problems++;
    if (t.firstProblems.length < KEPT_PROBLEMS) t.firstProblems.push({ line, problem });
    return { line, problem };
  }
}
