/**
 * The Lua scripts of crm-sync: one `.lua` file per script in a layer's
 * `lua/` folder (src/state/lua/, src/queue/lua/, src/schedule/lua/), read
 * once per process and defined once per connection as an ioredis command,
 * so Redis gets EVALSHA (the text only the first time on a socket) on a
 * single node, a Sentinel primary or a Cluster, alone or in a pipeline
 * (in a transaction, the text: see `queueScript`).
 *
 * A file is named after its script, then its number of keys when that is
 * fixed: `renew-lock-1.lua` is `renew-lock` with one key; a file without the
 * number takes the key count as its first argument (`claim-writes.lua`).
 * Each file starts with its KEYS and ARGV. A line `--- @include "name"`
 * is replaced by `lua/includes/name.lua` of the same layer (shared
 * functions), each include once per script.
 *
 * The files are found beside this module's folder: src/ under tsx and
 * vitest, dist/ in the built CLI (`npm run build` copies them).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import type { ChainableCommander } from 'ioredis';
import type { RedisClient } from './connection.js';

/** The layers with scripts, each a `lua/` folder under src/ (dist/). */
export const SCRIPT_LAYERS = ['state', 'queue', 'schedule'] as const;

export interface LuaScript {
  /** The file's name without its key count: what callers name it by. */
  name: string;
  /** The file, relative to src/ (dist/). */
  file: string;
  /** Keys the script takes; undefined when the caller passes the count first. */
  numberOfKeys?: number;
  /** The text sent to Redis, includes resolved. */
  lua: string;
}

type Arg = string | number | Buffer;
type ScriptCall = (...args: Arg[]) => Promise<unknown>;

const FILE = /^([a-z][a-z0-9-]*?)(?:-(\d+))?\.lua$/;
const INCLUDE = /^--- @include "([a-z0-9-]+)"[ \t]*$/gm;

/**
 * The scripts of one `lua/` folder, includes resolved; throws when the
 * folder is missing or an include is unknown or circular.
 */
export function readScripts(dir: URL, label = dir.pathname): LuaScript[] {
  if (!existsSync(dir)) {
    throw new Error(`no Lua scripts at ${dir.pathname} (npm run build copies src/*/lua/ to dist/)`);
  }
  const out: LuaScript[] = [];
  for (const file of readdirSync(dir).sort()) {
    const m = FILE.exec(file);
    if (!m) continue;
    const text = readFileSync(new URL(file, dir), 'utf8');
    out.push({
      name: m[1]!,
      file: `${label}${file}`,
      ...(m[2] !== undefined && { numberOfKeys: Number(m[2]) }),
      lua: resolveIncludes(text, new URL('includes/', dir), file, new Set(), []),
    });
  }
  return out;
}

function resolveIncludes(
  text: string,
  includes: URL,
  from: string,
  done: Set<string>,
  stack: string[],
): string {
  return text.replace(INCLUDE, (_, name: string) => {
    if (stack.includes(name)) throw new Error(`${from}: include "${name}" includes itself`);
    if (done.has(name)) return '';
    const url = new URL(`${name}.lua`, includes);
    if (!existsSync(url)) throw new Error(`${from}: no include "${name}" (${url.pathname})`);
    done.add(name);
    const body = readFileSync(url, 'utf8');
    return resolveIncludes(body, includes, `${name}.lua`, done, [...stack, name]).replace(
      /\n$/,
      '',
    );
  });
}

let loaded: ReadonlyMap<string, LuaScript> | undefined;

/** Every script of every layer, by name (read on first use). */
export function allScripts(): ReadonlyMap<string, LuaScript> {
  if (loaded) return loaded;
  const byName = new Map<string, LuaScript>();
  for (const layer of SCRIPT_LAYERS) {
    for (const s of readScripts(new URL(`../${layer}/lua/`, import.meta.url), `${layer}/lua/`)) {
      const other = byName.get(s.name);
      if (other) throw new Error(`two Lua scripts named "${s.name}": ${other.file}, ${s.file}`);
      byName.set(s.name, s);
    }
  }
  return (loaded = byName);
}

/**
 * The ioredis command of a script, `lua:<name>`: a name no method of the
 * client has, nor a command another module defines.
 */
export function commandOf(name: string): string {
  return `lua:${name}`;
}

const defined = new WeakSet<object>();

/**
 * Defines every script on `redis` (once per connection). A pipeline takes
 * its connection's commands when it is made, so a caller queueing a script
 * defines them before `redis.pipeline()` / `redis.multi()`.
 */
export function defineScripts(redis: RedisClient): void {
  if (defined.has(redis)) return;
  for (const s of allScripts().values()) {
    redis.defineCommand(commandOf(s.name), {
      lua: s.lua,
      ...(s.numberOfKeys !== undefined && { numberOfKeys: s.numberOfKeys }),
    });
  }
  defined.add(redis);
}

function commandOn(target: object, name: string, suffix = ''): ScriptCall | undefined {
  const fn = (target as Record<string, unknown>)[commandOf(name) + suffix];
  return typeof fn === 'function' ? (fn as ScriptCall) : undefined;
}

function unknownScript(name: string): Error {
  return new Error(`no Lua script "${name}" (src/<layer>/lua/${name}[-<keys>].lua)`);
}

/**
 * Runs script `name` with `args` (KEYS then ARGV, after the key count for a
 * script without one in its file name): one EVALSHA.
 */
export function callScript(redis: RedisClient, name: string, ...args: Arg[]): Promise<unknown> {
  defineScripts(redis);
  const fn = commandOn(redis, name);
  if (!fn) throw unknownScript(name);
  return fn.apply(redis, args);
}

/** As `callScript`, the reply's strings as Buffers (binary values, such as deflated bodies). */
export function callScriptBuffer(
  redis: RedisClient,
  name: string,
  ...args: Arg[]
): Promise<unknown> {
  defineScripts(redis);
  const fn = commandOn(redis, name, 'Buffer');
  if (!fn) throw unknownScript(name);
  return fn.apply(redis, args);
}

/**
 * Queues script `name` on a pipeline or transaction; one reply. A pipeline
 * sends its SHA (defined on its connection before it was made: see
 * `defineScripts`). A transaction (`redis.multi()`) sends its text: Redis
 * refuses a whole MULTI whose script it has forgotten (SCRIPT FLUSH), and
 * ioredis, which learns that from EXEC, would send the SHA again.
 */
export function queueScript(p: ChainableCommander, name: string, ...args: Arg[]): void {
  if (inTransaction(p)) {
    const s = allScripts().get(name);
    if (!s) throw unknownScript(name);
    const evalText = (p as unknown as { eval: (...a: Arg[]) => unknown }).eval;
    if (s.numberOfKeys === undefined) evalText.call(p, s.lua, ...args);
    else evalText.call(p, s.lua, s.numberOfKeys, ...args);
    return;
  }
  const fn = commandOn(p, name);
  if (fn) {
    fn.apply(p, args);
    return;
  }
  if (!allScripts().has(name)) throw unknownScript(name);
  throw new Error(
    `Lua script "${name}" is not defined on this pipeline's connection: call defineScripts(redis) before redis.pipeline()`,
  );
}

/** Whether `p` is inside MULTI (ioredis counts them in `_transactions`; a test guards it). */
function inTransaction(p: ChainableCommander): boolean {
  return ((p as unknown as { _transactions?: number })._transactions ?? 0) > 0;
}
