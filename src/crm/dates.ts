/**
 * Dates in a mapping, written out as ISO: `YYYY-MM-DD`, `YYYY-MM-DDTHH:mm:ss`,
 * or for a date-time with a zone the instant in UTC (`…Z`). ISO input is
 * always accepted; other layouts only when the mapping lists them, since
 * `01/03/2024` means March in one locale and January in another. Pure.
 */

/** A date read from text: its ISO form, or why it is not one. */
export type DateResult = { ok: true; value: string } | { ok: false; reason: string };

function refused(reason: string): DateResult {
  return { ok: false, reason };
}

const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const ISO_DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}:?\d{2})?$/i;

interface DateParts {
  y: number;
  mo: number;
  d: number;
  h?: number;
  mi?: number;
  s?: number;
}

function pad(n: number, w = 2): string {
  return String(n).padStart(w, '0');
}

function formatParts(p: DateParts): DateResult {
  const { y, mo, d } = p;
  const days = new Date(Date.UTC(y, mo, 0)).getUTCDate();
  if (mo < 1 || mo > 12 || d < 1 || d > days) return refused('not a calendar date');
  const date = `${pad(y, 4)}-${pad(mo)}-${pad(d)}`;
  if (p.h === undefined) return { ok: true, value: date };
  const { h, mi = 0, s = 0 } = p;
  if (h > 23 || mi > 59 || s > 59) return refused('not a valid time of day');
  return { ok: true, value: `${date}T${pad(h)}:${pad(mi)}:${pad(s)}` };
}

function parseIso(s: string): DateResult | undefined {
  let m = ISO_DATE.exec(s);
  if (m) return formatParts({ y: +m[1]!, mo: +m[2]!, d: +m[3]! });
  m = ISO_DATE_TIME.exec(s);
  if (!m) return undefined;
  const local = formatParts({
    y: +m[1]!,
    mo: +m[2]!,
    d: +m[3]!,
    h: +m[4]!,
    mi: +m[5]!,
    s: m[6] ? +m[6] : 0,
  });
  if (!local.ok || !m[8]) return local;
  // With a zone: one instant, written in UTC.
  const ms = Date.parse(s.replace(' ', 'T'));
  return Number.isNaN(ms)
    ? refused('not a valid date-time')
    : { ok: true, value: new Date(ms).toISOString() };
}

const TOKEN = /YYYY|MM|M|DD|D|HH|H|mm|ss/g;
const TOKEN_PATTERN: Record<string, string> = {
  YYYY: '(\\d{4})',
  MM: '(\\d{2})',
  M: '(\\d{1,2})',
  DD: '(\\d{2})',
  D: '(\\d{1,2})',
  HH: '(\\d{2})',
  H: '(\\d{1,2})',
  mm: '(\\d{2})',
  ss: '(\\d{2})',
};
const TOKEN_PART: Record<string, keyof DateParts> = {
  YYYY: 'y',
  MM: 'mo',
  M: 'mo',
  DD: 'd',
  D: 'd',
  HH: 'h',
  H: 'h',
  mm: 'mi',
  ss: 's',
};

type DateParser = (s: string) => DateResult | undefined;

/** Compiles a layout such as `M/D/YYYY` or `YYYY-MM-DD HH:mm`; a string is an error. */
export function compileDateFormat(format: string): DateParser | string {
  const parts: (keyof DateParts)[] = [];
  let pattern = '';
  let last = 0;
  for (const m of format.matchAll(TOKEN)) {
    pattern += format.slice(last, m.index).replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    pattern += TOKEN_PATTERN[m[0]];
    parts.push(TOKEN_PART[m[0]]!);
    last = m.index + m[0].length;
  }
  pattern += format.slice(last).replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  if (new Set(parts).size !== parts.length) return `date format "${format}" repeats a part`;
  for (const need of ['y', 'mo', 'd'] as const) {
    if (!parts.includes(need)) return `date format "${format}" needs YYYY, M and D`;
  }
  if (parts.includes('mi') && !parts.includes('h'))
    return `date format "${format}" has mm without HH`;
  const re = new RegExp(`^${pattern}$`);
  return (s) => {
    const m = re.exec(s);
    if (!m) return undefined;
    const p: DateParts = { y: 0, mo: 0, d: 0 };
    parts.forEach((k, i) => (p[k] = Number(m[i + 1])));
    return formatParts(p);
  };
}

/**
 * How the `date` transform reads text, from its argument (a layout, a list
 * of them, or `{ formats }`); a string is the problem with the argument.
 */
export function dateReader(arg: unknown): ((raw: string) => DateResult) | string {
  let formats: unknown = arg;
  if (arg && typeof arg === 'object' && !Array.isArray(arg)) {
    const { formats: f, ...rest } = arg as Record<string, unknown>;
    const extra = Object.keys(rest);
    if (extra.length > 0) return `date: unknown option "${extra[0]}" (expected formats)`;
    formats = f;
  }
  if (formats === undefined || formats === null) formats = [];
  if (typeof formats === 'string') formats = [formats];
  if (!Array.isArray(formats) || !formats.every((f) => typeof f === 'string')) {
    return 'date: formats must be a layout or a list of layouts such as "M/D/YYYY"';
  }
  const parsers: DateParser[] = [];
  for (const f of formats as string[]) {
    const p = compileDateFormat(f);
    if (typeof p === 'string') return p;
    parsers.push(p);
  }
  const listed = (formats as string[]).join(', ');
  return (raw) => {
    const s = raw.trim();
    const iso = parseIso(s);
    if (iso !== undefined) return iso;
    for (const p of parsers) {
      const r = p(s);
      if (r !== undefined) return r;
    }
    return refused(
      parsers.length === 0
        ? 'not an ISO date (YYYY-MM-DD); list the accepted formats, e.g. { date: "M/D/YYYY" }'
        : `not a date in ISO or ${listed}`,
    );
  };
}
