import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  Invalid,
  TRANSFORM_NAMES,
  buildTransform,
  compileDateFormat,
  pipeline,
  splitName,
  toBoolean,
  toEmail,
  toInteger,
  toWebsite,
  websiteViaUrl,
  type Transform,
} from '../../src/crm/transforms.js';

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
  ])('accepts %j', (input, out) => expect(toInteger(input)).toBe(out));

  it.each([
    ['12.5', 'not a whole number'],
    [12.5, 'not a whole number'],
    ['abc', 'not a number'],
    ['1e3', 'not a number'],
    ['1,234', 'not a number'],
    ['', 'not a number'],
    ['9007199254740993', 'integer beyond 2^53'],
    // A Zoho id: 19 digits, must stay a string.
    ['4876876000000624001', 'integer beyond 2^53'],
    [2 ** 60, 'integer beyond 2^53'],
    [Number.NaN, 'not a whole number'],
    [true, 'expected a whole number, got a boolean'],
  ])('refuses %j', (input, why) => expect(reason(toInteger(input))).toContain(why));
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
  it('trims and lower-cases', () => {
    expect(toEmail('  Jane.Roe@Example.COM ')).toBe('jane.roe@example.com');
  });
  it.each(['jane', 'jane@', '@example.com', 'jane@example', 'a b@example.com'])('refuses %j', (v) =>
    expect(reason(toEmail(v))).toBe('not a valid e-mail address'),
  );
});

describe('website', () => {
  it.each([
    ['GLOBEX.COM', 'https://globex.com'],
    ['https://www.acme.com/', 'https://acme.com'],
    [' acme.com ', 'https://acme.com'],
    ['http://acme.com', 'https://acme.com'],
    ['www.acme.com', 'https://acme.com'],
    ['https://acme.com/en/', 'https://acme.com/en'],
    ['https://acme.com/?utm=1#top', 'https://acme.com'],
    ['https://user:pw@acme.com', 'https://acme.com'],
    ['acme.com:8080/x', 'https://acme.com:8080/x'],
    ['shop.acme.co.uk', 'https://shop.acme.co.uk'],
    ['bücher.de', 'https://xn--bcher-kva.de'],
  ])('%j → %j', (input, out) => expect(toWebsite(input)).toBe(out));

  it('treats blank as absent', () => expect(toWebsite('  ')).toBeNull());

  it('gives the same result on its fast path as through the URL parser', () => {
    const label = fc.stringMatching(/^[A-Za-z0-9-]{1,8}$/);
    const segment = fc.oneof(
      fc.constantFrom('', '.', '..', '.x', 'a..b', '%41', '~u', "it's", 'a b', 'Ä'),
      fc.stringMatching(/^[A-Za-z0-9._~!$&'()*+,;=:@%-]{0,6}$/),
    );
    const website = fc
      .record({
        scheme: fc.constantFrom('', 'http://', 'https://', 'HTTPS://'),
        www: fc.constantFrom('', 'www.', 'WWW.'),
        labels: fc.array(label, { minLength: 1, maxLength: 3 }),
        tld: fc.constantFrom('com', 'CO', 'example', 'x', 'de.', 'xn--p1ai'),
        port: fc.constantFrom('', '', ':443', ':8080'),
        path: fc.array(segment, { maxLength: 3 }),
        slash: fc.constantFrom('', '/', '//'),
        tail: fc.constantFrom('', '?a=1', '#top', '?x#y'),
      })
      .map(
        (w) =>
          `${w.scheme}${w.www}${w.labels.join('.')}.${w.tld}${w.port}${w.path.map((p) => `/${p}`).join('')}${w.slash}${w.tail}`,
      );
    fc.assert(
      fc.property(website, (s) => {
        expect(toWebsite(s)).toEqual(websiteViaUrl(s));
      }),
      { numRuns: 2000 },
    );
  });

  it.each([
    ['info@acme.com', 'an e-mail address'],
    ['ftp://acme.com', 'not http(s)'],
    ['localhost', 'no valid domain name'],
    ['acme', 'no valid domain name'],
    ['http://', 'not a website'],
    ['127.0.0.1', 'no valid domain name'],
  ])('refuses %j', (input, why) => expect(reason(toWebsite(input))).toContain(why));
});

describe('split-name', () => {
  it.each([
    ['Jane Roe', 'Jane', 'Roe'],
    ['  Mary  Ann   Smith ', 'Mary Ann', 'Smith'],
    ['Roe, Jane', 'Jane', 'Roe'],
    ['Cher', 'Cher', null],
    ['Roe,', null, 'Roe'],
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
    [{ 'split-name': 'middle' }, 'split-name: expected first or last'],
    [{ a: 1, b: 2 }, 'one-key object'],
    [5, 'a transform is a name'],
    ['constructor', 'unknown transform "constructor"'],
  ])('reports %j', (spec, message) => expect(buildTransform(spec)).toContain(message));

  it('pipeline stops at the first failure or absent value', () => {
    const p = pipeline([t('trim'), t('integer'), t({ 'max-length': 2 })]);
    expect(reason(p(' 12.5 '))).toBe('not a whole number');
    expect(pipeline([t('list'), t('trim')])(';')).toBeNull();
  });
});
