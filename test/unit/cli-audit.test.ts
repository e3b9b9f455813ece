import { describe, expect, it } from 'vitest';
import { formatAudit } from '../../src/cli/audit.js';
import { auditListing, type StateView } from '../../src/sync/audit.js';

const state = (ids: Record<string, number>): StateView => ({
  idOf: (k) => ids[k],
  pendingRunOf: () => undefined,
});

describe('formatAudit', () => {
  it('prints a summary line, the shared identities and the lost copies', () => {
    const report = auditListing(
      'companies',
      [
        { id: 9, keys: ['x:hs:5', 'c:5'] },
        { id: 7, keys: ['x:hs:5', 'c:5'] },
      ],
      state({ 'x:hs:5': 9, 'c:5': 9 }),
    );
    const lines = formatAudit(report).split('\n');
    expect(lines[0]).toBe(
      'audit of companies: listed 2, tracked by our state 1; shared identities 2, lost 1, pending 0, untracked 0 — 3 problem(s)',
    );
    expect(lines).toContainEqual(expect.stringMatching(/^external_id\s+hs:5\s+7, 9\s+9\s+yes$/));
    expect(lines).toContainEqual(
      expect.stringMatching(/^\s+7\s+lost\s+x:hs:5\s+9\s+carries external_id "hs:5"/),
    );
  });

  it('says "no problems" for a clean listing, and lists at most 20 untracked records', () => {
    const records = Array.from({ length: 25 }, (_, n) => ({ id: n + 1, keys: [`x:other:${n}`] }));
    const text = formatAudit(auditListing('companies', records, state({})));
    expect(text.split('\n')[0]).toMatch(/untracked 25 — no problems$/);
    expect(text.split('\n').filter((l) => /^\s+\d+\s+untracked\s/.test(l))).toHaveLength(20);
    expect(text).toContain('… 5 more untracked records (--json lists all)');
  });

  it('escapes control characters that a platform value carries', () => {
    const report = auditListing(
      'companies',
      [
        { id: 1, keys: ['x:a\u001b[31m'] },
        { id: 2, keys: ['x:a\u001b[31m'] },
      ],
      state({}),
    );
    expect(formatAudit(report)).not.toContain('\u001b');
  });
});
