/**
 * Reading and cutting a stopped redis-server's append-only file, to replay
 * what a crash under `appendfsync everysec` loses: the tail of the file.
 * Redis 7 keeps the AOF in `appendonlydir/`, named by a manifest: a base file
 * (an RDB preamble) and an incremental file of commands in RESP, each command
 * an array of bulk strings. A script's writes are logged as their effects,
 * wrapped in MULTI … EXEC; a cut is made at a command boundary outside any
 * transaction, so that the shortened file loads cleanly.
 */
import { readFileSync, truncateSync } from 'node:fs';
import { join } from 'node:path';

/** One logged command: its arguments and where it starts in the file. */
export interface AofCommand {
  args: string[];
  /** Byte offset of the command. */
  offset: number;
  /** Byte offset to cut at to drop this command: its MULTI's, inside a transaction. */
  cutAt: number;
}

/** The incremental AOF file of a Redis 7 data directory, from its manifest. */
export function incrementalAof(dir: string): string {
  const aofDir = join(dir, 'appendonlydir');
  const manifest = readFileSync(join(aofDir, 'appendonly.aof.manifest'), 'utf8');
  const incr = manifest
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .filter((f) => f[0] === 'file' && f[f.indexOf('type') + 1] === 'i')
    .map((f) => f[1]!);
  if (incr.length !== 1) throw new Error(`expected one incremental AOF, found: ${manifest}`);
  return join(aofDir, incr[0]!);
}

/** Every command of an AOF file in RESP, in order. */
export function readAof(path: string): AofCommand[] {
  const buf = readFileSync(path);
  const commands: AofCommand[] = [];
  let pos = 0;
  let multiAt: number | undefined;
  const line = (): string => {
    const end = buf.indexOf('\r\n', pos);
    if (end < 0) throw new Error(`AOF ${path}: no line end after byte ${pos}`);
    const text = buf.toString('latin1', pos, end);
    pos = end + 2;
    return text;
  };
  while (pos < buf.length) {
    const offset = pos;
    const head = line();
    if (!head.startsWith('*')) throw new Error(`AOF ${path}: expected an array at byte ${offset}`);
    const args: string[] = [];
    for (let n = Number(head.slice(1)); n > 0; n--) {
      const len = Number(line().slice(1));
      args.push(buf.toString('utf8', pos, pos + len));
      pos += len + 2;
    }
    const name = args[0]!.toUpperCase();
    if (name === 'MULTI') multiAt = offset;
    commands.push({ args, offset, cutAt: multiAt ?? offset });
    if (name === 'EXEC') multiAt = undefined;
  }
  return commands;
}

/** Shortens the file to `bytes`: everything logged from there on is lost. */
export function truncateAof(path: string, bytes: number): void {
  truncateSync(path, bytes);
}
