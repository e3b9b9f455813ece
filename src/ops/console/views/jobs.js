/**
 * The jobs page (`#/`): every job definition with its schedule, next slot and
 * last run, the buttons that start a run, and the recent runs.
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
