/**
 * The shared request pacer on a real Redis and the sandbox's DRF sliding
 * window: two pacers (two replicas) sharing one Redis keep to one limit, a
 * fixed rate equal to the limit meets no 429, `auto` learns a limit it was
 * not told and carries it across a restart, and a 429 holds every caller.
 */
import { startSandbox, type Sandbox } from '@crm-sync/platform-sandbox';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { PlatformClient } from '../../src/platform/client.js';
import { RateLimitedError } from '../../src/platform/errors.js';
import { MAX_WAIT_MS } from '../../src/platform/retry-after.js';
import { closeRedis, createRedis } from '../../src/redis/connection.js';
import {
  FIXED_MARGIN,
  fixedPace,
  pacerKey,
  pacerModeOf,
  readPacerState,
  RedisPacer,
  TOGETHER_MS,
  type PacerMode,
} from '../../src/queue/pacer.js';
import {
  HORIZON_MS,
  scriptOf,
  SLOW_START_HORIZON_MS,
  STATE_FIELDS,
} from '../../src/queue/pacer-store.js';
import { turnsOf } from '../../src/queue/window-echo.js';
import { MIN_ROUND_MS } from '../../src/platform/rate-learner.js';
import { loadConfig } from '../../src/config.js';
import { startWorkerService } from '../../src/engine/worker-service.js';
import { silentLogger } from '../../src/log.js';
import { createMetrics } from '../../src/ops/metrics.js';
import { createShutdown } from '../../src/ops/shutdown.js';
import { pacedClient } from '../../src/cli/paced-client.js';
import { openProducer } from '../../src/cli/runtime.js';
import { useRedis } from '../harness/redis.js';

const { url, prefix: base } = useRedis();
const KEY = 'pacer-test-key';
const redis = [createRedis('worker', url), createRedis('worker', url)] as const;
const open: { close(): unknown }[] = [];

afterEach(async () => {
  for (const o of open.splice(0).reverse()) await o.close();
});
afterAll(async () => {
  for (const r of redis) await closeRedis(r);
});

let n = 0;
const prefixOf = () => `${base}-${++n}`;

async function sandbox(rateLimit: string): Promise<Sandbox> {
  const sb = await startSandbox({ apiKey: KEY, rateLimit, latencyMs: 5 });
  open.push(sb);
  return sb;
}

/** Redis' clock now (ms), as the pacer reads it. */
async function redisNow(): Promise<number> {
  const [s, us] = await redis[0].time();
  return Number(s) * 1_000 + Math.floor(Number(us) / 1_000);
}

async function pacerOn(i: 0 | 1, prefix: string, mode: PacerMode): Promise<RedisPacer> {
  const p = new RedisPacer({ redis: redis[i], prefix, mode });
  await p.start();
  open.push({ close: () => p.stop() });
  return p;
}

/**
 * The shared hold (`notBefore`, Redis' clock) after `pacer` is told of a 429
 * with `retryAfter`, answered `agoMs` before it is reported.
 */
async function holdAfter429(
  pacer: RedisPacer,
  prefix: string,
  retryAfter: string,
  agoMs: number,
): Promise<number> {
  const ticket = await pacer.acquire();
  const answered = Date.now() - agoMs;
  pacer.observe(429, { 'retry-after': retryAfter }, ticket, {
    sentAt: answered - 10,
    waitedMs: 10,
  });
  await pacer.settled();
  return Number(await redis[0].hget(pacerKey(prefix), 'notBefore'));
}

function clientOf(sb: Sandbox, pacer: RedisPacer): PlatformClient {
  const c = new PlatformClient({ baseUrl: sb.url, apiKey: KEY, pacer, maxSockets: 32 });
  open.push(c);
  return c;
}

