/* global document, sessionStorage, fetch, Headers */
/**
 * The ops server's JSON API as the page reads it: every request carries the
 * ops token when the tab has one; a 401 asks the operator for it (once for
 * all the requests that met it) and keeps it in this tab's sessionStorage
 * only. An answer that is not OK becomes an ApiError with the server's reason.
 */

const TOKEN_KEY = 'crm-sync.ops-token';

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

let tokenAsked; // one prompt for every request that met a 401 at the same time

function askToken(refused) {
  tokenAsked ??= new Promise((resolve) => {
    const dialog = document.getElementById('token');
    const input = document.getElementById('token-input');
    document.getElementById('token-text').textContent = refused
      ? 'That token was refused. Enter the ops token (OPS_TOKEN) again; it is kept in this tab only.'
      : 'This server asks for its ops token (OPS_TOKEN). It is kept in this tab only.';
    input.value = '';
    dialog.addEventListener(
      'close',
      () => {
        const token = dialog.returnValue === 'ok' ? input.value.trim() : '';
        input.value = '';
        if (token) sessionStorage.setItem(TOKEN_KEY, token);
        tokenAsked = undefined;
        resolve(token);
      },
      { once: true },
    );
    dialog.showModal();
  });
  return tokenAsked;
}

/** Fetches `path` (relative to the page), asking for the token on a 401. */
export async function request(path, init = {}) {
  for (let attempt = 0; ; attempt++) {
    const token = sessionStorage.getItem(TOKEN_KEY);
    const headers = new Headers(init.headers);
    if (token) headers.set('Authorization', `Bearer ${token}`);
    const res = await fetch(path, { ...init, headers });
    if (res.status !== 401 || attempt >= 3) return res;
    if (token) sessionStorage.removeItem(TOKEN_KEY);
    if (!(await askToken(Boolean(token)))) return res;
  }
}

/** The JSON body of an OK answer; an ApiError naming the status and reason otherwise. */
export async function api(path, init) {
  const res = await request(path, init);
  const text = await res.text();
  let body;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  if (!res.ok) {
    const reason = body?.error ?? body?.detail ?? (text.slice(0, 200) || res.statusText);
    throw new ApiError(res.status, `${res.status}: ${reason}`);
  }
  return body;
}

/** The list in a body that is a list or holds one under a known name. */
export function listOf(body, ...names) {
  if (Array.isArray(body)) return body;
  for (const n of names) if (Array.isArray(body?.[n])) return body[n];
  return [];
}
