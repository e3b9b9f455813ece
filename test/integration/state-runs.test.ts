import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import type { WriteAction } from '../../src/sync/action.js';
import { hashTag } from '../../src/redis/target.js';
import { commandOf } from '../../src/redis/scripts.js';
import { claimNames } from '../../src/state/claim-digest.js';
import { scrubText } from '../../src/log.js';
import { stripCredentials } from '../../src/state/redaction.js';
import type { FailureRow } from '../../src/state/runs.js';
import type { WriteOutcome } from '../../src/state/progress.js';
import { StateStore } from '../../src/state/store.js';
import { keysMatching, useRedis } from '../harness/redis.js';

const { redis, prefix, url } = useRedis();
let clock = 1_700_000_000_000;
const store = new StateStore(redis, { prefix, now: () => clock });

const base = { entity: 'companies', mode: 'upsert', source: '/data/accounts.csv' } as const;

describe('runs', () => {
  it('creates, reads, updates and counts a run', async () => {
    const id = await store.runs.create({
      ...base,
      id: 'job-1',
      job: 'accounts',
      options: { full: true },
    });
    expect(id).toBe('job-1');
    expect(await store.runs.get('job-1')).toMatchObject({
      id: 'job-1',
      job: 'accounts',
      entity: 'companies',
      mode: 'upsert',
      source: '/data/accounts.csv',
      options: { full: true },
      status: 'queued',
      createdAt: clock,
      timings: {},
    });
    await store.runs.update('job-1', {
      status: 'writing',
      phase: 'enqueueing writes',
      startedAt: clock + 1,
      timings: { plan: 120 },
    });
    await Promise.all(
      Array.from({ length: 50 }, () => store.runs.increment('job-1', { read: 2, created: 1 })),
    );
    await store.runs.increment('job-1', { writesPlanned: 7, unchanged: 0 });
    await store.runs.update('job-1', {
      status: 'completed',
      finishedAt: clock + 9,
      timings: { write: 30 },
    });
    const run = await store.runs.get('job-1');
    expect(run).toMatchObject({
      status: 'completed',
      phase: 'enqueueing writes',
      startedAt: clock + 1,
      finishedAt: clock + 9,
      timings: { plan: 120, write: 30 },
    });
    expect(run!.counts).toMatchObject({
      read: 100,
      created: 50,
      writesPlanned: 7,
      failed: 0,
      orphans: 0,
    });
    await expect(store.runs.update('nope', { status: 'failed' })).rejects.toMatchObject({
      code: 'state.unknown-run',
    });
    expect(await store.runs.get('nope')).toBeNull();
  });

  it('keeps an existing run when created again (a redelivered job)', async () => {
    await store.runs.create({ ...base, id: 'job-2', job: 'accounts' });
    await store.runs.increment('job-2', { read: 5 });
    await store.runs.create({ ...base, id: 'job-2', job: 'accounts', source: '/other.csv' });
    expect(await store.runs.get('job-2')).toMatchObject({
      source: '/data/accounts.csv',
      counts: { read: 5 },
    });
  });

  it('lists runs newest first, of all jobs or of one', async () => {
    for (const [n, job] of ['a', 'b', 'a', 'a'].entries()) {
      clock += 1000;
      await store.runs.create({ ...base, id: `list-${n}`, job: `list-${job}` });
    }
    const all = await store.runs.list({ limit: 3 });
    expect(all.map((r) => r.id)).toEqual(['list-3', 'list-2', 'list-1']);
    expect((await store.runs.list({ job: 'list-a' })).map((r) => r.id)).toEqual([
      'list-3',
      'list-2',
      'list-0',
    ]);
    expect(
      (await store.runs.list({ job: 'list-a', limit: 1, offset: 1 })).map((r) => r.id),
    ).toEqual(['list-2']);
    expect(await store.runs.list({ job: 'never' })).toEqual([]);
    const generated = await store.runs.create({ ...base, job: 'gen' });
    expect(generated).toMatch(/^[0-9a-z]+-[0-9a-f]{8}$/);
  });

  it('stores no credentials: source URL stripped, error scrubbed', async () => {
    await store.runs.create({
      ...base,
      id: 'secret-run',
      job: 'remote',
      source: 'https://crm-user:hunter2-pass@exports.example.com/a.csv?api_key=k3y-s3cret&day=mon',
    });
    await store.runs.update('secret-run', {
      status: 'failed',
      error:
        'GET https://u:hunter2-pass@x.example/ failed; request had Authorization: sk_live_abcdef123456 and Bearer eyJhbGciOiJIUzI1NiJ9',
    });
    const run = await store.runs.get('secret-run');
    expect(run!.source).toBe('https://exports.example.com/a.csv?api_key=REDACTED&day=mon');
    const raw = JSON.stringify(await redis.hgetall(store.keys.run('secret-run')));
    for (const secret of [
      'hunter2-pass',
      'crm-user',
      'k3y-s3cret',
      'sk_live_abcdef123456',
      'eyJhbGciOiJIUzI1NiJ9',
    ]) {
      expect(raw).not.toContain(secret);
    }
    expect(run!.error).toContain('Authorization: REDACTED');
  });
});