/** `workers` callers per client sending GET /account until `until`; statuses counted. */
async function drive(clients: PlatformClient[], workers: number, ms: number) {
  const counts = { ok: 0, limited: 0 };
  const until = performance.now() + ms;
  await Promise.all(
    clients.flatMap((c) =>
      Array.from({ length: workers }, async () => {
        while (performance.now() < until) {
          try {
            await c.getAccount();
            counts.ok++;
          } catch (err) {
            if (!(err instanceof RateLimitedError)) throw err;
            counts.limited++;
          }
        }
      }),
    ),
  );
  return counts;
}

describe('pacer: a fixed rate', () => {
  it('two replicas at the sliding window’s own limit share it: no 429, close to the limit', async () => {
    const sb = await sandbox('40/s');
    const prefix = prefixOf();
    const mode = { kind: 'fixed', rate: 40 } as const;
    const clients = [
      clientOf(sb, await pacerOn(0, prefix, mode)),
      clientOf(sb, await pacerOn(1, prefix, mode)),
    ];
    const started = performance.now();
    const counts = await drive(clients, 6, 3_000);
    const rate = counts.ok / ((performance.now() - started) / 1000);
    expect(counts.limited).toBe(0);
    // Each alone would go at 38/s; together they must not.
    expect(rate).toBeLessThanOrEqual(40);
    expect(rate).toBeGreaterThan(40 * 0.8);
  });

  it('lets turns due within TOGETHER_MS go out together, and never sooner than that', async () => {
    // Paced at 900/s: a turn every 1.11 ms, each on its own timer if not taken together.
    const pacer = await pacerOn(0, prefixOf(), { kind: 'fixed', rate: 1_000 });
    // The limit it knows is the one it was told, not its pace.
    expect(await pacer.limit()).toEqual({ perSecond: 1_000, known: true });
    await pacer.acquire();
    const started = performance.now();
    const at: number[] = [];
    await Promise.all(
      Array.from({ length: 300 }, () => pacer.acquire().then(() => at.push(performance.now()))),
    );
    // Released together: in groups of about TOGETHER_MS of turns (9 here), not one by one.
    let groups = 1;
    for (let i = 1; i < at.length; i++) if (at[i]! - at[i - 1]! > 0.5) groups++;
    expect(groups).toBeLessThan(at.length / 4);
    // Early by TOGETHER_MS at most: the 300 turns still span 299 intervals less that.
    expect(at.at(-1)! - started).toBeGreaterThanOrEqual(
      (299 / fixedPace(1_000)) * 1000 - TOGETHER_MS - 1,
    );
  });
});

