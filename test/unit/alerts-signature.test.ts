/**
 * The signature headers of an alert: an HMAC-SHA256 of `<timestamp>.<body>`
 * keyed by CRM_SYNC_ALERT_SECRET, recomputed here with node:crypto; the
 * idempotency key as given; no signature without a secret.
 */
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { alertHeaders } from '../../src/alerts/signature.js';

const SECRET = 'whsec_test_0123456789abcdef';
// Non-ASCII on purpose: the HMAC is over the UTF-8 bytes sent.
const BODY = JSON.stringify({ type: 'crm-sync.alert', job: 'Müller & Söhne', reason: 'ünïcode' });

describe('alert signature headers', () => {
  it('sign "<timestamp>.<body>" with HMAC-SHA256 of the secret, hex, as v1=', () => {
    const now = new Date('2026-11-23T02:05:07.900Z');
    const h = alertHeaders({ body: BODY, eventId: 'alert-stopped-run-1', secret: SECRET, now });
    const ts = '1795399507';
    const expected = createHmac('sha256', SECRET)
      .update(Buffer.concat([Buffer.from(`${ts}.`), Buffer.from(BODY, 'utf8')]))
      .digest('hex');
    expect(h).toEqual({
      'X-CRM-Sync-Timestamp': ts,
      'X-CRM-Sync-Signature': `v1=${expected}`,
      'Idempotency-Key': 'alert-stopped-run-1',
    });
    // Another body, timestamp or secret: another signature.
    const other = (o: Partial<Parameters<typeof alertHeaders>[0]>) =>
      alertHeaders({ body: BODY, eventId: 'e', secret: SECRET, now, ...o })['X-CRM-Sync-Signature'];
    expect(other({ body: `${BODY} ` })).not.toBe(`v1=${expected}`);
    expect(other({ now: new Date(now.getTime() + 1000) })).not.toBe(`v1=${expected}`);
    expect(other({ secret: `${SECRET}x` })).not.toBe(`v1=${expected}`);
  });

  it('carry no signature without a secret, and never the secret itself', () => {
    const h = alertHeaders({ body: BODY, eventId: 'alert-failed-run-2', now: new Date(0) });
    expect(h).toEqual({ 'X-CRM-Sync-Timestamp': '0', 'Idempotency-Key': 'alert-failed-run-2' });
    const signed = alertHeaders({ body: BODY, eventId: 'e', secret: SECRET });
    expect(JSON.stringify(signed)).not.toContain(SECRET);
  });
});