describe('redaction', () => {
  it.each([
    ['/data/x.csv', '/data/x.csv'],
    ['https://h.example/x.csv', 'https://h.example/x.csv'],
    [
      'https://a:b@h.example/x?token=t&sig=s&page=2',
      'https://h.example/x?token=REDACTED&sig=REDACTED&page=2',
    ],
    ['s3://key:secret@bucket/x.csv', 's3://bucket/x.csv'],
  ])('stripCredentials(%s)', (input, expected) => {
    expect(stripCredentials(input)).toBe(expected);
  });

  it('scrubs header-like text', () => {
    expect(scrubText('x-api-key=abc123456 cookie: sid=1')).toBe(
      'x-api-key=REDACTED cookie: REDACTED',
    );
    expect(scrubText('{"authorization":"k-123456789"}')).toBe('{"authorization":"REDACTED"}');
  });
});

describe('failures', () => {
  it('keeps every failed row, in order, listable in pages', async () => {
    const rows: FailureRow[] = Array.from({ length: 2500 }, (_, n) => ({
      line: n + 2,
      kind: n % 5 === 0 ? 'rejected' : 'invalid',
      field: 'email',
      reason: n % 5 === 0 ? 'email: Enter a valid email address.' : 'not an e-mail address',
      value: `bad-${n}`,
      identity: `x:E${n}`,
    }));
    await store.runs.addFailures('fail-run', rows.slice(0, 1234));
    await store.runs.addFailures('fail-run', rows.slice(1234));
    expect(await store.runs.countFailures('fail-run')).toBe(2500);
    const read: FailureRow[] = [];
    for (let offset = 0; ; offset += 400) {
      const page = await store.runs.listFailures('fail-run', { offset, limit: 400 });
      if (page.length === 0) break;
      read.push(...page);
    }
    expect(read).toEqual(rows);
    await store.runs.addFailures('fail-run', [
      { line: 9, kind: 'invalid', reason: 'too long', value: 'x'.repeat(5000) },
    ]);
    const [long] = await store.runs.listFailures('fail-run', { offset: 2500 });
    expect(String(long!.value)).toMatch(/^x{1000}… \(5000 characters\)$/);
    expect(await store.runs.listFailures('empty-run')).toEqual([]);
  });
});