describe('pacer: the window’s echo', () => {
  it('the script moves a turn booked inside an echo to its end, spaces the rest from there, and forgets a passed echo', async () => {
    const prefix = prefixOf();
    const call = scriptOf(redis[0]);
    const [key, log] = [pacerKey(prefix), `${pacerKey(prefix)}:log`];
    const [sec] = await redis[0].time();
    // The next free turn 10 s ahead, so that Redis' clock does not move the first one.
    const at = (Number(sec) + 10) * 1_000;
    await redis[0].hset(key, 'tat', at);
    const rate = fixedPace(100);
    const interval = 1_000 / rate;
    await call(key, log, 'grant', 0, '', rate, 5, `${at + 20}:${at + 50}`);
    expect(await redis[0].hget(key, 'echo')).toBe(`${at + 20}:${at + 50}`);
    const reply = (await call(key, log, 'grant', 5, '', rate, 5, '')) as string[];
    const first = Number(reply[1]);
    const moves = new Map<number, number>();
    for (let i = 7 + STATE_FIELDS.length; i + 1 < reply.length; i += 2)
      moves.set(Number(reply[i]), Number(reply[i + 1]));
    const turns = turnsOf(first, Number(reply[2]), Number(reply[3]), moves);
    // The third turn (at + 20.6) fell inside it: at its end, the rest spaced from there.
    expect(turns).toEqual([at, at + interval, at + 50, at + 50 + interval, at + 50 + 2 * interval]);
    expect(Number(await redis[0].hget(key, 'tat'))).toBeCloseTo(at + 50 + 3 * interval, 0);
    expect(Number(await redis[0].hget(key, 'moved'))).toBeCloseTo(50 - 2 * interval, 3);
    // Every turn from now on comes after it: gone.
    expect(await redis[0].hget(key, 'echo')).toBe('');
  });

  it('a request written out late reports its echo to Redis; one written out on its turn, none', async () => {
    const prefix = prefixOf();
    const a = await pacerOn(0, prefix, { kind: 'fixed', rate: 100 });
    const echoes = async (): Promise<[number, number][]> =>
      ((await redis[0].hget(pacerKey(prefix), 'echo')) ?? '')
        .split(',')
        .filter(Boolean)
        .map((e) => e.split(':').map(Number) as [number, number]);
    // On its turn (now): written out as the turn came, no echo.
    const onTime = await redisNow();
    a.observe(
      201,
      {},
      { turn: onTime, firedAt: performance.now() },
      { sentAt: Date.now(), waitedMs: 5 },
    );
    // Its turn was 150 ms ago: the turn a window of the limit later (1,000 / 0.97
    // ms) may not come before a window after it went out, 1,000 + TOGETHER_MS + 2 ms.
    const before = await redisNow();
    const turn = before - 150;
    // Released on its turn, written out 150 ms later (a stalled worker).
    const firedAt = performance.now() - 150;
    a.observe(201, {}, { turn, firedAt }, { sentAt: Date.now(), waitedMs: 5 });
    const after = await redisNow();
    let found: [number, number][] = [];
    for (let i = 0; i < 100 && found.length === 0; i++) {
      await new Promise((r) => setTimeout(r, 20));
      found = await echoes();
    }
    expect(found).toHaveLength(1);
    const [from, until] = found[0]!;
    expect(from).toBe(Math.floor(turn + 1_000 / FIXED_MARGIN));
    expect(until).toBeGreaterThanOrEqual(before + 1_000 + TOGETHER_MS + 2 - 2);
    expect(until).toBeLessThanOrEqual(after + 1_000 + TOGETHER_MS + 2 + 2);
    // The on-time one left nothing a window after its turn.
    expect(from).toBeLessThan(onTime + 1_000 / FIXED_MARGIN);
  });
});

