/**
 * The jobs page (`#/`): the problems of the job files (a file that does not
 * load, a webhook its alerts cannot reach), every job definition with its
 * schedule, next slot and last run (and whether that run's alert was
 * dropped), the buttons that start a run, and the recent runs.
 */
import { api, listOf } from '../api.js';
import { runButtons } from '../actions.js';
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
      ['Job', 'Entity', 'Schedule', 'Next slot', 'Last run', 'Last result', 'Actions'],
      jobs.map((j) => {
        const last = j.lastRun ?? j.last;
        return [
          h('strong', {}, j.name),
          j.entity ?? '',
          schedule(j),
          when(j.nextSlot ?? j.next),
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