describe('run scratch', () => {
  it('finds identities claimed twice across batches, reporting every row once', async () => {
    const run = 'claims-run';
    expect(
      await store.claims.claim(run, [
        { line: 2, keys: ['x:E1', 'a:A1'] },
        { line: 3, keys: ['x:E2'] },
      ]),
    ).toEqual([]);
    // Line 4 repeats line 2's account id; line 5 repeats line 4's external id; line 6 is fine.
    const second = await store.claims.claim(run, [
      { line: 4, keys: ['x:E4', 'a:A1'] },
      { line: 5, keys: ['x:E4'] },
      { line: 6, keys: ['x:E6'] },
    ]);
    expect(second).toEqual([
      { line: 4, identity: 'a:A1', otherLines: [2, 5], earlier: false },
      { line: 5, identity: 'x:E4', otherLines: [4], earlier: false },
      { line: 2, identity: 'a:A1', otherLines: [4], earlier: true },
    ]);
    // A third row with E1: it conflicts; line 2 is not reported again.
    expect(await store.claims.claim(run, [{ line: 7, keys: ['x:E1'] }])).toEqual([
      { line: 7, identity: 'x:E1', otherLines: [2], earlier: false },
    ]);
    // Re-reading the export (a resumed run) gives the same verdicts for the same rows.
    const again = await store.claims.claim(run, [
      { line: 2, keys: ['x:E1', 'a:A1'] },
      { line: 3, keys: ['x:E2'] },
    ]);
    expect(again).toEqual([{ line: 2, identity: 'a:A1', otherLines: [4, 7], earlier: false }]);
    expect(
      await redis.pttl(store.keys.claimBucket(run, claimNames(['a:A1']).buckets[0]!)),
    ).toBeGreaterThan(0);
    expect(await store.claims.holders(run, ['a:A1', 'x:E4', 'x:nope'])).toEqual([2, 4, null]);
  });

  it('gives a claim bucket its TTL on the next claim when the call that was to give it failed', async () => {
    const run = 'claims-ttl-run';
    let failNext = false;
    const flaky = new Proxy(redis, {
      get(target, prop, receiver) {
        if (prop === commandOf('claim-identities') && failNext) {
          failNext = false;
          return () => Promise.reject(new Error('connection lost'));
        }
        return Reflect.get(target, prop, receiver) as unknown;
      },
    });
    const s = new StateStore(flaky, { prefix: `${prefix}:ttl` });
    const [first, later] = ['x:T1', 'x:T2'];
    const bucketOf = (key: string) => s.keys.claimBucket(run, claimNames([key]).buckets[0]!);
    expect(bucketOf(first)).not.toBe(bucketOf(later));
    // The pass has begun (its first claim set the marker): later buckets get their TTL one by one.
    await s.claims.claim(run, [{ line: 2, keys: [first] }]);
    failNext = true;
    await expect(s.claims.claim(run, [{ line: 3, keys: [later] }])).rejects.toThrow();
    expect(await s.claims.claim(run, [{ line: 3, keys: [later] }])).toEqual([]);
    expect(await redis.pttl(bucketOf(later))).toBeGreaterThan(0);
  });

  it('saves, scans and drops planned writes, and clears scratch', async () => {
    const run = 'plan-run';
    const writes: WriteAction[] = Array.from(
      { length: 1200 },
      (_, n) =>
        ({
          kind: n % 2 ? 'create' : 'update',
          line: n + 2,
          keys: [`x:E${n}`],
          hash: `h${n}`,
          body: { external_id: `E${n}`, name: `C${n}` },
          ...(n % 2 ? {} : { platformId: n }),
        }) as WriteAction,
    );
    await store.plannedWrites.save(run, writes);
    await store.plannedWrites.drop(run, [2, 3, 4]);
    expect(await store.plannedWrites.count(run)).toBe(1197);
    const seen = new Map<number, WriteAction>();
    let cursor = '0';
    do {
      const page = await store.plannedWrites.scan(run, cursor, 300);
      cursor = page.cursor;
      for (const w of page.writes) seen.set(w.line, w);
    } while (cursor !== '0');
    expect(seen.size).toBe(1197);
    expect(seen.get(5)).toEqual(writes[3]);
    expect(seen.has(3)).toBe(false);
    expect(await store.plannedWrites.of(run, [7, 3, 6])).toEqual([writes[5], writes[4]]);
    await store.seen.mark(run, [1, 2, 3]);
    await store.claims.claim(run, [{ line: 2, keys: ['x:E0'] }]);
    await store.progress.clear(run);
    expect(await redis.exists(...store.keys.scratch(run))).toBe(0);
  });
});

/** Settles one write as the write path does (its finish script), committing nothing. */
function settle(run: string, line: number, outcome: WriteOutcome, failure?: FailureRow) {
  return store.writes.finish(run, 'companies', [
    { line, outcome, keys: [], clearPending: false, ...(failure && { failure }) },
  ]);
}

