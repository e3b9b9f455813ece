/**
 * The body a webhook receives for an alert, pure: a generic JSON object, or
 * a Slack-compatible message (`text` plus blocks, what an incoming webhook
 * takes). Both carry only the alert's facts and, when CRM_SYNC_PUBLIC_URL is
 * set, a link to the run's page of the console.
 */
import type { Alert, AlertFormat } from './rules.js';

const TITLES: Record<Alert['kind'], string> = {
  failed: 'run failed',
  stopped: 'run stopped by a safety threshold',
  'rejected-above': 'run completed with rows not synced',
  missed: 'scheduled slot missed',
};

/** The console page of a run: `<public URL>/#/runs/<runId>`. */
export function runLink(
  publicUrl: string | undefined,
  runId: string | undefined,
): string | undefined {
  if (publicUrl === undefined || runId === undefined) return undefined;
  return `${publicUrl.replace(/\/+$/, '')}/#/runs/${encodeURIComponent(runId)}`;
}

export interface GenericPayload {
  type: 'crm-sync.alert';
  kind: Alert['kind'];
  title: string;
  job: string;
  runId?: string;
  status?: string;
  reason?: string;
  counts?: Alert['counts'];
  fields?: string[];
  slot?: string;
  missed?: number;
  at: string;
  url?: string;
}

export function genericPayload(alert: Alert, publicUrl?: string): GenericPayload {
  const url = runLink(publicUrl, alert.runId);
  return {
    type: 'crm-sync.alert',
    kind: alert.kind,
    title: `crm-sync: ${alert.job}: ${TITLES[alert.kind]}`,
    job: alert.job,
    ...(alert.runId !== undefined && { runId: alert.runId }),
    ...(alert.status !== undefined && { status: alert.status }),
    ...(alert.reason !== undefined && { reason: alert.reason }),
    ...(alert.counts !== undefined && { counts: alert.counts }),
    ...(alert.fields !== undefined && { fields: alert.fields }),
    ...(alert.slot !== undefined && { slot: alert.slot }),
    ...(alert.missed !== undefined && { missed: alert.missed }),
    at: alert.at,
    ...(url !== undefined && { url }),
  };
}

/** Slack's mrkdwn needs &, < and > escaped; nothing else is interpreted. */
function escapeSlack(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

export interface SlackPayload {
  text: string;
  blocks: Record<string, unknown>[];
}

export function slackPayload(alert: Alert, publicUrl?: string): SlackPayload {
  const url = runLink(publicUrl, alert.runId);
  const title = `crm-sync: ${alert.job}: ${TITLES[alert.kind]}`;
  const lines: string[] = [];
  if (alert.runId !== undefined) {
    const id = escapeSlack(alert.runId);
    lines.push(`*Run:* ${url !== undefined ? `<${url}|${id}>` : `\`${id}\``}`);
  }
  if (alert.status !== undefined) lines.push(`*Status:* ${escapeSlack(alert.status)}`);
  if (alert.slot !== undefined) lines.push(`*Slot:* ${escapeSlack(alert.slot)}`);
  if (alert.reason !== undefined) lines.push(`*Reason:* ${escapeSlack(alert.reason)}`);
  if (alert.counts !== undefined) {
    const c = alert.counts;
    lines.push(
      `*Rows:* ${c.read} read, ${c.created} created, ${c.updated} updated, ${c.unchanged} unchanged, ` +
        `${c.invalid} invalid, ${c.conflict} conflict, ${c.rejected} rejected, ${c.failed} failed`,
    );
  }
  if (alert.fields !== undefined && alert.fields.length > 0)
    lines.push(`*Fields:* ${alert.fields.map((f) => `\`${escapeSlack(f)}\``).join(', ')}`);
  const blocks: Record<string, unknown>[] = [
    { type: 'header', text: { type: 'plain_text', text: title.slice(0, 150) } },
    { type: 'section', text: { type: 'mrkdwn', text: lines.join('\n') || title } },
  ];
  if (url !== undefined) {
    blocks.push({
      type: 'actions',
      elements: [{ type: 'button', text: { type: 'plain_text', text: 'Open the run' }, url }],
    });
  }
  return { text: url !== undefined ? `${title} (${url})` : title, blocks };
}

/** The body for a webhook of this format. */
export function alertPayload(
  alert: Alert,
  format: AlertFormat,
  publicUrl?: string,
): GenericPayload | SlackPayload {
  return format === 'slack' ? slackPayload(alert, publicUrl) : genericPayload(alert, publicUrl);
}
