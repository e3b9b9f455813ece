import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callScript, defineScripts, queueScript } from '../../src/redis/scripts.js';
import { execAll, hgets, hsets } from '../../src/state/pipeline.js';
import { removeDir, startRedisServer, type RedisServer } from '../harness/redis-server.js';

// A redis-server of our own: the test resets its statistics and flushes its script cache.
let server: RedisServer;
const clients: Redis[] = [];

beforeAll(async () => {
  server = await startRedisServer();
});

afterAll(async () => {
  for (const c of clients) c.disconnect();
  await server.stop();
  removeDir(server.dir);
});

function client(): Redis {
  const c = new Redis(server.url, { maxRetriesPerRequest: 1 });
  clients.push(c);
  return c;
}

/** Calls of each scripting command since the last CONFIG RESETSTAT, from INFO commandstats. */
async function scriptCalls(redis: Redis): Promise<{ eval: number; evalsha: number }> {
  const info = await redis.info('commandstats');
  const calls = (name: string) =>
    Number(new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(info)?.[1] ?? 0);
  return { eval: calls('eval'), evalsha: calls('evalsha') };
}

describe('Lua scripts as defined commands', () => {
  it("sends a script's text once on a connection, then only its SHA", async () => {
    const redis = client();
    await redis.config('RESETSTAT');
    const numbers = [];
    for (const name of ['a', 'b', 'a', 'c', 'b']) {
      numbers.push(await callScript(redis, 'assign-number', 'numbers', name));
    }
    expect(numbers).toEqual([1, 2, 1, 3, 2]);
    expect(await redis.hgetall('numbers')).toEqual({
      n: '3',
      'r:a': '1',
      's:1': 'a',
      'r:b': '2',
      's:2': 'b',
      'r:c': '3',
      's:3': 'c',
    });
    expect(await scriptCalls(redis)).toEqual({ eval: 1, evalsha: 4 });
  });

  it('queues scripts in a pipeline, one reply each, after defineScripts', async () => {
    const redis = client();
    defineScripts(redis);
    const p = redis.pipeline();
    hsets(p, [
      ['h1', 'x', '1'],
      ['h2', 'y', '2'],
      ['h1', 'z', '3'],
    ]);
    hgets(p, [
      ['h1', 'x'],
      ['h2', 'y'],
      ['h2', 'x'],
    ]);
    p.get('h3');
    expect(await execAll(p, 'test')).toEqual([3, ['1', '2', null], null]);
  });

  it('refuses a pipeline made before its connection had the scripts', () => {
    const redis = client();
    const p = redis.pipeline();
    expect(() => queueScript(p, 'hgets', 1, 'k', 'f')).toThrow(
      /"hgets" is not defined on this pipeline's connection: call defineScripts\(redis\)/,
    );
    expect(() => queueScript(p, 'no-such-script', 0)).toThrow(/no Lua script "no-such-script"/);
    expect(() => callScript(redis, 'no-such-script', 0)).toThrow(/no Lua script "no-such-script"/);
  });

  it('runs again after Redis forgot the script (SCRIPT FLUSH): the text is sent anew', async () => {
    const redis = client();
    expect(await callScript(redis, 'release-lock', 'lock', 't')).toBe(0);
    await redis.script('FLUSH');
    await redis.set('lock', 't');
    await redis.config('RESETSTAT');
    expect(await callScript(redis, 'release-lock', 'lock', 't')).toBe(1);
    expect(await redis.exists('lock')).toBe(0);
    // The SHA first (NOSCRIPT), then the text.
    expect(await scriptCalls(redis)).toEqual({ eval: 1, evalsha: 1 });
  });

  it('answers in a pipeline and in a transaction after SCRIPT FLUSH too', async () => {
    const redis = client();
    defineScripts(redis);
    await redis.hset('h', 'f', 'v');
    const read = async (tx: boolean) => {
      const p = tx ? redis.multi() : redis.pipeline();
      hgets(p, [['h', 'f']]);
      return execAll(p, 'reading');
    };
    expect(await read(false)).toEqual([['v']]);
    await redis.script('FLUSH');
    expect(await read(false)).toEqual([['v']]);
    expect(await read(true)).toEqual([['v']]);
    await redis.script('FLUSH');
    // A transaction sends the text: Redis would refuse the whole MULTI for an unknown SHA.
    await redis.config('RESETSTAT');
    expect(await read(true)).toEqual([['v']]);
    expect(await scriptCalls(redis)).toEqual({ eval: 1, evalsha: 0 });
  });
});
