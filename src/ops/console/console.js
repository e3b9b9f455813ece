/* global document, window, sessionStorage, fetch, Blob, location, performance, Headers, FormData, Node, URLSearchParams */
/**
 * The ops console: one page over the ops server's JSON API (/api). No
 * framework and no build step: this file is served as it is. Every value
 * from the API is rendered as text (textContent), never as HTML. The page
 * holds no secret: when the API answers 401 it asks for the ops token once
 * and keeps it in this tab's sessionStorage.
 */

const TOKEN_KEY = 'crm-sync.ops-token';
const ENDED = new Set(['completed', 'failed', 'stopped']);
const KINDS = ['invalid', 'rejected', 'conflict', 'unsupported', 'failed', 'skipped', 'warning'];
const STATUSES = ['queued', 'planning', 'writing', 'finalizing', 'completed', 'failed', 'stopped'];
const POLL_MS = 1000;
const PAGE = 50;
const FAILURE_PAGE = 500;

const main = document.getElementById('main');

// ---- the API ------------------------------------------------------------------

class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

let tokenAsked; // one prompt for every request that met a 401 at the same time

function askToken(refused) {
  tokenAsked ??= new Promise((resolve) => {
    const dialog = document.getElementById('token');
    const input = document.getElementById('token-input');
    document.getElementById('token-text').textContent = refused
      ? 'That token was refused. Enter the ops token (OPS_TOKEN) again; it is kept in this tab only.'
      : 'This server asks for its ops token (OPS_TOKEN). It is kept in this tab only.';
    input.value = '';
    dialog.addEventListener(
      'close',
      () => {
        const token = dialog.returnValue === 'ok' ? input.value.trim() : '';
        input.value = '';
        if (token) sessionStorage.setItem(TOKEN_KEY, token);
        tokenAsked = undefined;
        resolve(token);
      },
      { once: true },
    );
    dialog.showModal();
  });
  return tokenAsked;
}

/** Fetches `path` (relative to the page), asking for the token on a 401. */
async function request(path, init = {}) {
  for (let attempt = 0; ; attempt++) {
    const token = sessionStorage.getItem(TOKEN_KEY);
    const headers = new Headers(init.headers);
    if (token) headers.set('Authorization', `Bearer ${token}`);
    const res = await fetch(path, { ...init, headers });
    if (res.status !== 401 || attempt >= 3) return res;
    if (token) sessionStorage.removeItem(TOKEN_KEY);
    if (!(await askToken(Boolean(token)))) return res;
  }
}

async function api(path, init) {
  const res = await request(path, init);
  const text = await res.text();
  let body;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  if (!res.ok) {
    const reason = body?.error ?? body?.detail ?? (text.slice(0, 200) || res.statusText);
    throw new ApiError(res.status, `${res.status}: ${reason}`);
  }
  return body;
}

/** The list in a body that is a list or holds one under a known name. */
function listOf(body, ...names) {
  if (Array.isArray(body)) return body;
  for (const n of names) if (Array.isArray(body?.[n])) return body[n];
  return [];
}

// ---- rendering helpers --------------------------------------------------------