describe('run scratch buckets', () => {
  // Named here as docs/STATE.md names them: 16,384 claim buckets, a seen bucket per record bucket.
  const run = 'bucket-run';
  const claims = Array.from({ length: 16_384 }, (_, b) => `${prefix}:run:${run}:claims:${b}`);
  const seen = Array.from({ length: 4_096 }, (_, b) => `${prefix}:run:${run}:seen:${b}`);
  const fill = async () => {
    const p = redis.pipeline();
    for (const k of [...claims, ...seen]) p.set(k, '1');
    await p.exec();
  };
  const left = () => keysMatching(redis, `${prefix}:run:${run}:*`);

  it('are all unlinked by a release (claims), an end and a reset, the first and last included', async () => {
    await fill();
    await store.claims.release(run);
    const markers = [`${prefix}:run:${run}:claims`, `${prefix}:run:${run}:claims-unlinked`];
    expect(await left()).toEqual([...markers, ...seen].sort());
    await store.progress.clear(run);
    expect(await left()).toEqual([]);
    await fill();
    await store.progress.resetPlanning(run);
    expect(await left()).toEqual([]);
  });

  /** The claim bucket keys of `runId` each UNLINK names while `act` runs (MONITOR, our prefix only). */
  async function unlinkedClaimBuckets(runId: string, act: () => Promise<void>): Promise<string[]> {
    const bucketPrefix = `${prefix}:run:${runId}:claims:`;
    const fence = `${prefix}:monitor-fence:${runId}`;
    const named: string[] = [];
    let fenced: () => void = () => undefined;
    const seenFence = new Promise<void>((resolve) => (fenced = resolve));
    const monitor = await monitorCommands((args) => {
      const command = args[0]?.toLowerCase();
      if (command === 'unlink')
        named.push(...args.slice(1).filter((k) => k.startsWith(bucketPrefix)));
      if (command === 'get' && args[1] === fence) fenced();
    });
    try {
      await act();
      // MONITOR streams commands in the order they ran: once it shows a GET sent after the
      // act's replies came back, it has shown every command of the act.
      await redis.get(fence);
      await seenFence;
    } finally {
      monitor.destroy();
    }
    return named.sort();
  }

  /**
   * MONITOR on a plain socket, each command's arguments given to `onCommand`.
   * (ioredis's `monitor()` can take a command streamed right after its OK,
   * from another test file on the same server, for a reply it did not ask
   * for, and throw "Command queue state error".)
   */
  async function monitorCommands(onCommand: (args: string[]) => void) {
    const { hostname, port } = new URL(url);
    const socket = connect(Number(port), hostname);
    let buffered = '';
    let ok: () => void = () => undefined;
    const started = new Promise<void>((resolve) => (ok = resolve));
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      buffered += chunk;
      let end: number;
      while ((end = buffered.indexOf('\r\n')) >= 0) {
        const line = buffered.slice(0, end);
        buffered = buffered.slice(end + 2);
        if (line === '+OK') ok();
        else if (line.startsWith('+'))
          onCommand(
            [...line.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((m) => m[1]!.replace(/\\(.)/g, '$1')),
          );
      }
    });
    socket.write('MONITOR\r\n');
    await started;
    return socket;
  }

  const rows = (runId: string, count: number) =>
    Array.from({ length: count }, (_, n) => ({
      line: n + 2,
      keys: [`x:${runId}:${n}`, `y:${runId}:${n}`],
    }));

  it('a release names the buckets its pass claimed into, not all 16,384, and leaves none', async () => {
    const r = 'claimed-100';
    await store.claims.claim(r, rows(r, 100));
    const there = await keysMatching(redis, `${prefix}:run:${r}:claims:*`);
    expect(there.length).toBeGreaterThan(150);
    expect(await unlinkedClaimBuckets(r, () => store.claims.release(r))).toEqual(there.sort());
    expect(await keysMatching(redis, `${prefix}:run:${r}:claims:*`)).toEqual([]);
  });

  it('a release of runs planned side by side names each its own buckets', async () => {
    const [a, b] = ['side-a', 'side-b'];
    // Interleaved batches, as a worker planning two runs at once sends them.
    await store.claims.claim(a, rows(a, 50));
    await store.survivors.contend(
      b,
      'last',
      rows(b, 50).map((e) => ({ ...e, sticky: false, rank: undefined, ref: e.keys[0]! })),
    );
    await store.claims.claim(a, rows(a, 100).slice(50));
    const ofB = await keysMatching(redis, `${prefix}:run:${b}:claims:*`);
    const ofA = await keysMatching(redis, `${prefix}:run:${a}:claims:*`);
    expect(await unlinkedClaimBuckets(a, () => store.claims.release(a))).toEqual(ofA.sort());
    expect(await keysMatching(redis, `${prefix}:run:${a}:claims:*`)).toEqual([]);
    expect((await keysMatching(redis, `${prefix}:run:${b}:claims:*`)).sort()).toEqual(ofB.sort());
    expect(await unlinkedClaimBuckets(b, () => store.claims.release(b))).toEqual(ofB.sort());
  });

  it('a release of a run this process has no marks of names every bucket', async () => {
    const r = 'claimed-elsewhere';
    // Claimed through another store (another process), then released here.
    const other = new StateStore(redis, { prefix });
    await other.claims.claim(r, rows(r, 10));
    const named = await unlinkedClaimBuckets(r, () => store.claims.release(r));
    expect(named.length).toBe(16_384);
    expect(await keysMatching(redis, `${prefix}:run:${r}:claims:*`)).toEqual([]);
  });

  it('a claim after the release starts a new pass: its bucket gets the TTL again', async () => {
    const again = 'bucket-run-again';
    const bucket = store.keys.claimBucket(again, claimNames(['x:F1']).buckets[0]!);
    await store.claims.claim(again, [{ line: 2, keys: ['x:F1'] }]);
    await store.claims.release(again);
    await store.claims.claim(again, [{ line: 2, keys: ['x:F1'] }]);
    expect(await redis.pttl(bucket)).toBeGreaterThan(0);
  });

  it('are unlinked at the end when a pass claimed again after the release', async () => {
    await store.claims.release(run);
    await store.claims.claim(run, [{ line: 2, keys: ['x:G1'] }]);
    await fill();
    await store.progress.clear(run);
    expect(await left()).toEqual([]);
  });

  it('are unlinked at the end after a release cut off midway (marker set, buckets left)', async () => {
    await fill();
    await redis.set(`${prefix}:run:${run}:claims`, 'released');
    await store.progress.clear(run);
    expect(await left()).toEqual([]);
  });
});