describe('pacer: a 429', () => {
  it('holds every caller, of every replica, until its Retry-After', async () => {
    const sb = await sandbox('2/s');
    const prefix = prefixOf();
    // Paced far above the limit: the third request in a second is refused.
    const mode = { kind: 'fixed', rate: 1000 } as const;
    const [a, b] = [await pacerOn(0, prefix, mode), await pacerOn(1, prefix, mode)];
    const c = clientOf(sb, a);
    await c.getAccount();
    await c.getAccount();
    await expect(c.getAccount()).rejects.toBeInstanceOf(RateLimitedError);
    await a.settled();
    const held = performance.now();
    await b.acquire();
    // Retry-After: 1 (whole seconds), from when the 429 was answered.
    expect(performance.now() - held).toBeGreaterThan(700);
  });

  it('counts the Retry-After from when the 429 was answered, not from when it is reported', async () => {
    const prefix = prefixOf();
    const [a, b] = [
      await pacerOn(0, prefix, { kind: 'fixed', rate: 1000 }),
      await pacerOn(1, prefix, { kind: 'fixed', rate: 1000 }),
    ];
    // Answered 400 ms ago (a busy event loop reports it only now), Retry-After: 1.
    const notBefore = await holdAfter429(a, prefix, '1', 400);
    const left = notBefore - (await redisNow());
    expect(left).toBeGreaterThan(500);
    expect(left).toBeLessThan(700);
    const held = performance.now();
    await b.acquire();
    expect(performance.now() - held).toBeGreaterThan(500);
    expect(performance.now() - held).toBeLessThan(750);
  });

  it('holds for an hour at most, whatever the Retry-After says', async () => {
    const prefix = prefixOf();
    const a = await pacerOn(0, prefix, { kind: 'fixed', rate: 1000 });
    // A Unix time where seconds to wait belong: 54 years.
    const notBefore = await holdAfter429(a, prefix, '1718000000', 0);
    const now = await redisNow();
    expect(notBefore - now).toBeGreaterThan(MAX_WAIT_MS - 1_000);
    expect(notBefore - now).toBeLessThanOrEqual(MAX_WAIT_MS);
  });

  it('holds until the time a Retry-After date names, however late the 429 is reported', async () => {
    const prefix = prefixOf();
    const a = await pacerOn(0, prefix, { kind: 'fixed', rate: 1000 });
    // Answered 400 ms ago, asking for a time a second or more after that (whole seconds).
    const date = new Date(Date.now() - 400 + 2_000).toUTCString();
    const notBefore = await holdAfter429(a, prefix, date, 400);
    // Redis' clock is this machine's: the hold ends at the date, not 400 ms before it.
    expect(Math.abs(notBefore - Date.parse(date))).toBeLessThan(100);
  });

  it("holds the requests of a command (plan, audit) as it holds the workers'", async () => {
    const sb = await sandbox('2/s');
    const prefix = prefixOf();
    const worker = await pacerOn(0, prefix, { kind: 'fixed', rate: 1000 });
    const c = clientOf(sb, worker);
    await c.getAccount();
    await c.getAccount();
    await expect(c.getAccount()).rejects.toBeInstanceOf(RateLimitedError);
    await worker.settled();
    const config = loadConfig({
      REDIS_URL: url,
      CRM_SYNC_PREFIX: prefix,
      PLATFORM_BASE_URL: sb.url,
      PLATFORM_API_KEY: KEY,
      PLATFORM_RATE_LIMIT: '1000',
    });
    const producer = await openProducer(config);
    const command = pacedClient(config, producer, silentLogger);
    try {
      const held = performance.now();
      await command.client.getAccount();
      expect(performance.now() - held).toBeGreaterThan(700);
    } finally {
      command.close();
      await producer.close();
    }
  });

  it('drops the turns of callers that went away instead of serving them later in a burst', async () => {
    const pacer = await pacerOn(0, prefixOf(), { kind: 'fixed', rate: 20 });
    // Four callers book four turns (about 53 ms apart); three go away once the first is served.
    const aborts = Array.from({ length: 4 }, () => new AbortController());
    const waits = aborts.map((a) => pacer.acquire(a.signal).catch(() => 'aborted'));
    await waits[0];
    for (const a of aborts.slice(1)) a.abort();
    await Promise.all(waits);
    await new Promise((r) => setTimeout(r, 500));
    const at: number[] = [];
    await Promise.all(
      Array.from({ length: 3 }, () => pacer.acquire().then(() => at.push(performance.now()))),
    );
    // Evenly spaced at the rate: two intervals from the first to the third, not all at once.
    expect(Math.max(...at) - Math.min(...at)).toBeGreaterThan(80);
  });

  it('gives the next turns to reads waiting, in their order, ahead of the writes waiting', async () => {
    const pacer = await pacerOn(0, prefixOf(), { kind: 'fixed', rate: 20 });
    const order: string[] = [];
    const take = (name: string, first: boolean) =>
      pacer.acquire(undefined, first).then(() => order.push(name));
    await Promise.all([
      ...['w0', 'w1', 'w2', 'w3'].map((w) => take(w, false)),
      take('r0', true),
      take('w4', false),
      take('r1', true),
    ]);
    expect(order).toEqual(['r0', 'r1', 'w0', 'w1', 'w2', 'w3', 'w4']);
  });

  it("sends a client's GET ahead of the writes waiting for their turns", async () => {
    const sb = await sandbox('1000/s');
    const client = clientOf(sb, await pacerOn(0, prefixOf(), { kind: 'fixed', rate: 10 }));
    const done: string[] = [];
    const writes = Array.from({ length: 5 }, (_, i) =>
      client
        .createCompany({ name: `Paced ${i}`, external_id: `paced:${i}` })
        .then(() => done.push(`create ${i}`)),
    );
    const read = client.getAccount().then(() => done.push('get'));
    await Promise.all([...writes, read]);
    // At 10/s the five creates take half a second; the GET goes with the first turn.
    expect(done.indexOf('get')).toBeLessThan(2);
  });

  it('rejects a waiting caller whose signal aborts', async () => {
    const prefix = prefixOf();
    const p = await pacerOn(0, prefix, { kind: 'fixed', rate: 0.5 });
    await p.acquire();
    const ac = new AbortController();
    const waiting = p.acquire(ac.signal);
    ac.abort(new Error('shutdown'));
    await expect(waiting).rejects.toThrow('shutdown');
  });
});

