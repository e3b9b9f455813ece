/**
 * The jobs page (`#/`): the problems of the job files (a file that does not
 * load, a webhook its alerts cannot reach), every job definition with its
 * entity, write priority, schedule, next slot (or since when it is paused)
 * and last run (and whether that run's alert was dropped), the buttons that
 * start a run and pause or resume a schedule, and the recent runs.
 */
import { api, listOf } from '../api.js';
import { pauseButton, runButtons, showError } from '../actions.js';
import { h } from '../dom.js';
import { countsSummary, when } from '../format.js';
import { runLink, status, table } from '../parts.js';
import { runsTable } from './runs.js';

function schedule(job) {
  const s = job.schedule;
  if (!s) return 'manual';
  if (typeof s === 'string') return [s, job.timezone].filter(Boolean).join(' ');
  return [s.cron, s.timezone ?? s.timeZone].filter(Boolean).join(' ');
}

/** The next slot, or since when and by whom the schedule is paused. */
function next(job) {
  if (!job.paused) return when(job.nextSlot ?? job.next);
  return h(
    'span',
    { class: 'paused', title: `paused by ${job.paused.by}` },
    `paused since ${when(job.paused.since)}`,
  );
}

export async function jobsPage(view) {
  const [body, runs] = await Promise.all([
    api('api/jobs'),
    api(`api/runs?limit=10`).then((b) => listOf(b, 'runs')),
  ]);
  const jobs = listOf(body, 'jobs');
  const problems = Array.isArray(body?.problems) ? body.problems : [];
  view(
    h('h1', {}, 'Jobs'),
    problems.length > 0
      ? h(
          'section',
          { 'aria-labelledby': 'problems-title' },
          h('h2', { id: 'problems-title' }, 'Problems'),
          h(
            'ul',
            { class: 'error', role: 'status' },
            problems.map((p) => h('li', {}, p)),
          ),
        )
      : null,
    table(
      ['Job', 'Entity', 'Priority', 'Schedule', 'Next slot', 'Last run', 'Last result', 'Actions'],
      jobs.map((j) => {
        const last = j.lastRun ?? j.last;
        return [
          h('strong', {}, j.name),
          j.entity ?? '',
          String(j.priority ?? '—'),
          schedule(j),
          next(j),
          last ? runLink(last) : '—',
          last
            ? h(
                'span',
                {},
                status(last.status),
                ' ',
                countsSummary(last.counts),
                last.alertUndelivered
                  ? h(
                      'span',
                      { class: 'error', title: last.alertUndelivered },
                      ' alert not delivered',
                    )
                  : null,
              )
            : '—',
          h(
            'span',
            { class: 'actions' },
            runButtons(j.name),
            j.schedule || j.paused
              ? pauseButton(j.name, Boolean(j.paused), () => jobsPage(view).catch(showError))
              : null,
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
