/**
 * A job's plan (`#/jobs/JOB/plan`): the dry run of the job, what a run would
 * create and update, the field diffs of the updates, and the rows withheld.
 */
import { api, listOf } from '../api.js';
import { runButtons } from '../actions.js';
import { h } from '../dom.js';
import { shown } from '../format.js';
import { countsGrid, table } from '../parts.js';

export async function planPage(view, job, params) {
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
