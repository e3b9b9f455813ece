/* global document, window, Blob, URLSearchParams */
/**
 * A run's failures and warnings: read a page at a time, filtered by kind on
 * the server, searched in the page, and downloaded as the CLI's CSV. While
 * the run goes its page calls `follow` as the run's counts grow: the rows
 * added since the last read are read after the ones shown (the list is
 * kept in row order and only grows), unless more pages wait behind
 * "Load more". Reads go one at a time, in the order asked.
 */
import { api, ApiError, listOf, request } from '../api.js';
import { showError } from '../actions.js';
import { h, put } from '../dom.js';
import { shown } from '../format.js';
import { table } from '../parts.js';

/** The kinds a run's failures filter by: the server's (src/state/failure-kinds.ts), in its order. */
export const KINDS = [
  'invalid',
  'rejected',
  'conflict',
  'duplicate',
  'unsupported',
  'failed',
  'skipped',
  'warning',
];
const FAILURE_PAGE = 500;

export function failuresSection(runId) {
  const state = { kind: '', search: '', rows: [], offset: 0, more: false };
  const list = h('div', {});
  const note = h('p', { class: 'muted', 'aria-live': 'polite' });
  let reading = Promise.resolve();
  /** Reads a page (from the top when `reset`) once the reads asked before are done. */
  const load = (reset) => {
    const next = reading.then(() => read(reset));
    reading = next.catch(() => undefined);
    return next;
  };
  /** The rows the run added since the last read, while no page waits behind "Load more". */
  const follow = () => (state.more ? reading : load(false));
  const read = async (reset) => {
    if (reset) Object.assign(state, { rows: [], offset: 0 });
    const q = new URLSearchParams({ limit: String(FAILURE_PAGE), offset: String(state.offset) });
    if (state.kind) q.set('kind', state.kind);
    const rows = listOf(
      await api(`api/runs/${encodeURIComponent(runId)}/failures?${q}`),
      'failures',
      'rows',
    );
    state.rows.push(...rows);
    state.offset += rows.length;
    state.more = rows.length === FAILURE_PAGE;
    draw();
  };
  const draw = () => {
    const needle = state.search.toLowerCase();
    const rows = needle
      ? state.rows.filter((r) =>
          [r.line, r.kind, r.field, r.reason, shown(r.value), r.identity, r.record].some((x) =>
            String(x ?? '')
              .toLowerCase()
              .includes(needle),
          ),
        )
      : state.rows;
    note.textContent = `${rows.length} of ${state.rows.length}${state.more ? '+' : ''} rows shown`;
    put(
      list,
      table(
        ['Line', 'Kind', 'Field', 'Reason', 'Value', 'Identity', 'Record'],
        rows.map((r) => [
          String(r.line),
          r.kind,
          r.field ?? '',
          r.reason,
          shown(r.value),
          r.identity ?? '',
          r.record ?? '',
        ]),
      ),
      state.more
        ? h('button', { type: 'button', onclick: () => load(false).catch(showError) }, 'Load more')
        : '',
    );
  };
  const download = async () => {
    const q = state.kind ? `?kind=${encodeURIComponent(state.kind)}` : '';
    const res = await request(`api/runs/${encodeURIComponent(runId)}/failures${q}`, {
      headers: { Accept: 'text/csv' },
    });
    if (!res.ok) throw new ApiError(res.status, `${res.status}: the CSV could not be read`);
    const url = URL.createObjectURL(new Blob([await res.arrayBuffer()], { type: 'text/csv' }));
    const a = h('a', {
      href: url,
      download: `failures-${runId}${state.kind ? `-${state.kind}` : ''}.csv`,
    });
    document.body.append(a);
    a.click();
    a.remove();
    window.setTimeout(() => URL.revokeObjectURL(url), 10_000);
  };
  const section = h(
    'section',
    { 'aria-labelledby': 'failures-title' },
    h('h2', { id: 'failures-title' }, 'Failures and warnings'),
    h(
      'div',
      { class: 'filters' },
      h('label', { for: 'failure-kind' }, 'Kind'),
      h(
        'select',
        {
          id: 'failure-kind',
          onchange: (e) => {
            state.kind = e.target.value;
            load(true).catch(showError);
          },
        },
        h('option', { value: '' }, 'all'),
        KINDS.map((k) => h('option', { value: k }, k)),
      ),
      h('label', { for: 'failure-search' }, 'Search'),
      h('input', {
        id: 'failure-search',
        type: 'search',
        oninput: (e) => {
          state.search = e.target.value;
          draw();
        },
      }),
      h('button', { type: 'button', onclick: () => download().catch(showError) }, 'Download CSV'),
    ),
    note,
    list,
  );
  return { section, load, follow };
}
