import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { deflateRawSync } from 'node:zlib';
import { RECENT_SLOT_MS } from '../../src/platform/rate-learner.js';
import {
  ON_THE_WAY_MS,
  PRIORITY_LIMIT,
  REBASE_AT,
  REBASE_IDLE_MS,
  ROUND,
} from '../../src/queue/fair-share.js';
import {
  HORIZON_MS,
  LOG_SLOTS,
  MAX_ECHOES,
  RECENT_SLOTS,
  STATE_FIELDS,
} from '../../src/queue/pacer-store.js';
import { MAX_UNKNOWN_READ } from '../../src/state/planned-writes.js';
import { allScripts, commandOf, readScripts } from '../../src/redis/scripts.js';

const SRC = join(import.meta.dirname, '../../src');

/** Every file under `dir`, relative to src/. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory()
      ? filesUnder(join(dir, e.name))
      : [relative(SRC, join(dir, e.name)).split('\\').join('/')],
  );
}

const files = filesUnder(SRC);
const luaFiles = files.filter((f) => /\/lua\/[^/]+\.lua$/.test(f));
const tsFiles = files.filter((f) => f.endsWith('.ts'));
const tsText = new Map(tsFiles.map((f) => [f, readFileSync(join(SRC, f), 'utf8')]));

describe('Lua scripts', () => {
  it('loads every .lua file of every layer, once, by its file name', () => {
    const loaded = [...allScripts().values()].map((s) => s.file).sort();
    expect(loaded.length).toBeGreaterThan(0);
    expect(loaded).toEqual(luaFiles.sort());
  });

  it('leaves no redis.call in a TypeScript file under src/', () => {
    const withLua = tsFiles.filter((f) => tsText.get(f)!.includes('redis.call('));
    expect(withLua).toEqual([]);
  });

  it('runs no script by its text: no EVAL but through a defined command', () => {
    // `.eval(SCRIPT, …` or `.eval(`…`: a script sent by its text (crm/ has an `eval` of its own).
    const evals = tsFiles.filter((f) =>
      /\.eval(sha)?\(\s*([A-Z][A-Z0-9_]*\b|`)/.test(tsText.get(f)!),
    );
    expect(evals).toEqual([]);
    const defines = tsFiles.filter((f) => tsText.get(f)!.includes('defineCommand('));
    expect(defines).toEqual(['redis/scripts.ts']);
  });

  it('every script named in src/ exists, and every script is used', () => {
    const named = new Set<string>();
    const literals = new Set<string>();
    for (const text of tsText.values()) {
      const calls = /(?:callScript|callScriptBuffer|queueScript)\(\s*[\w.]+,\s*'([a-z0-9-]+)'/g;
      for (const m of text.matchAll(calls)) named.add(m[1]!);
      for (const m of text.matchAll(/'([a-z0-9-]+)'/g)) literals.add(m[1]!);
    }
    expect(named.size).toBeGreaterThan(10);
    expect([...named].filter((n) => !allScripts().has(n))).toEqual([]);
    // Some callers pass the name through a helper of their own: used means named in src/.
    expect([...allScripts().keys()].filter((n) => !literals.has(n))).toEqual([]);
  });

  it('documents its KEYS and ARGV at the top of each file', () => {
    for (const f of luaFiles.filter((x) => !x.includes('/includes/'))) {
      const text = readFileSync(join(SRC, f), 'utf8');
      expect(text.startsWith('--[['), f).toBe(true);
      const head = text.slice(0, text.indexOf(']]'));
      expect(head, f).toMatch(/\n {2}Input\b/);
      expect(head, f).toMatch(/\n {2}Output:/);
      if (/KEYS\[/.test(text)) expect(head, f).toMatch(/KEYS/);
      if (/ARGV\[/.test(text)) expect(head, f).toMatch(/ARGV/);
    }
  });

  it('takes the key count from the file name', () => {
    expect(allScripts().get('renew-lock')?.numberOfKeys).toBe(1);
    expect(allScripts().get('pacer')?.numberOfKeys).toBe(2);
    expect(allScripts().get('hgets')?.numberOfKeys).toBeUndefined();
    expect(commandOf('renew-lock')).toBe('lua:renew-lock');
  });

  it("writes out the pacer's constants as pacer-store.ts has them", () => {
    const lua = allScripts().get('pacer')!.lua;
    const fields =
      /redis\.call\('HMGET', key, 'tat', 'notBefore', 'ok', 'v', 'booked', 'echo', (.*)\)\n/.exec(
        lua,
      );
    expect(fields?.[1]).toBe(STATE_FIELDS.map((s) => `'${s}'`).join(', '));
    expect(lua).toContain(`local horizon = tonumber(ARGV[7]) or ${HORIZON_MS}\n`);
    expect(lua).toContain(`local sec = math.floor(slot * ${RECENT_SLOT_MS} / 1000)\n`);
    expect(lua).toContain(`local mine = {{sec % ${LOG_SLOTS}, sec}}\n`);
    expect(lua).toContain(
      `if slot * ${RECENT_SLOT_MS} > now - ${RECENT_SLOTS} * ${RECENT_SLOT_MS} then mine[2] = {'d' .. (slot % ${RECENT_SLOTS}), slot} end\n`,
    );
    expect(lua).toContain(`while #echoes > ${MAX_ECHOES} do\n`);
  });

  it("writes out the write queue share's constants as fair-share.ts has them", () => {
    const lua = allScripts().get('fair-share')!.lua;
    expect(lua).toContain(
      `local ROUND, LIMIT, REBASE_AT, REBASE_IDLE_MS, ON_THE_WAY_MS = ${ROUND}, ${PRIORITY_LIMIT}, ${REBASE_AT}, ${REBASE_IDLE_MS}, ${ON_THE_WAY_MS}\n`,
    );
    expect(allScripts().get('fair-share')?.numberOfKeys).toBe(5);
  });

  it("writes out the plan's empty chunk and unknown-read bound as planned-writes.ts has them", () => {
    const lua = allScripts().get('finish-writes')!.lua;
    const empty = /local EMPTY_CHUNK = '((?:\\\d+)+)'\n/.exec(lua)?.[1];
    const bytes = empty?.split('\\').slice(1).map(Number);
    expect(bytes).toEqual([...deflateRawSync('[]', { level: 1 })]);
    expect(lua).toContain(`elseif size <= ${MAX_UNKNOWN_READ} then`);
    expect(lua).not.toContain('@include');
  });
});

describe('includes', () => {
  const dir = mkdtempSync(join(tmpdir(), 'crm-sync-lua-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const layer = (name: string, scripts: Record<string, string>): URL => {
    const root = join(dir, name);
    mkdirSync(join(root, 'includes'), { recursive: true });
    for (const [file, text] of Object.entries(scripts)) writeFileSync(join(root, file), text);
    return pathToFileURL(`${root}/`);
  };

  it('replaces an include line by the fragment, once per script, nested ones too', () => {
    const url = layer('ok', {
      'includes/a.lua': 'local function a() return 1 end\n',
      'includes/b.lua': '--- @include "a"\nlocal function b() return a() + 1 end\n',
      'two-1.lua': '--- @include "b"\n--- @include "a"\nreturn b()\n',
      'skip.txt': 'not a script',
    });
    const [s, ...rest] = readScripts(url, 'ok/');
    expect(rest).toEqual([]);
    expect(s).toEqual({
      name: 'two',
      file: 'ok/two-1.lua',
      numberOfKeys: 1,
      lua: 'local function a() return 1 end\nlocal function b() return a() + 1 end\n\nreturn b()\n',
    });
  });

  it('refuses a missing folder, and an include that is missing or includes itself', () => {
    const missing = layer('missing', { 'x.lua': '--- @include "nope"\nreturn 1\n' });
    expect(() => readScripts(missing, 'missing/')).toThrow(/x\.lua: no include "nope"/);
    const loop = layer('loop', {
      'includes/a.lua': '--- @include "b"\n',
      'includes/b.lua': '--- @include "a"\n',
      'y.lua': '--- @include "a"\nreturn 1\n',
    });
    expect(() => readScripts(loop, 'loop/')).toThrow(/include "a" includes itself/);
    const none = pathToFileURL(join(dir, 'not-there/'));
    expect(() => readScripts(none)).toThrow(
      /no Lua scripts at .*not-there\/ \(npm run build copies/,
    );
  });

  it('resolves the bucket-pattern include in the state scripts that name buckets', () => {
    const users = [...allScripts().values()].filter((x) => x.lua.includes('bucketPattern('));
    expect(users.map((x) => x.name).sort()).toEqual([
      'claim-identities',
      'contend-survivors',
      'ids-and-states',
      'mark-seen',
    ]);
    for (const x of users) {
      expect(x.lua).not.toContain('@include');
      expect(x.lua).toContain(
        "local function bucketPattern(at) return (string.gsub(at, '%%', '%%%%')) .. '%d' end\n",
      );
    }
  });
});