describe('pacer: auto', () => {
  it('counts what the window let through by when requests were written out, not when their turns fired', async () => {
    const prefix = prefixOf();
    const p = await pacerOn(0, prefix, { kind: 'auto', start: 5, min: 1, max: 2_000 });
    const [local, wall] = [performance.now(), Date.now()];
    const answered = (firedAgo: number, writtenAgo: number, status: number) =>
      p.observe(
        status,
        status === 429 ? { 'retry-after': '1' } : {},
        { turn: 0, firedAt: local - firedAgo },
        { sentAt: wall - writtenAgo, waitedMs: 5 },
      );
    // 80 whose turns fired and that were written out 1.3 s ago; 60 whose turns fired then
    // too, written out 0.4 s ago (a worker that stalled); then the refused one, written now.
    for (let i = 0; i < 80; i++) answered(1_300, 1_300, 201);
    for (let i = 0; i < 60; i++) answered(1_300, 400, 201);
    answered(1_250, 5, 429);
    await p.settled();
    // The platform's window when the refused one arrived held the 60; the second before its
    // turn fired, all 140.
    expect(await readPacerState(redis[0], prefix)).toMatchObject({
      ceiling: 60,
      source: 'limited',
    });
  });

  it('learns a limit it was not told, shares it, and a restarted pacer starts from it', async () => {
    const sb = await sandbox('60/s');
    const prefix = prefixOf();
    const mode = { kind: 'auto', start: 5, min: 1, max: 500 } as const;
    const [a, b] = [await pacerOn(0, prefix, mode), await pacerOn(1, prefix, mode)];
    // Nothing learned yet: the most it may go to stands in, not known.
    expect(await a.limit()).toEqual({ perSecond: 500, known: false });
    const clients = [clientOf(sb, a), clientOf(sb, b)];
    // Slow start doubles every round (100 ms) from 5/s: it meets the limit within 3 s.
    const counts = await drive(clients, 8, 3_000);
    const learned = await readPacerState(redis[0], prefix);
    expect(learned?.mode === 'auto' && learned.ceiling).toBeGreaterThan(50);
    // Then it settles under the limit.
    const tail = await drive(clients, 8, 4_000);
    await Promise.all([a.settled(), b.settled()]);
    // The replicas stop, so nothing but the new process below moves the stored rate.
    a.stop();
    b.stop();
    const view = await readPacerState(redis[0], prefix);
    expect(view?.mode).toBe('auto');
    const st = view?.mode === 'auto' ? view : undefined;
    expect(st?.ceiling).toBeGreaterThan(50);
    expect(st?.ceiling).toBeLessThan(80);
    // Settled under the ceiling; a probe may lift both a little past the limit for a while.
    expect(st!.rate).toBeLessThan(st!.ceiling);
    expect(st!.rate).toBeGreaterThan(60 * 0.75);
    // Settled: the last seconds went at the learned rate, with few 429s.
    expect(tail.ok / 4).toBeGreaterThan(60 * 0.75);
    // Its end refuses what was in flight when the window filled (16 callers), no more.
    expect(counts.limited).toBeLessThanOrEqual(16);
    expect(tail.limited).toBeLessThan(tail.ok * 0.03);

    // A new process on the same Redis carries on from the learned rate (not the start of 5/s;
    // its own first tick may already have nudged it by a fraction of a request a second).
    const c = await pacerOn(0, prefix, mode);
    expect(c.rate).toBeCloseTo(st!.rate, 0);
    expect(await c.limit()).toEqual({ perSecond: st!.ceiling, known: true });
  });
});

