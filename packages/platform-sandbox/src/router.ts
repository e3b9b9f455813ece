/**
 * Route table: path templates (`/companies/{id}`) to one handler per method.
 * Matching is two map lookups (static paths, then "prefix + one id segment"),
 * so routing never shows in the request rate. A trailing slash is accepted,
 * as Django's router would serve `/companies/` too.
 */
import type { Principal } from './store.js';

export interface Context {
  method: string;
  /** The `{id}` segment of detail routes. */
  id: string | undefined;
  query: URLSearchParams;
  /** Parsed JSON body of writes; `{}` when the body is empty. */
  body: unknown;
  principal: Principal;
  /** Scheme and host the client used, e.g. http://127.0.0.1:4010 */
  origin: string;
  /** Request path as sent, without query. */
  path: string;
}

export interface Answer {
  status: number;
  body: unknown;
}

export type Handler = (ctx: Context) => Answer;

export interface RouteDef {
  template: string;
  /** DRF view name, for OPTIONS ("Company List"). */
  name: string;
  handlers: Record<string, Handler>;
}

export interface Route extends RouteDef {
  /** Value of the Allow header: the methods served, OPTIONS included. */
  allow: string;
}

export interface Match {
  route: Route;
  id: string | undefined;
}

export class Router {
  private readonly exact = new Map<string, Route>();
  private readonly detail = new Map<string, Route>();

  constructor(defs: RouteDef[]) {
    for (const def of defs) {
      const methods = Object.keys(def.handlers);
      if (methods.includes('GET')) methods.push('HEAD');
      const route: Route = { ...def, allow: methods.join(', ') };
      if (def.template.endsWith('/{id}')) this.detail.set(def.template.slice(0, -5), route);
      else this.exact.set(def.template, route);
    }
  }

  match(rawPath: string): Match | undefined {
    const path = rawPath.length > 1 && rawPath.endsWith('/') ? rawPath.slice(0, -1) : rawPath;
    const route = this.exact.get(path);
    if (route) return { route, id: undefined };
    const slash = path.lastIndexOf('/');
    if (slash <= 0 || slash === path.length - 1) return undefined;
    const detail = this.detail.get(path.slice(0, slash));
    return detail ? { route: detail, id: path.slice(slash + 1) } : undefined;
  }

  all(): Route[] {
    return [...this.exact.values(), ...this.detail.values()];
  }
}
