/**
 * The Zoho CRM presets on real API responses: 19-digit ids, beyond
 * JavaScript's exact integers, kept as text in external_id.
 */
import { describe, expect, it } from 'vitest';
import {
  expectOnPlatform,
  failureLines,
  jsonRecords,
  syncTwice,
  useRealEngine,
} from './real-exports-harness.js';

const engine = useRealEngine();

describe('real Zoho CRM exports', () => {
  it('accounts: every account once, its 19-digit id exact', async () => {
    const h = engine();
    const accounts = jsonRecords('zoho/accounts-api-v2.json', 'data');
    for (const a of accounts) {
      expect(String(a.id)).toMatch(/^\d{19}$/);
      expect(Number.isSafeInteger(Number(a.id))).toBe(false);
    }
    const { first, failures } = await syncTwice(h, {
      job: 'zoho-accounts',
      preset: 'zoho-accounts',
      entity: 'companies',
      file: 'zoho/accounts-api-v2.json',
    });
    expect(first.counts).toMatchObject({ read: 16, created: 16, invalid: 0, skipped: 0 });
    expect(failureLines(failures)).toEqual([]);
    await expectOnPlatform(
      h,
      'companies',
      accounts.map((a) => ({ external_id: `zoho:account:${String(a.id)}`, name: a.Account_Name })),
    );
  });

  it('users, read from the users key: the organization team', async () => {
    const h = engine();
    const users = jsonRecords('zoho/users-api-v2.json', 'users');
    const { first, failures } = await syncTwice(h, {
      job: 'zoho-users',
      preset: 'zoho-users',
      entity: 'members',
      file: 'zoho/users-api-v2.json',
      recordsPath: 'users',
    });
    expect(first.counts).toMatchObject({ read: 1, created: 1, invalid: 0, skipped: 0 });
    expect(failureLines(failures)).toEqual([]);
    await expectOnPlatform(
      h,
      'members',
      users.map((u) => ({
        external_id: `zoho:user:${String(u.id)}`,
        email: u.email,
        first_name: u.first_name,
        last_name: u.last_name,
      })),
    );
  });
});
