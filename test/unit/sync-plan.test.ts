import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  conflictAction,
  invalidAction,
  tally,
  type Action,
  type Mode,
} from '../../src/sync/action.js';
import { contentHash } from '../../src/sync/hash.js';
import { identityKeys } from '../../src/sync/identity.js';
import {
  planBatch,
  planRecord,
  remoteMatters,
  type Known,
  type PlanInput,
} from '../../src/sync/plan.js';

const FP = 'mapping-v1';

function input(body: Record<string, unknown>, line = 2): PlanInput {
  return { line, body, keys: identityKeys('companies', body), hash: contentHash(body, FP) };
}

const acme = { external_id: 'E1', name: 'Acme', website: 'https://acme.test' };

describe('planRecord', () => {
  const row = input(acme);

  it('creates an unknown record, or skips it in update-only mode', () => {
    expect(planRecord(row, {}, { entity: 'companies' })).toMatchObject({ kind: 'create', line: 2 });
    expect(planRecord(row, {}, { entity: 'companies', mode: 'update-only' })).toMatchObject({
      kind: 'skip',
      reason: 'not on the platform, and update-only mode creates nothing',
    });
  });

  it('with verifyRemote, a matching hash still updates a record that drifted on the platform', () => {
    const drifted = { platformId: 5, storedHash: row.hash, remote: { ...acme, name: 'Edited' } };
    expect(planRecord(row, drifted, { entity: 'companies' })).toMatchObject({ kind: 'unchanged' });
    expect(planRecord(row, drifted, { entity: 'companies', verifyRemote: true })).toMatchObject({
      kind: 'update',
      platformId: 5,
      changes: [{ field: 'name', from: 'Edited', to: 'Acme' }],
    });
    const same = { platformId: 5, storedHash: row.hash, remote: { ...acme } };
    expect(planRecord(row, same, { entity: 'companies', verifyRemote: true })).toMatchObject({
      kind: 'unchanged',
    });
  });

  it('is unchanged when the stored hash equals, in every mode', () => {
    for (const mode of ['upsert', 'create-only', 'update-only'] as Mode[]) {
      expect(
        planRecord(row, { platformId: 5, storedHash: row.hash }, { entity: 'companies', mode }),
      ).toEqual({ kind: 'unchanged', line: 2, keys: ['x:E1'], platformId: 5 });
    }
  });

  it('updates with a field diff when the platform values are known', () => {
    const known: Known = { platformId: 5, storedHash: 'old', remote: { ...acme, name: 'ACME' } };
    expect(planRecord(row, known, { entity: 'companies' })).toMatchObject({
      kind: 'update',
      platformId: 5,
      changes: [{ field: 'name', from: 'ACME', to: 'Acme' }],
      body: acme,
    });
    const blind = planRecord(row, { platformId: 5, storedHash: 'old' }, { entity: 'companies' });
    expect(blind).toMatchObject({ kind: 'update', platformId: 5 });
    expect(blind).not.toHaveProperty('changes');
  });

  it('adopts a listed record whose values already match', () => {
    const known: Known = {
      platformId: 9,
      remote: { ...acme, custom: 'theirs', crm_account_id: null },
    };
    expect(planRecord(row, known, { entity: 'companies', mode: 'create-only' })).toEqual({
      kind: 'adopt',
      line: 2,
      keys: ['x:E1'],
      hash: row.hash,
      platformId: 9,
    });
  });

  it('skips an existing changed record in create-only mode', () => {
    const known: Known = { platformId: 9, remote: { ...acme, name: 'Other' } };
    expect(planRecord(row, known, { entity: 'companies', mode: 'create-only' })).toMatchObject({
      kind: 'skip',
      platformId: 9,
      reason: 'exists on the platform, and create-only mode changes nothing',
    });
  });

  it('reports a changed member as unsupported unless the job opts in', () => {
    const member = { external_id: 'U1', email: 'ann@example.com', first_name: 'Ann' };
    const m: PlanInput = {
      line: 3,
      body: member,
      keys: identityKeys('members', member),
      hash: 'h2',
    };
    const known: Known = {
      platformId: 4,
      storedHash: 'h1',
      remote: { ...member, first_name: 'An' },
    };
    expect(planRecord(m, known, { entity: 'members' })).toMatchObject({
      kind: 'unsupported',
      reason: 'update not supported by the platform API',
      changes: [{ field: 'first_name', from: 'An', to: 'Ann' }],
    });
    expect(planRecord(m, known, { entity: 'members', memberUpdates: true })).toMatchObject({
      kind: 'update',
      platformId: 4,
    });
  });

  it('holds back a record with a pending create before anything else', () => {
    const pending = { runId: 'r1', since: 1_700_000_000_000 };
    for (const known of [{ pending }, { pending, platformId: 3, storedHash: row.hash }]) {
      expect(planRecord(row, known, { entity: 'companies' })).toMatchObject({
        kind: 'pending',
        pending,
        body: acme,
      });
    }
  });

  it('plans a batch in order and refuses mismatched lengths', () => {
    const rows = [input(acme, 2), input({ ...acme, external_id: 'E2' }, 3)];
    const actions = planBatch(rows, [{}, { platformId: 1, storedHash: rows[1]!.hash }], {
      entity: 'companies',
    });
    expect(actions.map((a) => [a.kind, a.line])).toEqual([
      ['create', 2],
      ['unchanged', 3],
    ]);
    expect(() => planBatch(rows, [{}], { entity: 'companies' })).toThrow(RangeError);
  });
});

