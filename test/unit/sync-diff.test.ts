/**
 * The field diff compares websites and e-mail addresses in a canonical form,
 * since values are sent as the CRM spells them: a platform holding
 * `https://acme.com` must not get a PUT because the CRM says `www.acme.com`.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalWebsite, diffFields } from '../../src/sync/diff.js';

describe('canonicalWebsite', () => {
  it.each([
    ['https://acme.com', 'acme.com'],
    ['http://www.ACME.com/', 'acme.com'],
    ['HTTPS://WWW.Acme.Com//', 'acme.com'],
    ['//acme.com', 'acme.com'],
    ['https://acme.com:443/', 'acme.com'],
    ['http://acme.com:80', 'acme.com'],
    ['https://acme.com:8080/A/', 'acme.com:8080/A'],
    ['https://acme.com/en/?a=1#top', 'acme.com/en?a=1#top'],
    ['https://bücher.de', 'xn--bcher-kva.de'],
    ['https://www.expressl&t.net', 'expressl&t.net'],
    ['https://acme.com.', 'acme.com'],
    [' https://www.acme.com/ ', 'acme.com'],
    // A colon in the path is no scheme.
    ['www.ACME.com/wiki/Help:Contents', 'acme.com/wiki/Help:Contents'],
    // User and password lead elsewhere than the host alone: they stay.
    ['https://u:p@www.acme.com/', 'u:p@acme.com'],
    ['https://u@acme.com', 'u@acme.com'],
  ])('%j → %j', (input, out) => expect(canonicalWebsite(input)).toBe(out));

  it('leaves other schemes and text that is no URL as they are', () => {
    expect(canonicalWebsite('ftp://acme.com')).toBe('ftp://acme.com');
    expect(canonicalWebsite('https://a b')).toBe('https://a b');
  });
});

describe('diffFields with canonical forms', () => {
  it('sees no change between two spellings of one website', () => {
    expect(
      diffFields({ website: 'https://acme.com' }, { website: 'https://www.acme.com/' }),
    ).toEqual([]);
    expect(
      diffFields({ website: 'https://xn--bcher-kva.de' }, { website: 'https://bücher.de' }),
    ).toEqual([]);
  });

  it('sees a change of host, path case, query or port', () => {
    for (const to of [
      'https://acme.org',
      'https://acme.com/About',
      'https://acme.com/about?x=1',
      'https://acme.com:8443/about',
    ]) {
      expect(diffFields({ website: 'https://acme.com/about' }, { website: to })).toEqual([
        { field: 'website', from: 'https://acme.com/about', to },
      ]);
    }
  });

  it('compares e-mail addresses without regard to case, and reports the value as sent', () => {
    expect(
      diffFields({ email: 'jane.roe@example.com' }, { email: 'Jane.Roe@Example.com' }),
    ).toEqual([]);
    expect(diffFields({ email: 'jane@example.com' }, { email: 'Jane.Roe@example.com' })).toEqual([
      { field: 'email', from: 'jane@example.com', to: 'Jane.Roe@example.com' },
    ]);
    expect(diffFields({ email: 'jane@example.com ' }, { email: 'Jane@example.com' })).toEqual([]);
    // Lower case, not upper: "ß" and "ss" are two addresses (upper case spells both SS).
    expect(diffFields({ email: 'strasse@example.de' }, { email: 'straße@example.de' })).toEqual([
      { field: 'email', from: 'strasse@example.de', to: 'straße@example.de' },
    ]);
  });

  it('applies the forms only to their own fields', () => {
    expect(diffFields({ name: 'acme.com' }, { name: 'www.ACME.com' })).toHaveLength(1);
    expect(
      diffFields({ custom: '{"w":"acme.com"}' }, { custom: '{"w":"www.acme.com"}' }),
    ).toHaveLength(1);
  });

  it('sees a website that is gone or new', () => {
    expect(diffFields({ website: null }, { website: 'https://acme.com' })).toHaveLength(1);
    expect(diffFields({}, { website: 'https://acme.com' })).toHaveLength(1);
  });

  it('agrees with itself: a website and its canonical form with https:// are one value', () => {
    const site = fc
      .tuple(
        fc.constantFrom('', 'http://', 'https://', 'HTTPS://'),
        fc.constantFrom('', 'www.', 'WWW.'),
        fc.stringMatching(/^[a-z0-9]{1,8}\.(com|de|co\.uk)$/),
        fc.constantFrom('', '/', '/a', '/a/', '/A?x=1'),
      )
      .map(([s, w, h, p]) => `${s}${w}${h}${p}`);
    fc.assert(
      fc.property(site, (w) => {
        expect(diffFields({ website: `https://${canonicalWebsite(w)}` }, { website: w })).toEqual(
          [],
        );
      }),
    );
  });
});
