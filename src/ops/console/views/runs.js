/* global location, FormData, URLSearchParams */
/**
 * The runs page (`#/runs`): the history, newest first, a page at a time,
 * filtered by job and status (kept in the address, so a view can be shared).
 */
import { api, listOf } from '../api.js';
import { h } from '../dom.js';
import { countsSummary, duration, when } from '../format.js';
import { runLink, status, table } from '../parts.js';

const STATUSES = [
  'queued',
  'planning',
  'writing',
  'finalizing',
  'completed',
  'failed',
  'stopped',
  'cancelled',
];
const PAGE = 50;

export function runsTable(runs) {
  return table(
    ['Run', 'Job', 'Status', 'Started', 'Duration', 'Counts'],
    runs.map((r) => [
      runLink(r),
      r.job ?? '',
      status(r.status),
      when(r.startedAt ?? r.createdAt),
      duration(r.durationMs),
      countsSummary(r.counts),
    ]),
  );
}

export async function runsPage(view, params) {
  const offset = Math.max(0, Number(params.get('offset')) || 0);
  const query = new URLSearchParams({ limit: String(PAGE), offset: String(offset) });
  for (const k of ['job', 'status']) if (params.get(k)) query.set(k, params.get(k));
  const runs = listOf(await api(`api/runs?${query}`), 'runs');
  const go = (changes) => {
    const next = new URLSearchParams(params);
    for (const [k, v] of Object.entries(changes)) {
      if (v) next.set(k, v);
      else next.delete(k);
    }
    location.hash = `#/runs?${next}`;
  };
  const form = h(
    'form',
    {
      class: 'filters',
      onsubmit: (e) => {
        e.preventDefault();
        const data = new FormData(e.target);
        go({ job: data.get('job'), status: data.get('status'), offset: '' });
      },
    },
    h('label', { for: 'runs-job' }, 'Job'),
    h('input', { id: 'runs-job', name: 'job', value: params.get('job') ?? '' }),
    h('label', { for: 'runs-status' }, 'Status'),
    h(
      'select',
      { id: 'runs-status', name: 'status' },
      h('option', { value: '' }, 'any'),
      STATUSES.map((s) => h('option', { value: s, selected: params.get('status') === s }, s)),
    ),
    h('button', { type: 'submit' }, 'Filter'),
  );
  view(
    h('h1', {}, 'Runs'),
    form,
    runsTable(runs),
    h(
      'p',
      { class: 'pager' },
      offset > 0
        ? h(
            'button',
            { type: 'button', onclick: () => go({ offset: String(Math.max(0, offset - PAGE)) }) },
            'Newer',
          )
        : null,
      runs.length === PAGE
        ? h(
            'button',
            { type: 'button', onclick: () => go({ offset: String(offset + PAGE) }) },
            'Older',
          )
        : null,
    ),
  );
}
