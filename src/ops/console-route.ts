/**
 * The web console's static files: the page at `/` and its ES modules
 * (console.js and what it imports, views/ included) and style under
 * `/console/`. They hold no data and no secret (the page reads the API with
 * the token the operator types), so they are served without auth.
 *
 * The files live in src/ops/console/ beside this module; `npm run build`
 * copies them to dist/ops/console/, so the same relative path works from the
 * source (tsx) and from the build (the image).
 */
import { fileURLToPath } from 'node:url';
import express, { type Response } from 'express';

export const CONSOLE_DIR = fileURLToPath(new URL('./console/', import.meta.url));

// Only our own scripts (the page's ES modules), style and API; no framing by another site.
const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

function secure(res: Response): void {
  res.set({
    'Content-Security-Policy': CSP,
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'no-referrer',
    'Cache-Control': 'no-cache',
  });
}

export function consoleRouter(): express.Router {
  const router = express.Router();
  router.get('/', (_req, res) => {
    secure(res);
    res.sendFile('index.html', { root: CONSOLE_DIR });
  });
  router.use(
    '/console',
    express.static(CONSOLE_DIR, {
      index: false,
      fallthrough: false,
      setHeaders: (res) => secure(res),
    }),
  );
  return router;
}