describe('pacer: a slow start', () => {
  it('books its turns a short span ahead, so that a doubling takes effect within a round; a learned rate the whole horizon', async () => {
    const mode = { kind: 'auto', start: 5, min: 1, max: 2_000 } as const;
    const booked: number[] = [];
    for (const ceiling of [0, 1_000]) {
      const prefix = prefixOf();
      const [sec] = await redis[0].time();
      // 1,000/s, its next step a minute away: in its slow start (nothing learned), or at a limit learned.
      const changedAt = (Number(sec) + 60) * 1_000;
      await redis[0].hset(
        pacerKey(prefix),
        'rate',
        1_000,
        'ceiling',
        ceiling,
        'changedAt',
        changedAt,
      );
      const p = await pacerOn(0, prefix, mode);
      // A caller alone books its own turn; the 399 after it then book together.
      const callers = Array.from({ length: 400 }, () => p.acquire());
      const settled = Promise.allSettled(callers);
      await callers[1];
      // Nothing books again before their turns run short.
      p.stop();
      booked.push(Number(await redis[0].hget(pacerKey(prefix), 'booked')) - 1);
      await settled;
    }
    // A turn a millisecond: the span's, and the one at its start.
    expect(booked).toEqual([SLOW_START_HORIZON_MS + 1, HORIZON_MS + 1]);
  });

  it('books half a round ahead, the round the platform’s answer time when that is shorter', async () => {
    const prefix = prefixOf();
    const [sec] = await redis[0].time();
    const changedAt = (Number(sec) + 60) * 1_000;
    await redis[0].hset(pacerKey(prefix), 'rate', 1_000, 'ceiling', 0, 'changedAt', changedAt);
    const p = await pacerOn(0, prefix, { kind: 'auto', start: 5, min: 1, max: 2_000 });
    // Answered 5 ms after it went out: the round is the shortest.
    const ticket = await p.acquire();
    p.observe(200, {}, ticket, { sentAt: Date.now() - 5, waitedMs: 5 });
    const before = Number(await redis[0].hget(pacerKey(prefix), 'booked'));
    const callers = Array.from({ length: 400 }, () => p.acquire());
    const settled = Promise.allSettled(callers);
    await callers[1];
    p.stop();
    // The first of them books its own turn, the rest a span's together.
    const booked = Number(await redis[0].hget(pacerKey(prefix), 'booked')) - before - 1;
    await settled;
    expect(booked).toBe(MIN_ROUND_MS / 2 + 1);
  });

  it('doubles at a booking with more callers than turns, however little was booked since its last step', async () => {
    const prefix = prefixOf();
    const now = await redisNow();
    // At 100/s, a success counted, then idle for 300 ms: the demand since reads below 50/s
    // (seven turns booked here) for the whole 140-500 ms that a step measures it over.
    await redis[0].hset(
      pacerKey(prefix),
      'rate',
      100,
      'ceiling',
      0,
      'changedAt',
      now - 300,
      'ok',
      1,
    );
    const p = await pacerOn(0, prefix, { kind: 'auto', start: 20, min: 1, max: 2_000 });
    const callers = Array.from({ length: 50 }, () => p.acquire());
    const settled = Promise.allSettled(callers);
    // The first books its own turn; the 49 after it find six turns for them.
    await callers[1];
    p.stop();
    await p.settled();
    await settled;
    expect(await readPacerState(redis[0], prefix)).toMatchObject({ rate: 200, source: 'ramp' });
  });

  it('starts, as a config sets it up, with turns no further apart than its booking span: the first doubling is not held back', async () => {
    const p = await pacerOn(0, prefixOf(), pacerModeOf({ rateMode: 'auto', rateLimit: 2_000 }));
    const callers = Array.from({ length: 20 }, () => p.acquire());
    const settled = Promise.allSettled(callers);
    const [first, second] = await Promise.all([callers[0]!, callers[1]!]);
    p.stop();
    await settled;
    // A turn further ahead than the span would be booked at the start rate
    // whatever the learner decided meanwhile: a doubling would wait for it.
    expect(second.turn - first.turn).toBeGreaterThan(0);
    expect(second.turn - first.turn).toBeLessThanOrEqual(SLOW_START_HORIZON_MS);
  });

  it('starts learning again when its shared state is gone (a Redis that kept nothing)', async () => {
    const prefix = prefixOf();
    const mode = { kind: 'auto', start: 20, min: 1, max: 2_000 } as const;
    const p = await pacerOn(0, prefix, mode);
    await redis[0].hset(pacerKey(prefix), { rate: 42, ceiling: 44, source: 'limited' });
    await p.acquire();
    expect(p.learned).toMatchObject({ rate: 42, ceiling: 44 });
    await redis[0].del(pacerKey(prefix));
    // The next booking finds no state: the pacer starts it again, from the slow start.
    await p.acquire();
    await p.settled();
    expect(await readPacerState(redis[0], prefix)).toMatchObject({
      mode: 'auto',
      rate: 20,
      ceiling: 0,
      source: 'start',
    });
    expect(p.learned).toMatchObject({ rate: 20, source: 'start' });
  });
});

