/* global document, window, location, URLSearchParams */
/**
 * The ops console: one page over the ops server's JSON API (/api). No
 * framework and no build step: these ES modules are served as they are.
 * Every value from the API is rendered as text (textContent), never as HTML.
 * The page holds no secret: when the API answers 401 it asks for the ops
 * token once and keeps it in this tab's sessionStorage (api.js).
 *
 * This module routes the address's hash to a view (views/).
 */
import { h, put } from './dom.js';
import { jobsPage } from './views/jobs.js';
import { planPage } from './views/plan.js';
import { runPage } from './views/run.js';
import { runsPage } from './views/runs.js';

const main = document.getElementById('main');

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
