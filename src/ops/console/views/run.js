/* global window, performance */
/**
 * A run's page (`#/runs/RUN`): its facts, its progress while it goes (polled),
 * its counts and timings, and its failures, which follow the run while it
 * goes (read again whenever the counts that add failure rows, its status or
 * its phase change). Polling stops when the run ends or the operator leaves
 * the page.
 */
import { api } from '../api.js';
import { cancel, retry, showError } from '../actions.js';
import { h, put, svg } from '../dom.js';
import { duration, when } from '../format.js';
import { countsGrid, runIdOf, status, table } from '../parts.js';
import { failuresSection } from './failures.js';

const ENDED = new Set(['completed', 'failed', 'stopped', 'cancelled']);
const POLL_MS = 1000;
/** The counts that grow with the run's failure rows (a warning is a row per field). */
const FAILURE_COUNTS = [
  'invalid',
  'conflict',
  'duplicates',
  'rejected',
  'failed',
  'skipped',
  'unsupported',
  'warnings',
];

/** How many failure rows the run's counts stand for, and where it is: a change means rows to read. */
function failureMark(run) {
  const c = run.counts ?? {};
  const rows = FAILURE_COUNTS.reduce((n, k) => n + (c[k] ?? 0), 0);
  return { rows, at: `${rows} ${run.status} ${run.phase ?? ''}` };
}

/** Writes per second, ETA and a chart of settled writes, from the samples polling took. */
function progress(run, samples) {
  const c = run.counts ?? {};
  const planned = c.writesPlanned ?? 0;
  const settled = c.writesSettled ?? 0;
  const recent = samples.filter((s) => s.t >= samples.at(-1).t - 10_000);
  const first = recent[0];
  const last = recent.at(-1);
  const rate =
    last && first && last.t > first.t ? ((last.v - first.v) * 1000) / (last.t - first.t) : 0;
  const eta = rate > 0 && planned > settled ? ((planned - settled) / rate) * 1000 : undefined;
  const facts = [
    ['Writes', `${settled} of ${planned} settled`],
    ['Writes/s', ENDED.has(run.status) ? '—' : rate.toFixed(1)],
    ['ETA', ENDED.has(run.status) ? 'ended' : eta === undefined ? '—' : duration(eta)],
  ];
  facts.push(['429s', String(c.rateLimited ?? 0)]);
  return h(
    'section',
    { 'aria-labelledby': 'progress-title' },
    h('h2', { id: 'progress-title' }, 'Progress'),
    h('progress', { max: Math.max(planned, 1), value: settled, 'aria-label': 'writes settled' }),
    h(
      'dl',
      { class: 'facts' },
      facts.map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]),
    ),
    chart(samples, planned),
  );
}

function chart(samples, planned) {
  const w = 320;
  const ht = 80;
  const box = svg('svg', {
    viewBox: `0 0 ${w} ${ht}`,
    width: w,
    height: ht,
    role: 'img',
    class: 'chart',
  });
  const title = svg('title');
  title.textContent = 'settled writes over time';
  box.append(title, svg('rect', { x: 0, y: 0, width: w, height: ht, class: 'chart-bg' }));
  if (samples.length < 2) return box;
  const t0 = samples[0].t;
  const span = Math.max(1, samples.at(-1).t - t0);
  const top = Math.max(1, planned, ...samples.map((s) => s.v));
  const points = samples
    .map(
      (s) =>
        `${(((s.t - t0) / span) * (w - 4) + 2).toFixed(1)},${(ht - 2 - (s.v / top) * (ht - 4)).toFixed(1)}`,
    )
    .join(' ');
  box.append(svg('polyline', { points, class: 'chart-line' }));
  return box;
}

export async function runPage(view, runId, live) {
  const samples = [];
  let run = await api(`api/runs/${encodeURIComponent(runId)}`);
  const failures = failuresSection(runId);
  const head = h('div', {});
  const prog = h('div', {});
  const tally = h('div', {});
  const drawHead = () => {
    const c = run.counts ?? {};
    put(
      head,
      h('h1', {}, 'Run ', runIdOf(run)),
      h(
        'dl',
        { class: 'facts' },
        [
          ['Job', h('a', { href: `#/jobs/${encodeURIComponent(run.job)}/plan` }, run.job)],
          ['Status', status(run.status)],
          ['Phase', run.phase ?? '—'],
          ['Mode', run.mode ?? '—'],
          ['Source', run.source ?? '—'],
          ['Started', when(run.startedAt ?? run.createdAt)],
          ['Finished', when(run.finishedAt)],
          ['Duration', duration(run.durationMs)],
        ].map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]),
      ),
      run.error ? h('p', { class: 'error', role: 'status' }, run.error) : null,
      run.alertUndelivered
        ? h('p', { class: 'error', role: 'status' }, `Alert not delivered: ${run.alertUndelivered}`)
        : null,
      ENDED.has(run.status) && run.status !== 'completed'
        ? h(
            'p',
            {},
            h(
              'button',
              { type: 'button', onclick: () => retry(runIdOf(run)).catch(showError) },
              'Retry',
            ),
          )
        : null,
      ENDED.has(run.status)
        ? null
        : h(
            'p',
            {},
            h(
              'button',
              { type: 'button', onclick: () => cancel(runIdOf(run)).catch(showError) },
              'Cancel run',
            ),
          ),
    );
    put(
      tally,
      countsGrid(c, 'Counts'),
      run.timings && Object.keys(run.timings).length > 0
        ? table(
            ['Phase', 'Time'],
            Object.entries(run.timings).map(([k, v]) => [k, duration(v)]),
            'Timings',
          )
        : null,
    );
    samples.push({ t: performance.now(), v: c.writesSettled ?? 0 });
    put(prog, progress(run, samples));
  };
  drawHead();
  view(head, prog, tally, failures.section);
  let read = failureMark(run);
  await failures.load(true);
  // Poll while the run goes. The failures follow it: the rows it added are
  // read when its counts, status or phase moved (all again when the counts
  // went down: a planning pass started over); all of them once it ends. A
  // poll that fails (a restarting server) is said and tried again.
  const trouble = h('p', { class: 'error', role: 'status' });
  let done = ENDED.has(run.status);
  while (!done && live()) {
    await new Promise((r) => window.setTimeout(r, POLL_MS));
    if (!live()) return;
    try {
      run = await api(`api/runs/${encodeURIComponent(runId)}`);
      drawHead();
      const mark = failureMark(run);
      if (ENDED.has(run.status) || mark.rows < read.rows) await failures.load(true);
      else if (mark.at !== read.at) await failures.follow();
      read = mark;
      done = ENDED.has(run.status);
    } catch (err) {
      trouble.textContent = `Could not read the run (trying again): ${err?.message ?? err}`;
      if (!trouble.isConnected) prog.prepend(trouble);
    }
  }
}