/** An element with attributes (on* are listeners) and children (strings become text). */
function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'text') el.textContent = String(v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

/** Replaces the children of `el`; null, undefined and false leave nothing. */
function put(el, ...nodes) {
  el.replaceChildren(
    ...nodes.flat(Infinity).filter((n) => n !== undefined && n !== null && n !== false),
  );
}

function svg(tag, attrs = {}) {
  const el = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  return el;
}

function when(value) {
  if (value === undefined || value === null || value === '') return '—';
  const d = new Date(value);
  return Number.isNaN(d.getTime()) ? String(value) : d.toLocaleString();
}

function duration(ms) {
  if (typeof ms !== 'number' || !Number.isFinite(ms)) return '—';
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

function status(s) {
  return h('span', { class: `status status-${String(s ?? 'unknown')}` }, s ?? 'unknown');
}

function runIdOf(run) {
  return run?.runId ?? run?.id;
}

function runLink(run) {
  const id = runIdOf(run);
  return id ? h('a', { href: `#/runs/${encodeURIComponent(id)}` }, id) : '—';
}

function shown(value) {
  if (value === undefined) return '';
  return typeof value === 'string' ? value : JSON.stringify(value);
}

function table(headers, rows, caption) {
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
function countsGrid(c, label) {
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

function countsSummary(c = {}) {
  const parts = ['read', 'created', 'updated', 'unchanged', 'invalid', 'rejected', 'failed']
    .filter((k) => typeof c[k] === 'number' && (k === 'read' || c[k] > 0))
    .map((k) => `${k} ${c[k]}`);
  if (c.warnings > 0) parts.push(`warnings ${c.warnings}`);
  return parts.join(' · ');
}

function schedule(job) {
  const s = job.schedule;
  if (!s) return 'manual';
  if (typeof s === 'string') return [s, job.timezone].filter(Boolean).join(' ');
  return [s.cron, s.timezone ?? s.timeZone].filter(Boolean).join(' ');
}

/** Asks the operator through the confirm dialog; resolves true on Confirm. */
function confirmAction(title, text, okLabel) {
  const dialog = document.getElementById('confirm');
  document.getElementById('confirm-title').textContent = title;
  document.getElementById('confirm-text').textContent = text;
  document.getElementById('confirm-ok').textContent = okLabel;
  dialog.returnValue = '';
  return new Promise((resolve) => {
    dialog.addEventListener('close', () => resolve(dialog.returnValue === 'ok'), { once: true });
    dialog.showModal();
  });
}

async function startRun(job, full) {
  const title = full ? `Full backfill of ${job}` : `Run ${job} now`;
  const text = full
    ? `List the platform again and re-plan every record of ${job}. Writes go to the platform.`
    : `Start a run of ${job}. Changed records are written to the platform.`;
  if (!(await confirmAction(title, text, full ? 'Start full backfill' : 'Start run'))) return;
  const body = await api('api/runs', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ job, full }),
  });
  location.hash = `#/runs/${encodeURIComponent(body.runId)}`;
}

function runButtons(job) {
  const act = (full) => () => startRun(job, full).catch(showError);
  return h(
    'span',
    { class: 'actions' },
    h('button', { type: 'button', onclick: act(false) }, 'Run now'),
    h('button', { type: 'button', onclick: act(true) }, 'Full backfill'),
  );
}

function showError(err) {
  const note = h('p', { class: 'error', role: 'alert' }, err?.message ?? String(err));
  main.prepend(note);
}

// ---- pages --------------------------------------------------------------------

async function jobsPage(view) {
  const [jobs, runs] = await Promise.all([
    api('api/jobs').then((b) => listOf(b, 'jobs')),
    api(`api/runs?limit=10`).then((b) => listOf(b, 'runs')),
  ]);
  view(
    h('h1', {}, 'Jobs'),
    table(
      ['Job', 'Entity', 'Schedule', 'Next slot', 'Last run', 'Last result', 'Actions'],
      jobs.map((j) => {
        const last = j.lastRun ?? j.last;
        return [
          h('strong', {}, j.name),
          j.entity ?? '',
          schedule(j),
          when(j.nextSlot ?? j.next),
          last ? runLink(last) : '—',
          last ? h('span', {}, status(last.status), ' ', countsSummary(last.counts)) : '—',
          h(
            'span',
            { class: 'actions' },
            runButtons(j.name),
            h('a', { href: `#/jobs/${encodeURIComponent(j.name)}/plan` }, 'Preview plan'),
          ),
        ];
      }),
    ),
    h('h2', {}, 'Recent runs'),
    runsTable(runs),
    h('p', {}, h('a', { href: '#/runs' }, 'All runs')),
  );
}

function runsTable(runs) {
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

async function runsPage(view, params) {
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

function failuresSection(runId) {
  const state = { kind: '', search: '', rows: [], offset: 0, more: false };
  const list = h('div', {});
  const note = h('p', { class: 'muted', 'aria-live': 'polite' });
  const load = async (reset) => {
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
          [r.line, r.kind, r.field, r.reason, shown(r.value), r.identity].some((x) =>
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
        ['Line', 'Kind', 'Field', 'Reason', 'Value', 'Identity'],
        rows.map((r) => [
          String(r.line),
          r.kind,
          r.field ?? '',
          r.reason,
          shown(r.value),
          r.identity ?? '',
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
  return { section, load };
}

async function runPage(view, runId, live) {
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
  await failures.load(true);
  // Poll while the run goes; the failures are read again once it ends. A
  // poll that fails (a restarting server) is said and tried again.
  const trouble = h('p', { class: 'error', role: 'status' });
  while (!ENDED.has(run.status) && live()) {
    await new Promise((r) => window.setTimeout(r, POLL_MS));
    if (!live()) return;
    try {
      run = await api(`api/runs/${encodeURIComponent(runId)}`);
    } catch (err) {
      trouble.textContent = `Could not read the run (trying again): ${err?.message ?? err}`;
      if (!trouble.isConnected) prog.prepend(trouble);
      continue;
    }
    drawHead();
    if (ENDED.has(run.status)) await failures.load(true);
  }
}

async function retry(runId) {
  if (
    !(await confirmAction(
      `Retry ${runId}`,
      `Start a new run of this run's job with its options.`,
      'Retry',
    ))
  )
    return;
  const body = await api(`api/runs/${encodeURIComponent(runId)}/retry`, { method: 'POST' });
  location.hash = `#/runs/${encodeURIComponent(body.runId)}`;
}

async function planPage(view, job, params) {
  const full = params.get('full') === 'true';
  view(
    h('h1', {}, 'Plan of ', job),
    h('p', { class: 'muted' }, 'Planning (a dry run: nothing is written)…'),
  );
  const plan = await api(`api/jobs/${encodeURIComponent(job)}/plan${full ? '?full=true' : ''}`);
  const counts = plan.counts ?? {};
  const actions = listOf(plan.actions ?? plan.sample, 'actions');
  const updates = actions.filter((a) => a.kind === 'update' || a.kind === 'unsupported');
  const withheld = actions.filter((a) => a.kind === 'invalid' || a.kind === 'conflict');
  view(
    h('h1', {}, 'Plan of ', job),
    h('p', {}, 'A dry run: what a run would do now. Nothing was written. ', runButtons(job)),
    h(
      'p',
      { class: 'muted' },
      full
        ? 'The platform was listed again: updates show the values it holds now.'
        : plan.indexSource === 'listed'
          ? 'The platform was listed for this plan.'
          : 'Planned against the stored index of the platform, which keeps hashes, not values: ',
      full || plan.indexSource === 'listed'
        ? null
        : h(
            'a',
            { href: `#/jobs/${encodeURIComponent(job)}/plan?full=true` },
            'list the platform again for field diffs',
          ),
    ),
    countsGrid(counts, 'Would be'),
    h('h2', {}, 'Updates with their field diffs'),
    table(
      ['Line', 'Record', 'Field', 'Now', 'Would be'],
      updates.flatMap((a) =>
        (a.changes?.length ? a.changes : [{}]).map((ch) => [
          String(a.line),
          a.platformId !== undefined ? `#${a.platformId}` : '',
          ch.field ?? '',
          shown(ch.from),
          shown(ch.to),
        ]),
      ),
    ),
    h('h2', {}, 'Creates'),
    table(
      ['Line', 'Identity'],
      actions
        .filter((a) => a.kind === 'create')
        .map((a) => [String(a.line), (a.keys ?? [])[0] ?? '']),
    ),
    h('h2', {}, 'Rows withheld'),
    table(
      ['Line', 'Kind', 'Field', 'Reason', 'Value'],
      withheld.map((a) => [String(a.line), a.kind, a.field ?? '', a.reason ?? '', shown(a.value)]),
    ),
    h('h2', {}, 'Warnings'),
    table(
      ['Line', 'Field', 'Reason'],
      listOf(plan.warnings, 'warnings').map((w) => [
        String(w.line ?? ''),
        w.field ?? '',
        w.reason ?? '',
      ]),
    ),
  );
}

// ---- routing ------------------------------------------------------------------

let generation = 0;

async function route() {
  const mine = ++generation;
  const live = () => mine === generation;
  const view = (...nodes) => {
    if (!live()) return;
    put(main, ...nodes);
  };
  const [path, query = ''] = location.hash.replace(/^#/, '').split('?');
  const parts = (path || '/').split('/').filter(Boolean).map(decodeURIComponent);
  for (const a of document.querySelectorAll('header nav a'))
    a.toggleAttribute('aria-current', a.getAttribute('href') === `#/${parts[0] ?? ''}`);
  try {
    if (parts.length === 0 || parts[0] === 'jobs') {
      if (parts[0] === 'jobs' && parts[2] === 'plan')
        await planPage(view, parts[1], new URLSearchParams(query));
      else await jobsPage(view);
    } else if (parts[0] === 'runs' && parts[1]) await runPage(view, parts[1], live);
    else if (parts[0] === 'runs') await runsPage(view, new URLSearchParams(query));
    else view(h('h1', {}, 'Not found'), h('p', {}, h('a', { href: '#/' }, 'Back to the jobs')));
  } catch (err) {
    if (!live()) return;
    view(
      h('h1', {}, 'Could not load this page'),
      h('p', { class: 'error', role: 'alert' }, err?.message ?? String(err)),
      h('button', { type: 'button', onclick: () => route() }, 'Try again'),
    );
  }
}

window.addEventListener('hashchange', () => {
  route();
  main.focus({ preventScroll: true });
});
route();
