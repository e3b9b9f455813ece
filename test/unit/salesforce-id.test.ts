import { describe, expect, it } from 'vitest';
import { salesforceChecksum, toSalesforceId18 } from '../../src/crm/salesforce-id.js';

describe('toSalesforceId18', () => {
  it.each([
    ['001M000000qfPyS', '001M000000qfPySIAU'],
    ['0036000000QKv5T', '0036000000QKv5TAAT'],
    ['00558000001N0Ke', '00558000001N0KeAAK'],
  ])('appends the checksum Salesforce gives for the 15-character id %s', (id15, id18) => {
    expect(salesforceChecksum(id15)).toBe(id18.slice(15));
    expect(toSalesforceId18(id15)).toEqual({ ok: true, id: id18 });
  });

  it('keeps an 18-character id whose checksum matches', () => {
    expect(toSalesforceId18('001M000000qfPySIAU')).toEqual({ ok: true, id: '001M000000qfPySIAU' });
  });

  it('trims surrounding spaces', () => {
    expect(toSalesforceId18(' 0036000000QKv5T ')).toEqual({ ok: true, id: '0036000000QKv5TAAT' });
  });

  it('tells ids apart that differ only in case', () => {
    const a = toSalesforceId18('001M000000qfPyS');
    const b = toSalesforceId18('001M000000QFPYS');
    expect(a.ok && b.ok && a.id !== b.id).toBe(true);
  });

  it.each([
    ['', '0 characters'],
    ['001M000000qfPy', '14 characters'],
    ['001M000000qfPySIA', '17 characters'],
    ['001M000000qfPySIAUX', '19 characters'],
    ['001M000000qf-yS', 'only letters and digits'],
    ['001M000000qfPy\u00e9', 'only letters and digits'],
    ['001M000000qfPySAAA', 'checksum AAA does not match IAU'],
    // Lower-casing the whole id breaks the checksum: never silently repaired.
    ['001m000000qfpysiau', 'does not match'],
  ])('refuses %j (%s)', (id, reason) => {
    const r = toSalesforceId18(id);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toContain(reason);
  });
});
