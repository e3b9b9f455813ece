import { describe, expect, it } from 'vitest';
import { urlCredentials } from '../../src/crm/source-spec.js';
import { isSecretParam } from '../../src/log.js';
import { stripCredentials } from '../../src/state/redaction.js';

// Query parameters seen carrying credentials in CRM and storage URLs, and ones that do not.
const SECRET = [
  'token',
  'access_token',
  'api_key',
  'apikey',
  'hapikey',
  'X-Amz-Signature',
  'sig',
  'password',
  'passwd',
  'pwd',
  'auth',
  'session_id',
  'client_secret',
  'code',
  'credential',
];
const PLAIN = ['page', 'limit', 'since', 'properties', 'after', 'archived', 'zipcode', 'format'];

describe('secret query parameters: one rule for job files and run records', () => {
  it('names each credential parameter, and no plain one', () => {
    for (const name of SECRET) expect(isSecretParam(name), name).toBe(true);
    for (const name of PLAIN) expect(isSecretParam(name), name).toBe(false);
  });

  it('a job URL with one is refused, and a run record never keeps its value', () => {
    for (const name of SECRET) {
      const url = `https://api.example.com/v1/x?page=2&${name}=s3cr3tvalue`;
      expect(urlCredentials(url)?.params, name).toEqual([name]);
      expect(stripCredentials(url), name).not.toContain('s3cr3tvalue');
    }
    for (const name of PLAIN) {
      const url = `https://api.example.com/v1/x?${name}=plainvalue`;
      expect(urlCredentials(url)?.params, name).toEqual([]);
      expect(stripCredentials(url), name).toContain('plainvalue');
    }
  });
});
