/**
 * The Zoho CRM presets on real API responses: 19-digit ids, beyond
 * JavaScript's exact integers, kept as text in external_id.
 */
import { describe, expect, it } from 'vitest';
import { expectAllSynced, jsonRecords, useRealEngine } from './real-exports-harness.js';

const engine = useRealEngine();

describe('real Zoho CRM exports', () => {
  it('accounts: every account once, its 19-digit id exact', async () => {
    const h = engine();
    const accounts = jsonRecords('zoho/accounts-api-v2.json', 'data');
    for (const a of accounts) {
      expect(String(a.id)).toMatch(/^\d{19}$/);
      expect(Number.isSafeInteger(Number(a.id))).toBe(false);
    }
    await expectAllSynced(
      h,
      {
        job: 'zoho-accounts',
        preset: 'zoho-accounts',
        entity: 'companies',
        file: 'zoho/accounts-api-v2.json',
      },
      16,
      accounts.map((a) => ({ external_id: `zoho:account:${String(a.id)}`, name: a.Account_Name })),
    );
  });

  it('users, read from the users key: the organization team', async () => {
    const h = engine();
    const users = jsonRecords('zoho/users-api-v2.json', 'users');
    await expectAllSynced(
      h,
      {
        job: 'zoho-users',
        preset: 'zoho-users',
        entity: 'members',
        file: 'zoho/users-api-v2.json',
        recordsPath: 'users',
      },
      1,
      users.map((u) => ({
        external_id: `zoho:user:${String(u.id)}`,
        email: u.email,
        first_name: u.first_name,
        last_name: u.last_name,
      })),
    );
  });
});
