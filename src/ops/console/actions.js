/* global document, location */
/**
 * What the operator can start from the page (a run, a full backfill, a retry,
 * pausing or resuming a schedule) or stop (a run going), each behind the
 * confirm dialog, and how a failed action is said.
 */
import { api } from './api.js';
import { h } from './dom.js';

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

export function runButtons(job) {
  const act = (full) => () => startRun(job, full).catch(showError);
  return h(
    'span',
    { class: 'actions' },
    h('button', { type: 'button', onclick: act(false) }, 'Run now'),
    h('button', { type: 'button', onclick: act(true) }, 'Full backfill'),
  );
}

async function setPaused(job, pause) {
  const ok = await confirmAction(
    pause ? `Pause the schedule of ${job}` : `Resume the schedule of ${job}`,
    pause
      ? `Scheduled slots of ${job} start no run and are not alerted as missed until it is resumed.`
      : `Scheduled runs of ${job} start again from its next slot. Slots passed while paused are not run.`,
    pause ? 'Pause schedule' : 'Resume schedule',
  );
  if (!ok) return false;
  await api(`api/jobs/${encodeURIComponent(job)}/${pause ? 'pause' : 'resume'}`, {
    method: 'POST',
  });
  return true;
}

/** Pause or Resume for a job's schedule; `done` is called after the change. */
export function pauseButton(job, paused, done) {
  const act = () =>
    setPaused(job, !paused)
      .then((changed) => (changed ? done() : undefined))
      .catch(showError);
  return h(
    'button',
    { type: 'button', onclick: act },
    paused ? 'Resume schedule' : 'Pause schedule',
  );
}

export async function retry(runId) {
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

/** Cancels a run that has not ended; the run's page shows it end `cancelled` as it polls. */
export async function cancel(runId) {
  if (
    !(await confirmAction(
      `Cancel ${runId}`,
      'Send nothing more: writes already sent settle, then the run ends cancelled. Retry it later to write the rest.',
      'Cancel run',
    ))
  )
    return;
  await api(`api/runs/${encodeURIComponent(runId)}/cancel`, { method: 'POST' });
}

export function showError(err) {
  const note = h('p', { class: 'error', role: 'alert' }, err?.message ?? String(err));
  document.getElementById('main').prepend(note);
}
