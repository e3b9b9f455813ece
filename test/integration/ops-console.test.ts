/**
 * The console's static files on the ops server: served without the token
 * (they hold no data), with a policy that lets the page load only its own
 * script, style and API, while everything else still asks for the token.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CONSOLE_DIR } from '../../src/ops/console-route.js';
import { startOpsServer } from '../../src/ops/server.js';
import { closeRedis, createRedis } from '../../src/redis/connection.js';
import { useRedis } from '../harness/redis.js';

const { url } = useRedis();
const redis = createRedis('worker', url);

afterAll(async () => {
  await closeRedis(redis);
});

/** The page's script and the modules it imports (relative imports), as paths under /console/. */
function pageModules(): string[] {
  const found = new Set<string>();
  const visit = (file: string): void => {
    if (found.has(file)) return;
    found.add(file);
    const text = readFileSync(join(CONSOLE_DIR, file), 'utf8');
    for (const [, spec] of text.matchAll(/\bfrom '(\.{1,2}\/[^']+)'/g)) {
      visit(new URL(spec!, `http://x/${file}`).pathname.slice(1));
    }
  };
  visit('console.js');
  return [...found];
}

/** Every script in the console's folder, its subfolders included. */
function allScripts(): string {
  return readdirSync(CONSOLE_DIR, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.js'))
    .map((f) => readFileSync(join(CONSOLE_DIR, f), 'utf8'))
    .join('\n');
}

describe('ops server: the console', () => {
  it('serves the page and its files without the token, nothing else', async () => {
    const ops = await startOpsServer({
      port: 0,
      token: 'console-route-test-token-0123456789',
      redis,
      queues: [],
      checkPlatform: async () => {},
    });
    try {
      const page = await fetch(`${ops.url}/`);
      expect(page.status).toBe(200);
      expect(page.headers.get('content-type')).toMatch(/^text\/html/);
      expect(await page.text()).toBe(readFileSync(join(CONSOLE_DIR, 'index.html'), 'utf8'));
      const csp = page.headers.get('content-security-policy') ?? '';
      expect(csp).toContain("script-src 'self'");
      expect(csp).toContain("connect-src 'self'");
      expect(csp).toContain("frame-ancestors 'none'");
      expect(page.headers.get('x-content-type-options')).toBe('nosniff');

      // The page's script and each module it imports, views/ included.
      const modules = pageModules();
      expect(modules).toEqual(expect.arrayContaining(['console.js', 'api.js', 'views/run.js']));
      for (const file of modules) {
        const script = await fetch(`${ops.url}/console/${file}`);
        expect(script.status, file).toBe(200);
        expect(script.headers.get('content-type'), file).toMatch(/javascript/);
        expect(script.headers.get('content-security-policy'), file).toBe(csp);
      }
      const style = await fetch(`${ops.url}/console/console.css`);
      expect(style.status).toBe(200);
      expect(style.headers.get('content-type')).toMatch(/^text\/css/);

      // No listing, no file outside the folder, no fallback to the token-protected routes.
      expect((await fetch(`${ops.url}/console/`)).status).toBe(404);
      expect((await fetch(`${ops.url}/console/nothing.js`)).status).toBe(404);
      expect((await fetch(`${ops.url}/console/..%2fconsole-route.ts`)).status).not.toBe(200);
      expect((await fetch(`${ops.url}/metrics`)).status).toBe(401);
    } finally {
      await ops.close();
    }
  });

  it('holds no secret: the page and its scripts name no token and read it from the tab only', () => {
    const script = allScripts();
    expect(script).toContain('sessionStorage');
    expect(script).not.toContain('localStorage');
    expect(script).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write/);
  });
});
