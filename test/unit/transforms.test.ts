import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  Invalid,
  TRANSFORM_NAMES,
  buildTransform,
  pipeline,
  splitName,
  toBoolean,
  toEmail,
  toInteger,
  toWebsite,
  type Transform,
} from '../../src/crm/transforms.js';
import { compileDateFormat } from '../../src/crm/dates.js';

function t(spec: unknown): Transform {
  const built = buildTransform(spec);
  if (typeof built === 'string') throw new Error(built);
  return built;
}

function reason(v: unknown): string {
  if (!(v instanceof Invalid)) throw new Error(`expected Invalid, got ${JSON.stringify(v)}`);
  return v.reason;
}

describe('text transforms', () => {
  it('trim, lower, upper', () => {
    expect(t('trim')('  Acme  ')).toBe('Acme');
    expect(t('lower')('ACME')).toBe('acme');
    expect(t('upper')('acme')).toBe('ACME');
    expect(t('trim')(42)).toBe('42');
    // A JSON export's true/false is text to a text transform.
    expect(t('upper')(true)).toBe('TRUE');
    expect(t('trim')(false)).toBe('false');
    expect(reason(t('trim')({ a: 1 }))).toBe('expected text, got an object');
    expect(reason(t('lower')(['a']))).toBe('expected text, got a list');
  });

  it('leaves formulas as plain data', () => {
    for (const f of ['=SUM(A1:A9)', '+1 555 0100', '-5', '@cmd']) expect(t('trim')(f)).toBe(f);
  });

  it('max-length refuses, truncate cuts', () => {
    expect(t({ 'max-length': 5 })('abcde')).toBe('abcde');
    expect(reason(t({ 'max-length': 5 })('abcdef'))).toBe('longer than 5 characters (6)');
    expect(t({ truncate: 3 })('abcdef')).toBe('abc');
    expect(t({ truncate: 3 })('ab')).toBe('ab');
  });

  it('list keeps the text items of a JSON list and refuses an object', () => {
    expect(t('list')(['a', { b: 1 }, 2, ['c']])).toEqual(['a', '2']);
    expect(reason(t('list')({ a: 'x;y' }))).toBe('expected text, got an object');
  });

  it('list splits multi-select values', () => {
    expect(t('list')('a; b;;c ')).toEqual(['a', 'b', 'c']);
    expect(t({ list: ',' })('x,y')).toEqual(['x', 'y']);
    expect(t('list')(' ; ')).toBeNull();
    expect(t('list')(['a', 1])).toEqual(['a', '1']);
  });
});

describe('integer', () => {
  it.each([
    ['123', 123],
    [' 123 ', 123],
    ['123.0', 123],
    ['123.', 123],
    ['+7', 7],
    ['-7', -7],
    [123, 123],
    ['987654321012', 987654321012],
    ['9007199254740991', 9007199254740991],
    ['-9007199254740991', -9007199254740991],
    // Beyond 15 digits the whole part is read as a BigInt: the ".0" must go first.
    ['9007199254740991.0', 9007199254740991],
    ['1234567890123456.00', 1234567890123456],
  ])('accepts %j', (input, out) => expect(toInteger(input)).toBe(out));

  it.each([
    ['12.5', 'not a whole number'],
    ['-12.5', 'not a whole number'],
    ['.5', 'not a whole number'],
    ['12.55', 'not a whole number'],
    [12.5, 'not a whole number'],
    ['abc', 'not a number'],
    ['x1.5', 'not a number'],
    ['1.5x', 'not a number'],
    // Text of no digit at all, whatever its characters' codes.
    ['-', 'not a number'],
    ['+', 'not a number'],
    ['.', 'not a number'],
    ['   ', 'not a number'],
    ['1e3', 'not a number'],
    ['1,234', 'not a number'],
    ['', 'not a number'],
    ['9007199254740993', 'integer beyond 2^53 loses precision'],
    ['-9007199254740993', 'integer beyond 2^53 loses precision'],
    // A Zoho id: 19 digits, must stay a string.
    ['4876876000000624001', 'integer beyond 2^53 loses precision'],
    [2 ** 60, 'integer beyond 2^53 loses precision'],
    [Number.NaN, 'not a whole number'],
    [true, 'expected a whole number, got a boolean'],
  ])('refuses %j', (input, why) => expect(reason(toInteger(input))).toBe(why));
});

