/**
 * deploy/: the Prometheus alerting rules and the Grafana dashboard use only
 * metrics a running ops server really exports. Both files are parsed, every
 * query is taken out, and each `crm_sync_…` name in it must be a series of
 * the /metrics text (a histogram's `_bucket`, `_sum` and `_count` included).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { createAlertQueue } from '../../src/alerts/delivery.js';
import { RETRY_DEFAULTS } from '../../src/config.js';
import { createMetrics } from '../../src/ops/metrics.js';
import { startOpsServer } from '../../src/ops/server.js';
import { closeRedis, createRedis } from '../../src/redis/connection.js';
import { createRunQueue, createWriteQueue } from '../../src/queue/queues.js';
import { useRedis } from '../harness/redis.js';

const ROOT = join(import.meta.dirname, '..', '..');
const { url, prefix } = useRedis();
const redis = createRedis('worker', url);
const queues = [
  createRunQueue({ connection: redis, prefix }),
  createWriteQueue({ connection: redis, prefix, retry: RETRY_DEFAULTS }),
  createAlertQueue({ connection: redis, prefix, alerts: { attempts: 1, backoffMs: 1 } }),
];
afterAll(async () => {
  for (const q of queues) await q.close();
  await closeRedis(redis);
});

/** Every series name /metrics declares (`# TYPE`), a histogram's and summary's parts too. */
async function exportedNames(): Promise<Set<string>> {
  const ops = await startOpsServer({
    port: 0,
    redis,
    queues,
    metrics: createMetrics(),
    checkPlatform: async () => undefined,
  });
  try {
    const text = await (await fetch(`${ops.url}/metrics`)).text();
    const names = new Set<string>();
    for (const m of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
      names.add(m[1]!);
      if (m[2] === 'histogram') for (const s of ['_bucket', '_sum', '_count']) names.add(m[1]! + s);
      if (m[2] === 'summary') for (const s of ['_sum', '_count']) names.add(m[1]! + s);
    }
    return names;
  } finally {
    await ops.close();
  }
}

const metricNames = (expr: string): string[] =>
  [...expr.matchAll(/\bcrm_sync_[a-z0-9_]+/g)].map((m) => m[0]);

interface Rule {
  alert: string;
  expr: string;
  labels?: { severity?: string };
  annotations?: { summary?: string };
}

describe('deploy/ monitoring files', () => {
  it('use only metrics /metrics exports, in every rule and panel', async () => {
    const exported = await exportedNames();
    expect(exported.has('crm_sync_records_total')).toBe(true);

    const rules = parse(readFileSync(join(ROOT, 'deploy', 'prometheus-alerts.yml'), 'utf8')) as {
      groups: { name: string; rules: Rule[] }[];
    };
    const all = rules.groups.flatMap((g) => g.rules);
    expect(all.map((r) => r.alert)).toEqual(
      expect.arrayContaining([
        'CrmSyncRunFailed',
        'CrmSyncRunStopped',
        'CrmSyncRateLimited',
        'CrmSyncWorkerDown',
      ]),
    );
    for (const r of all) {
      expect(r.labels?.severity, r.alert).toMatch(/^(critical|warning)$/);
      expect(r.annotations?.summary, r.alert).toBeTruthy();
      const used = metricNames(r.expr);
      expect(used.length, r.alert).toBeGreaterThan(0);
      for (const name of used) expect(exported, `${r.alert}: ${name}`).toContain(name);
    }
    expect(all.find((r) => r.alert === 'CrmSyncWorkerDown')!.expr).toMatch(/^absent\(/);

    const dashboard = JSON.parse(
      readFileSync(join(ROOT, 'deploy', 'grafana-dashboard.json'), 'utf8'),
    ) as {
      title: string;
      panels: { title: string; targets: { expr: string }[] }[];
      templating: { list: { query: { query: string } }[] };
    };
    expect(dashboard.panels.length).toBeGreaterThan(0);
    const exprs = [
      ...dashboard.panels.flatMap((p) => p.targets.map((t) => ({ where: p.title, expr: t.expr }))),
      ...dashboard.templating.list.map((v) => ({ where: 'variable', expr: v.query.query })),
    ];
    for (const { where, expr } of exprs) {
      const used = metricNames(expr);
      expect(used.length, where).toBeGreaterThan(0);
      for (const name of used) expect(exported, `${where}: ${name}`).toContain(name);
    }
  });
});