describe('remoteMatters', () => {
  const row = { keys: ['x:E1', 'c:7'], hash: 'h1' };

  it('is false only for an unchanged row found through its own external_id, without verifyRemote', () => {
    expect(remoteMatters(row, { storedHash: 'h1', matchedBy: 'x:E1' }, false)).toBe(false);
    expect(remoteMatters(row, { storedHash: 'h1' }, false)).toBe(false);
  });

  it('is true where the platform values can change the action', () => {
    // verifyRemote: drift is looked for on every row.
    expect(remoteMatters(row, { storedHash: 'h1', matchedBy: 'x:E1' }, true)).toBe(true);
    // A changed or new row: adoption and the field diff read them.
    expect(remoteMatters(row, { storedHash: 'h0', matchedBy: 'x:E1' }, false)).toBe(true);
    expect(remoteMatters(row, { matchedBy: 'x:E1' }, false)).toBe(true);
    // Found through a weaker key: the ownership rules read the record's external_id.
    expect(remoteMatters(row, { storedHash: 'h1', matchedBy: 'c:7' }, false)).toBe(true);
    expect(remoteMatters({ keys: ['c:7'], hash: 'h1' }, { storedHash: 'h1' }, false)).toBe(true);
  });
});

describe('invalid and conflict actions', () => {
  it('carry their reasons and are counted with the rest', () => {
    const bad = invalidAction(7, 'not an e-mail address', { field: 'email', value: 'x@' });
    const dup = conflictAction('companies', 9, ['x:E1'], 'x:E1', [12, 4]);
    expect(dup.reason).toBe(
      'duplicate identity: external_id "E1" is also on lines 4, 12; all rows with it are withheld',
    );
    expect(conflictAction('members', 3, [], 'e:a@b.c', [2]).reason).toContain('is also on line 2;');
    const counts = tally([bad, dup, planRecord(input(acme), {}, { entity: 'companies' })]);
    expect(counts).toMatchObject({ invalid: 1, conflict: 1, create: 1, update: 0, unchanged: 0 });
  });
});

// ---- property: plan, apply, plan again ------------------------------------

/** A model of the platform and of our store, enough to apply a plan. */
interface Model {
  nextId: number;
  platform: Map<number, Record<string, unknown>>;
  ids: Map<string, number>; // identity key -> platform id (our state)
  hashes: Map<number, string>; // platform id -> hash of last confirmed write
  listed: Map<string, number>; // identity key -> platform id (listing index)
}

