/**
 * Values from the API as the page shows them: dates, durations, field values
 * and a run's counts in a line. A missing value is a dash, never "undefined".
 */

export function when(value) {
  if (value === undefined || value === null || value === '') return '—';
  const d = new Date(value);
  // With its zone: an operator and the worker are often not in the same one.
  return Number.isNaN(d.getTime())
    ? String(value)
    : d.toLocaleString(undefined, { timeZoneName: 'short' });
}

export function duration(ms) {
  if (typeof ms !== 'number' || !Number.isFinite(ms)) return '—';
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

export function shown(value) {
  if (value === undefined) return '';
  return typeof value === 'string' ? value : JSON.stringify(value);
}

export function countsSummary(c = {}) {
  const parts = [
    'read',
    'created',
    'updated',
    'unchanged',
    'invalid',
    'duplicates',
    'rejected',
    'failed',
  ]
    .filter((k) => typeof c[k] === 'number' && (k === 'read' || c[k] > 0))
    .map((k) => `${k} ${c[k]}`);
  if (c.warnings > 0) parts.push(`warnings ${c.warnings}`);
  return parts.join(' · ');
}