describe('boolean', () => {
  it.each([
    ['true', true],
    ['TRUE', true],
    ['Yes', true],
    ['1', true],
    [' no ', false],
    ['False', false],
    ['0', false],
    [true, true],
    [0, false],
  ])('reads %j', (input, out) => expect(toBoolean(input)).toBe(out));

  it('refuses anything else', () => {
    expect(reason(toBoolean('maybe'))).toContain('not a yes/no value');
    expect(reason(toBoolean(2))).toContain('expected yes/no');
  });
});

describe('email', () => {
  it('trims and keeps the address as written (its case too)', () => {
    expect(toEmail('  Jane.Roe@Example.COM ')).toBe('Jane.Roe@Example.COM');
  });
  it.each(['jane', 'jane@', '@example.com', 'jane@example', 'a b@example.com'])('refuses %j', (v) =>
    expect(reason(toEmail(v))).toBe('not a valid e-mail address'),
  );
});

describe('website', () => {
  it.each([
    ['GLOBEX.COM', 'https://GLOBEX.COM'],
    [' acme.com ', 'https://acme.com'],
    ['www.acme.com', 'https://www.acme.com'],
    ['www.expressl&t.net', 'https://www.expressl&t.net'],
    ['https://www.Acme.com/En/', 'https://www.Acme.com/En/'],
    ['http://acme.com', 'http://acme.com'],
    ['HTTPS://acme.com/?utm=1#top', 'HTTPS://acme.com/?utm=1#top'],
    ['acme.com:8080/x', 'https://acme.com:8080/x'],
    ['localhost:3000', 'https://localhost:3000'],
    ['//acme.com/a', 'https://acme.com/a'],
    ['acme.com/@team', 'https://acme.com/@team'],
    ['bücher.de', 'https://bücher.de'],
    ['xn--bcher-kva.de', 'https://xn--bcher-kva.de'],
    ['https://xn--80ak6aa92e.com/', 'https://xn--80ak6aa92e.com/'],
    ['ACME.COM', 'https://ACME.COM'],
    ['acme.com', 'https://acme.com'],
    ['https://acme.com/path', 'https://acme.com/path'],
    ['http://acme.co.uk', 'http://acme.co.uk'],
    ['acme.com.', 'https://acme.com.'],
    ['http://[2001:db8::1]:8080/', 'http://[2001:db8::1]:8080/'],
    ['http://192.0.2.7/status', 'http://192.0.2.7/status'],
    ['https://acme.com/?ref=a@b', 'https://acme.com/?ref=a@b'],
    ['acme.com:9090', 'https://acme.com:9090'],
    ['http://acme.com:/', 'http://acme.com:/'],
    // Hosts that begin beyond ASCII: letters of any script.
    ['例え', 'https://例え'],
    ['https://ü/', 'https://ü/'],
    // Hosts of the first and last letters alone.
    ['a.aa', 'https://a.aa'],
    ['zz.Z', 'https://zz.Z'],
    // Hosts of the first and last digits alone (IPv4 addresses).
    ['0.0.0.0', 'https://0.0.0.0'],
    ['9.9.9.9', 'https://9.9.9.9'],
  ])('%j → %j (host and path as written; https:// only when there is no scheme)', (input, out) =>
    expect(toWebsite(input)).toBe(out),
  );

  it('treats blank as absent', () => expect(toWebsite('  ')).toBeNull());

  it('never changes a value that already has an http(s) scheme', () => {
    const url = fc
      .tuple(
        fc.constantFrom('http://', 'https://', 'HTTPS://'),
        fc.stringMatching(
          /^[A-Za-z0-9][A-Za-z0-9&_-]{0,6}(?:\.[A-Za-z0-9_][A-Za-z0-9&_-]{0,6}){0,3}$/,
        ),
        fc.stringMatching(/^(?:[/?#][A-Za-z0-9._~!$&'()*+,;=:@%/?#-]{0,12})?$/),
      )
      .map(([scheme, host, rest]) => `${scheme}${host}${rest}`);
    fc.assert(
      fc.property(url, (s) => {
        expect(toWebsite(` ${s} `)).toBe(s);
      }),
    );
  });

  it.each([
    ['info@acme.com', 'an e-mail address'],
    ['mailto:info@acme.com', 'an e-mail address'],
    ['ftp://acme.com', 'scheme ftp: is not http(s)'],
    ['javascript:alert(1)', 'scheme javascript: is not http(s)'],
    ['acme .com', 'contains whitespace'],
    ['http://', 'no host name'],
    ['https:///path', 'no host name'],
    ['-', 'no host name'],
    ['http:acme.com', 'expected // after http:'],
    ['=HYPERLINK("http://evil.example","x")', '"=" cannot be in a host name'],
    ['=acme.com', '"=" cannot be in a host name'],
    ['+acme.com', '"+" cannot be in a host name'],
    ['-acme.com', 'a label of the host name starts with "-"'],
    ['@acme', 'starts with "@"'],
    ['@acme.com', 'starts with "@"'],
    ['https://acme.com@evil.example/', 'text and "@" before the host name'],
    ['http://user:pass@acme.com', 'text and "@" before the host name'],
    ['https://evil.example\\.acme.com', '"\\\\" cannot be in a host name'],
    ['https://"acme.com"', '"\\"" cannot be in a host name'],
    ['acme..com', 'an empty label in the host name'],
    ['acme..com.', 'an empty label in the host name'],
    ['https://acme.com:80.1', '":" cannot be in a host name'],
    ['https://acme.com:8-0/', '":" cannot be in a host name'],
    // A combining mark alone: a host name character, but no letter or digit.
    ['\u0301', 'no host name'],
    ['_', 'no host name'],
    ['https://_._/', 'no host name'],
    ['http://[acme]/', 'not an IPv6 address in brackets'],
    ['JavaScript:alert(document.cookie)', 'scheme javascript: is not http(s)'],
    ['data:text/html,x', 'scheme data: is not http(s)'],
  ])('refuses %j', (input, why) => expect(reason(toWebsite(input))).toContain(why));

  it('refuses whatever starts like a spreadsheet formula (= + - @)', () => {
    fc.assert(
      fc.property(fc.constantFrom('=', '+', '-', '@'), fc.string(), (lead, rest) => {
        expect(toWebsite(`${lead}${rest}`)).toBeInstanceOf(Invalid);
      }),
    );
  });

  it('accepts only values whose host is a host name', () => {
    // The oracle: http(s):// then a bracketed IPv6 address or dot-joined
    // labels of letters, digits, marks, _ & and - (not first), then a port,
    // a path, a query, a fragment or the end.
    const accepted =
      /^https?:\/\/(?:\[[0-9a-f:.]+\]|[\p{L}\p{M}\p{N}_&][\p{L}\p{M}\p{N}_&-]*(?:\.[\p{L}\p{M}\p{N}_&][\p{L}\p{M}\p{N}_&-]*)*\.?)(?::\d*)?(?:[/?#]|$)/iu;
    const parts = fc.constantFrom(
      'http://',
      'https://',
      '//',
      '',
      'a',
      '.',
      '-',
      '@',
      ':',
      '=',
      '"',
      '(',
      '/',
      '[',
      ']',
      '1',
      'ü',
      '&',
      '\\',
    );
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.array(parts).map((p) => p.join('')),
        ),
        (s) => {
          const out = toWebsite(s);
          if (typeof out === 'string') expect(out).toMatch(accepted);
        },
      ),
      { numRuns: 2000 },
    );
  });
});

describe('split-name', () => {
  it.each([
    ['Jane Roe', 'Jane', 'Roe'],
    ['  Mary  Ann   Smith ', 'Mary Ann', 'Smith'],
    ['Roe, Jane', 'Jane', 'Roe'],
    ['Cher', 'Cher', null],
    ['Roe,', null, 'Roe'],
    [', Jane', 'Jane', null],
    ['Roe , Jane', 'Jane', 'Roe'],
  ])('%j', (full, first, last) => {
    expect(splitName(full)).toEqual({ first, last });
    expect(t({ 'split-name': 'first' })(full)).toBe(first);
    expect(t({ 'split-name': 'last' })(full)).toBe(last);
  });
});

describe('salesforce-id', () => {
  it('normalises to 18 characters or refuses', () => {
    expect(t('salesforce-id')('001M000000qfPyS')).toBe('001M000000qfPySIAU');
    expect(reason(t('salesforce-id')('001XYZ'))).toContain('expected 15 or 18');
  });
});

describe('date', () => {
  it('accepts ISO input without a format', () => {
    const d = t('date');
    expect(d('2024-02-01')).toBe('2024-02-01');
    expect(d('2024-02-01 09:30')).toBe('2024-02-01T09:30:00');
    expect(d('2011-01-10T00:00:00.000Z')).toBe('2011-01-10T00:00:00.000Z');
    expect(d('2024-01-10T10:36:45+02:00')).toBe('2024-01-10T08:36:45.000Z');
  });

  it('refuses ambiguous dates unless a format is given', () => {
    expect(reason(t('date')('01/03/2024'))).toContain('list the accepted formats');
    expect(t({ date: 'M/D/YYYY' })('01/03/2024')).toBe('2024-01-03');
    expect(t({ date: 'D/M/YYYY' })('01/03/2024')).toBe('2024-03-01');
  });

  it('tries formats in order', () => {
    const d = t({ date: { formats: ['M/D/YYYY H:mm', 'M/D/YYYY'] } });
    expect(d('1/10/2026 21:52')).toBe('2026-01-10T21:52:00');
    expect(d('1/10/2026')).toBe('2026-01-10');
    expect(reason(d('10.01.2026'))).toBe('not a date in ISO or M/D/YYYY H:mm, M/D/YYYY');
  });

  it('refuses impossible dates and times', () => {
    expect(reason(t('date')('2023-02-29'))).toBe('not a calendar date');
    expect(t('date')('2024-02-29')).toBe('2024-02-29');
    expect(reason(t({ date: 'M/D/YYYY' })('13/1/2024'))).toBe('not a calendar date');
    expect(reason(t('date')('2024-01-01 25:00'))).toBe('not a valid time of day');
  });

  it('checks layouts when the mapping compiles', () => {
    expect(compileDateFormat('MM/YYYY')).toContain('needs YYYY, M and D');
    expect(compileDateFormat('D/D/YYYY')).toContain('repeats a part');
    expect(buildTransform({ date: { formats: ['YYYY'], zone: 1 } })).toContain('unknown option');
    expect(buildTransform({ date: 5 })).toContain('formats must be');
  });
});

describe('buildTransform', () => {
  it('knows every transform by name', () => {
    expect(TRANSFORM_NAMES).toEqual(
      expect.arrayContaining(['trim', 'integer', 'website', 'salesforce-id', 'split-name']),
    );
  });

  it.each([
    ['domian', 'unknown transform "domian"'],
    [{ trim: true }, 'trim takes no argument'],
    ['max-length', 'max-length needs an argument'],
    [{ 'max-length': 0 }, 'max-length: expected a positive whole number'],
    [{ truncate: 0 }, 'truncate: expected a positive whole number'],
    [{ truncate: 2.5 }, 'truncate: expected a positive whole number'],
    [{ list: '' }, 'list: expected a separator such as ";"'],
    [{ list: 5 }, 'list: expected a separator such as ";"'],
    [{}, 'got keys (none)'],
    [{ a: 1, b: 2 }, 'got keys a, b'],
    ['domian', '(known: trim, lower, upper, integer,'],
    [{ 'split-name': 'middle' }, 'split-name: expected first or last'],
    [{ a: 1, b: 2 }, 'one-key object'],
    [5, 'a transform is a name'],
    ['constructor', 'unknown transform "constructor"'],
  ])('reports %j', (spec, message) => expect(buildTransform(spec)).toContain(message));

  it('refuses anything but a name or a one-key object, in one sentence', () => {
    for (const spec of [5, null, ['trim'], true])
      expect(buildTransform(spec)).toBe(
        'a transform is a name or a one-key object such as { max-length: 80 }',
      );
  });

  it('pipeline stops at the first failure or absent value', () => {
    const p = pipeline([t('trim'), t('integer'), t({ 'max-length': 2 })]);
    expect(reason(p(' 12.5 '))).toBe('not a whole number');
    expect(pipeline([t('list'), t('trim')])(';')).toBeNull();
  });
});