function lookup(model: Model, keys: string[]): Known {
  for (const k of keys) {
    const id = model.ids.get(k);
    if (id !== undefined) {
      const storedHash = model.hashes.get(id);
      return { platformId: id, ...(storedHash && { storedHash }), remote: model.platform.get(id)! };
    }
  }
  for (const k of keys) {
    const id = model.listed.get(k);
    if (id !== undefined) return { platformId: id, remote: model.platform.get(id)! };
  }
  return {};
}

function apply(model: Model, action: Action): void {
  const commit = (keys: string[], id: number, hash: string): void => {
    for (const k of keys) model.ids.set(k, id);
    model.hashes.set(id, hash);
  };
  switch (action.kind) {
    case 'create': {
      const id = model.nextId++;
      model.platform.set(id, { ...action.body });
      commit(action.keys, id, action.hash);
      break;
    }
    case 'update':
      model.platform.set(action.platformId, {
        ...model.platform.get(action.platformId),
        ...action.body,
      });
      commit(action.keys, action.platformId, action.hash);
      break;
    case 'adopt':
      commit(action.keys, action.platformId, action.hash);
      break;
    default:
      break;
  }
}

// Identities are made unique per row number below: conflicts are decided elsewhere.
const company = fc.record(
  {
    name: fc.constantFrom('Acme', 'Globex', 'Initech', 'Umbrella'),
    website: fc.option(fc.constantFrom('https://a.test', 'https://b.test'), { nil: null }),
    custom: fc.constantFrom('x', 'y'),
  },
  { requiredKeys: ['name'] },
);

function identified(n: number, body: Record<string, unknown>): Record<string, unknown> {
  // Every third record also carries a CRM account id, to exercise multi-key identities.
  return { ...body, external_id: `E${n}`, ...(n % 3 === 0 && { crm_account_id: `A${n}` }) };
}

describe('plan → apply → plan again', () => {
  it('yields only unchanged or skip on the second pass', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.tuple(fc.integer({ min: 1, max: 40 }), company), {
          selector: ([n]) => n,
          maxLength: 25,
        }),
        // Records that already exist on the platform, listed but not in our state.
        fc.array(fc.tuple(fc.integer({ min: 1, max: 40 }), company, fc.boolean()), {
          maxLength: 10,
        }),
        // Records synced before with some other content.
        fc.array(fc.tuple(fc.integer({ min: 1, max: 40 }), company), { maxLength: 10 }),
        fc.constantFrom<Mode>('upsert', 'create-only', 'update-only'),
        (rows, preListed, preSynced, mode) => {
          const model: Model = {
            nextId: 1000,
            platform: new Map(),
            ids: new Map(),
            hashes: new Map(),
            listed: new Map(),
          };
          for (const [n, body, same] of preListed) {
            const id = model.nextId++;
            const row = rows.find(([m]) => m === n);
            model.platform.set(id, identified(n, same && row ? row[1] : body));
            if (!model.listed.has(`x:E${n}`)) model.listed.set(`x:E${n}`, id);
          }
          for (const [n, body] of preSynced) {
            if (model.ids.has(`x:E${n}`)) continue;
            const id = model.nextId++;
            model.platform.set(id, identified(n, body));
            model.ids.set(`x:E${n}`, id);
            model.hashes.set(id, contentHash(identified(n, body), 'older-mapping'));
          }
          const inputs = rows.map(([n, body], i) => input(identified(n, body), i + 2));
          const opts = { entity: 'companies' as const, mode };

          const first = planBatch(
            inputs,
            inputs.map((r) => lookup(model, r.keys)),
            opts,
          );
          const createsBefore = model.nextId;
          for (const a of first) apply(model, a);
          expect(model.nextId - createsBefore).toBe(
            first.filter((a) => a.kind === 'create').length,
          );

          const second = planBatch(
            inputs,
            inputs.map((r) => lookup(model, r.keys)),
            opts,
          );
          for (const a of second) expect(['unchanged', 'skip']).toContain(a.kind);
          if (mode === 'upsert') for (const a of second) expect(a.kind).toBe('unchanged');
        },
      ),
    );
  });
});
