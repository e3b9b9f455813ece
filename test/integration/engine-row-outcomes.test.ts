/**
 * A whole run over an export with the row outcomes of a mapping beside plain
 * creates: a bad optional website costs the field (the row syncs, the warning
 * is listed), a deleted row is skipped with its reason, a row with a bad
 * required field is invalid and still says whose row it was, and a website
 * spelled differently from the platform's is no change. A second run writes
 * nothing.
 */
import { describe, expect, it } from 'vitest';
import { dryRun } from '../../src/engine/dry-run.js';
import { failurePages } from '../../src/engine/run-failures.js';
import { runSummary } from '../../src/engine/run-summary.js';
import type { FailureKind } from '../../src/state/failure-kinds.js';
import type { FailureRow } from '../../src/state/runs.js';
import {
  countWrites,
  statsSince,
  useEngines,
  ACCOUNTS_HEADER as HEADER,
  ACCOUNTS_MAPPING as mapping,
  type EngineHarness,
} from '../harness/engine.js';

const engine = useEngines();

const ROWS = [
  ['ACME-1', 'Acme', 'www.Acme.com/', 'false'], // line 2: created, website as written
  ['GLOBEX-1', 'Globex', 'info@globex.com', 'false'], // line 3: created without website, a warning
  ['INITECH-1', 'Initech', 'initech.example', 'TRUE'], // line 4: skipped (deleted)
  ['UMBRELLA-1', ' ', 'umbrella.example', 'false'], // line 5: invalid (no name), with identity
  ['HOOLI-1', 'Hooli', 'www.hooli.com', 'false'], // line 6: the platform has https://hooli.com: adopted
];

async function listed(h: EngineHarness, runId: string, kind: FailureKind): Promise<FailureRow[]> {
  const out: FailureRow[] = [];
  for await (const page of failurePages(h.store, runId, 0, Infinity, kind)) out.push(...page);
  return out;
}

describe('engine: warnings, skipped rows and invalid rows with identity', () => {
  it('syncs the good rows, lists the warning, skips the deleted row, keeps who the bad row was; a second run writes nothing', async () => {
    const h = await engine();
    const hooli = await h.client().createCompany({
      name: 'Hooli',
      external_id: 'test:HOOLI-1',
      website: 'https://hooli.com',
    });
    const path = h.writeCsv('accounts.csv', HEADER, ROWS);
    // 1 invalid row of 5 is under the limit; were the warning or the skip counted as invalid, it would not be.
    const thresholds = { minRows: 0, maxInvalidShare: 0.25 };
    const def = h.writeJob('accounts', {
      entity: 'companies',
      source: { path },
      mapping,
      thresholds,
    });

    // The dry run shows the same: the warning, the skip with its rule, the invalid row's identity.
    const plan = await dryRun({
      def,
      req: { full: false },
      store: h.store,
      client: h.client(),
      logger: h.logger,
      env: h.config.sourceEnv,
    });
    expect(plan.counts).toMatchObject({
      read: 5,
      create: 2,
      adopt: 1,
      skip: 1,
      invalid: 1,
      warnings: 1,
    });
    expect(plan.warnings).toEqual([
      {
        line: 3,
        field: 'website',
        reason: 'an e-mail address, not a website',
        value: 'info@globex.com',
        identity: 'x:test:GLOBEX-1',
      },
    ]);
    expect(plan.actions).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          kind: 'skip',
          line: 4,
          rule: 'deleted',
          keys: ['x:test:INITECH-1'],
        }),
        expect.objectContaining({
          kind: 'invalid',
          line: 5,
          field: 'name',
          identity: 'x:test:UMBRELLA-1',
        }),
      ]),
    );

    const before = await h.stats();
    const first = await h.runJob('accounts');
    expect(first.status).toBe('completed');
    expect(first.counts).toMatchObject({
      read: 5,
      created: 2,
      adopted: 1,
      updated: 0,
      skipped: 1,
      invalid: 1,
      warnings: 1,
      rejected: 0,
      failed: 0,
    });
    expect(runSummary(first).counts.warnings).toBe(1);
    // Two creates; the adopted record (same website, other spelling) got no PUT.
    expect(countWrites(statsSince(before, await h.stats()))).toBe(2);

    const companies = new Map((await h.dump()).companies.map((c) => [c.external_id, c]));
    expect([...companies.keys()].sort()).toEqual(['test:ACME-1', 'test:GLOBEX-1', 'test:HOOLI-1']);
    expect(companies.get('test:ACME-1')).toMatchObject({
      name: 'Acme',
      website: 'https://www.Acme.com/',
    });
    expect(companies.get('test:GLOBEX-1')).toMatchObject({ name: 'Globex', website: null });
    expect(companies.get('test:HOOLI-1')).toMatchObject({
      id: hooli.id,
      website: 'https://hooli.com',
    });

    const warning: FailureRow = {
      line: 3,
      kind: 'warning',
      field: 'website',
      reason: 'an e-mail address, not a website',
      value: 'info@globex.com',
      identity: 'x:test:GLOBEX-1',
    };
    const skipped: FailureRow = {
      line: 4,
      kind: 'skipped',
      field: 'skip.deleted',
      reason: 'deleted in the CRM (IsDeleted TRUE)',
      value: 'TRUE',
      identity: 'x:test:INITECH-1',
    };
    const invalid: FailureRow = {
      line: 5,
      kind: 'invalid',
      field: 'name',
      reason: 'missing: no value in column Name',
      identity: 'x:test:UMBRELLA-1',
    };
    expect(await h.failures(first.id)).toEqual([warning, skipped, invalid]);
    expect(await listed(h, first.id, 'warning')).toEqual([warning]);
    expect(await listed(h, first.id, 'skipped')).toEqual([skipped]);
    expect(await listed(h, first.id, 'invalid')).toEqual([invalid]);

    const beforeSecond = await h.stats();
    const second = await h.runJob('accounts');
    expect(second.status).toBe('completed');
    expect(second.counts).toMatchObject({
      read: 5,
      created: 0,
      updated: 0,
      adopted: 0,
      unchanged: 3,
      skipped: 1,
      invalid: 1,
      warnings: 1,
      writesPlanned: 0,
    });
    expect(countWrites(statsSince(beforeSecond, await h.stats()))).toBe(0);
    expect(await h.failures(second.id)).toEqual([warning, skipped, invalid]);
  });
});