describe('run progress', () => {
  it('settles each write once, counts late answers to unknown creates once, and resets', async () => {
    const run = 'progress-run';
    await store.runs.create({ ...base, id: run, job: 'progress' });
    await store.progress.setCounts(run, { writesPlanned: 3 });
    expect(await settle(run, 2, 'created')).toEqual({ first: [true], settled: 1, planned: 3 });
    // The same chunk processed again (at-least-once delivery): no second count.
    expect(await settle(run, 2, 'created')).toEqual({ first: [false], settled: 1, planned: 3 });
    expect(await store.progress.isSettled(run, 2)).toBe(true);
    const failure: FailureRow = { line: 3, kind: 'rejected', reason: 'platform said 400' };
    await settle(run, 3, 'rejected', failure);
    // Line 4's create has an unknown outcome; its late answer counts it once, as created.
    await settle(run, 4, 'pending');
    await settle(run, 4, 'created');
    await store.progress.confirmCreated(run, [4]);
    // Line 6's create stays unknown until the finalize's listing finds it: counted once.
    await settle(run, 6, 'pending');
    await store.progress.confirmCreated(run, [6]);
    await store.progress.confirmCreated(run, [6]);
    expect((await store.runs.get(run))!.counts).toMatchObject({
      created: 3,
      rejected: 1,
      writesSettled: 4,
    });
    expect(await store.runs.listFailures(run)).toEqual([failure]);

    // A create not confirmed is sent again in a new round: its line settles again.
    await store.progress.unsettle(run, [4]);
    expect(await store.progress.isSettled(run, 4)).toBe(false);
    expect(await store.runs.nextCreateRound(run)).toBe(1);
    expect(await store.runs.nextCreateRound(run)).toBe(2);
    expect(await store.runs.countRetry(run)).toBe(1);

    // Every key of the run is one the layout names.
    await store.claims.claim(run, [{ line: 2, keys: ['x:P1'] }]);
    await settle(run, 5, 'pending');
    const named = [
      store.keys.run(run),
      store.keys.failures(run),
      ...store.keys.progress(run),
      ...store.keys.scratch(run),
    ];
    const present = await keysMatching(redis, `${prefix}:run:${run}*`);
    expect(present.length).toBeGreaterThan(3);
    for (const key of present) expect(named).toContain(key);

    // A planning pass started again forgets counters, failures, scratch and settled lines.
    await store.progress.resetPlanning(run);
    expect((await store.runs.get(run))!.counts).toMatchObject({ created: 0, writesSettled: 0 });
    expect(await store.runs.countFailures(run)).toBe(0);
    expect(await redis.exists(...store.keys.progress(run), ...store.keys.scratch(run))).toBe(0);
    await settle(run, 2, 'updated');
    await store.progress.clear(run);
    expect(await redis.exists(...store.keys.progress(run))).toBe(0);
    expect(await store.runs.get(run)).toMatchObject({ counts: { updated: 1 } });
  });
});

describe('key layout', () => {
  it('puts every key under the prefix and its hash tag', async () => {
    const keys = await keysMatching(redis, `*${prefix.slice(1, -1)}*`);
    expect(keys.length).toBeGreaterThan(10);
    for (const key of keys) {
      expect(key.startsWith(prefix)).toBe(true);
      expect(hashTag(key)).toBe(prefix.slice(1, -1));
    }
  });
});