describe('worker service', () => {
  it('paces with what an earlier process learned, and shows it on /metrics', async () => {
    const sb = await sandbox('50/s');
    const prefix = prefixOf();
    const mode = { kind: 'auto', start: 5, min: 1, max: 200 } as const;
    // An earlier worker learned 42/s and stopped: its state is in the pacer's hash.
    const earlier = await pacerOn(0, prefix, mode);
    earlier.stop();
    await redis[0].hset(pacerKey(prefix), { rate: 42, ceiling: 44, source: 'limited' });

    const metrics = createMetrics({ defaultMetrics: false });
    const shutdown = createShutdown(silentLogger, { deadlineMs: 2_000 });
    try {
      const config = loadConfig({
        REDIS_URL: url,
        CRM_SYNC_PREFIX: prefix,
        PLATFORM_BASE_URL: sb.url,
        PLATFORM_API_KEY: KEY,
        LOG_LEVEL: 'silent',
      });
      expect(config.platform).toMatchObject({ rateMode: 'auto', rateLimit: 200 });
      const service = await startWorkerService({ config, logger: silentLogger, shutdown, metrics });
      const text = await metrics.registry.metrics();
      expect(text).toMatch(/^crm_sync_platform_rate 42$/m);
      // The limit its runs' chunks are cut by: the one learned, not PLATFORM_RATE_LIMIT_MAX.
      expect(await service.ctx.platformLimit?.()).toEqual({ perSecond: 44, known: true });
      // The client paces through it: two requests at 42/s are about 24 ms apart at least.
      const t0 = performance.now();
      await service.ctx.client.getAccount();
      await service.ctx.client.getAccount();
      await service.ctx.client.getAccount();
      expect(performance.now() - t0).toBeGreaterThan(40);
    } finally {
      await shutdown.shutdown('test');
    }
  });
});
