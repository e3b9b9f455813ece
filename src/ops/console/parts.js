/**
 * The pieces several views share: a run's status badge and link, a table,
 * and a grid of counts.
 */
import { h } from './dom.js';

export function status(s) {
  return h('span', { class: `status status-${String(s ?? 'unknown')}` }, s ?? 'unknown');
}

export function runIdOf(run) {
  return run?.runId ?? run?.id;
}

export function runLink(run) {
  const id = runIdOf(run);
  return id ? h('a', { href: `#/runs/${encodeURIComponent(id)}` }, id) : '—';
}

export function table(headers, rows, caption) {
  return h(
    'table',
    {},
    caption ? h('caption', {}, caption) : null,
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        headers.map((t) => h('th', { scope: 'col' }, t)),
      ),
    ),
    h(
      'tbody',
      {},
      rows.length === 0
        ? h('tr', {}, h('td', { colspan: headers.length, class: 'empty' }, 'none'))
        : rows.map((cells) =>
            h(
              'tr',
              {},
              cells.map((c) => h('td', {}, c)),
            ),
          ),
    ),
  );
}

const BAD = new Set(['invalid', 'conflict', 'rejected', 'failed', 'unsupported']);

/** Every count as a labelled number; the ones that mean trouble stand out when not zero. */
export function countsGrid(c, label) {
  return h(
    'section',
    { 'aria-label': label },
    h('h2', {}, label),
    h(
      'dl',
      { class: 'counts' },
      Object.entries(c).map(([k, v]) =>
        h(
          'div',
          { class: BAD.has(k) && v > 0 ? 'bad' : undefined },
          h('dt', {}, k),
          h('dd', {}, String(v)),
        ),
      ),
    ),
  );
}
