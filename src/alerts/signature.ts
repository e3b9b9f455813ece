/**
 * The headers that let a webhook trust an alert, pure, in the shape Stripe's
 * and GitHub's webhooks use: a timestamp, an HMAC-SHA256 of
 * `<timestamp>.<body>` keyed by CRM_SYNC_ALERT_SECRET (hex, versioned `v1=`),
 * and an idempotency key that names the alert event, the same on every
 * attempt. The receiver recomputes the HMAC over the bytes it received,
 * compares it in constant time, and refuses a timestamp too far from its
 * clock (a replay); it drops a key it has already handled (a retry whose
 * first attempt did arrive). docs/OPERATIONS.md ("Alerts") shows the check.
 */
import { createHmac } from 'node:crypto';

export const TIMESTAMP_HEADER = 'X-CRM-Sync-Timestamp';
export const SIGNATURE_HEADER = 'X-CRM-Sync-Signature';
export const IDEMPOTENCY_HEADER = 'Idempotency-Key';

/** The signature of a body sent at `timestamp` (unix seconds): `v1=<hex>`. */
export function alertSignature(secret: string, timestamp: number, body: string): string {
  const mac = createHmac('sha256', secret).update(`${timestamp}.${body}`, 'utf8').digest('hex');
  return `v1=${mac}`;
}

/**
 * The headers of one delivery attempt: the timestamp and the idempotency key
 * always, the signature when there is a secret.
 */
export function alertHeaders(opts: {
  body: string;
  /** The alert's id (its queue job id): the same on each attempt. */
  eventId: string;
  secret?: string;
  now?: Date;
}): Record<string, string> {
  const timestamp = Math.floor((opts.now ?? new Date()).getTime() / 1000);
  return {
    [TIMESTAMP_HEADER]: String(timestamp),
    ...(opts.secret !== undefined && {
      [SIGNATURE_HEADER]: alertSignature(opts.secret, timestamp, opts.body),
    }),
    [IDEMPOTENCY_HEADER]: opts.eventId,
  };
}
