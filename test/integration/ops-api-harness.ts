/**
 * The ops server with its JSON API over an engine harness (as `crm-sync
 * start` wires it), and a client for the tests that checks every JSON answer
 * against the OpenAPI document the server serves: the answer's status must
 * be documented for its route, and its body must match that status's schema.
 * No answer may carry the platform key or the ops token.
 */
import { expect } from 'vitest';
import { z } from 'zod';
import type { OpsServer } from '../../src/ops/server.js';
import { startConsoleServer } from '../harness/console-server.js';
import type { EngineHarness } from '../harness/engine.js';

export interface ApiAnswer {
  status: number;
  headers: Headers;
  text: string;
  /** The parsed body of a JSON answer. */
  body: unknown;
}

export interface ApiClient {
  ops: OpsServer;
  /** Requests `path`; a JSON answer is validated against the document's schema for `route`. */
  call(
    method: 'GET' | 'POST',
    path: string,
    opts?: { route?: string; body?: string; headers?: Record<string, string> },
  ): Promise<ApiAnswer>;
  /** Routes and statuses answered so far, as "get /api/runs 200". */
  seen: Set<string>;
}

export async function startApi(
  h: EngineHarness,
  opts: { token?: string } = {},
): Promise<ApiClient> {
  const ops = await startConsoleServer(h, { ...opts, queues: [h.producer.runQueue] });
  const auth: Record<string, string> =
    opts.token !== undefined ? { authorization: `Bearer ${opts.token}` } : {};
  const secrets = [h.config.platform.apiKey!, ...(opts.token !== undefined ? [opts.token] : [])];
  const seen = new Set<string>();
  let document: { paths: Record<string, Record<string, unknown>> } | undefined;

  const raw = async (
    method: string,
    path: string,
    o: { body?: string; headers?: Record<string, string> },
  ) => {
    const res = await fetch(`${ops.url}${path}`, {
      method,
      headers: { ...auth, ...o.headers },
      ...(o.body !== undefined && { body: o.body }),
    });
    return { status: res.status, headers: res.headers, text: await res.text() };
  };

  return {
    ops,
    seen,
    async call(method, path, o = {}) {
      document ??= JSON.parse((await raw('GET', '/api/openapi.json', {})).text) as {
        paths: Record<string, Record<string, unknown>>;
      };
      const answer = await raw(method, path, o);
      for (const s of secrets) expect(answer.text).not.toContain(s);
      const route = o.route ?? path.split('?')[0]!;
      const operation = document.paths[route]?.[method.toLowerCase()] as
        | { responses: Record<string, { content?: Record<string, { schema: unknown }> }> }
        | undefined;
      expect(operation, `${method} ${route} is in the document`).toBeDefined();
      const documented = operation!.responses[String(answer.status)];
      expect(documented, `${method} ${route} ${answer.status} is documented`).toBeDefined();
      seen.add(`${method.toLowerCase()} ${route} ${answer.status}`);
      let body: unknown;
      const type = answer.headers.get('content-type') ?? '';
      if (type.startsWith('application/json')) {
        body = JSON.parse(answer.text);
        const schema = documented!.content?.['application/json']?.schema;
        expect(schema, `${method} ${route} ${answer.status} has a JSON schema`).toBeDefined();
        const checked = z.fromJSONSchema(schema as Parameters<typeof z.fromJSONSchema>[0]);
        const result = checked.safeParse(body);
        expect(
          result.success,
          `${method} ${route} ${answer.status} matches its schema: ${result.error?.message ?? ''}`,
        ).toBe(true);
      } else {
        expect(
          documented!.content?.['text/csv'],
          `${method} ${route} documents ${type}`,
        ).toBeDefined();
      }
      return { ...answer, body };
    },
  };
}
