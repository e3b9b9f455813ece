/**
 * Every documented operation of the platform API (docs/PLATFORM-API.md)
 * wired to the store. Each path serves exactly its documented methods, plus
 * OPTIONS (every DRF view answers it) and HEAD wherever GET is served; any
 * other method is a 405.
 */
import { ApiError } from './errors.js';
import { validateBody, type FieldSpecs } from './fields.js';
import { fieldsMetadata, viewMetadata } from './metadata.js';
import type { SandboxExtension } from './options.js';
import { paginate } from './pagination.js';
import {
  accountFields,
  apiAccountFields,
  companyFields,
  memberFields,
  onboardeeNotificationFields,
  onboarderNotificationFields,
  projectAssetFields,
  projectTypeFields,
  readOnlyFields,
  roleFields,
  type ReadOnlySet,
} from './resources.js';
import type { Context, Handler, RouteDef } from './router.js';
import type { Rec, Store } from './store.js';

export interface RouteOptions {
  pageSize: number;
  maxPageSize: number;
  extensions: readonly SandboxExtension[];
}

const ok = (body: unknown) => ({ status: 200, body });
const created = (body: unknown) => ({ status: 201, body });

function valid(ctx: Context, specs: FieldSpecs): Rec {
  const r = validateBody(ctx.body, specs);
  if (!r.ok) throw new ApiError(400, r.errors);
  return r.data;
}

function page(items: readonly Rec[], ctx: Context, opts: RouteOptions) {
  return ok(
    paginate(items, {
      base: `${ctx.origin}${ctx.path}`,
      query: ctx.query,
      pageSize: opts.pageSize,
      maxPageSize: opts.maxPageSize,
    }),
  );
}

/** OPTIONS handler describing the write methods of a view. */
function options(
  name: string,
  writes: Record<string, { specs: FieldSpecs; readOnly: ReadOnlySet }> = {},
): Handler {
  const actions = Object.fromEntries(
    Object.entries(writes).map(([method, w]) => [
      method,
      fieldsMetadata(w.specs, readOnlyFields[w.readOnly]),
    ]),
  );
  const body = viewMetadata(name, actions);
  return () => ok(body);
}

const emptyObject: Handler = () => ok({});

export function buildRoutes(store: Store, opts: RouteOptions): RouteDef[] {
  const companyWrite = { specs: companyFields, readOnly: 'company' as const };
  const memberWrite = { specs: memberFields, readOnly: 'member' as const };
  const membersPut = opts.extensions.includes('members-put');

  const createCompany: Handler = (ctx) =>
    ok(store.createCompany(valid(ctx, companyFields), ctx.principal));

  const routes: RouteDef[] = [
    {
      template: '/',
      name: 'Api Root',
      handlers: {
        GET: (ctx) =>
          ok(
            Object.fromEntries(
              [
                'account',
                'api-accounts',
                'companies',
                'customers',
                'members',
                'options',
                'project-assets',
                'project-types',
                'roles',
                'tasks',
                'team-tasks',
                'variables',
                'workflows',
              ].map((p) => [p, `${ctx.origin}/${p}`]),
            ),
          ),
        OPTIONS: options('Api Root'),
      },
    },
    {
      template: '/getting-started-templates',
      name: 'Getting Started Template List',
      handlers: { GET: emptyObject, OPTIONS: options('Getting Started Template List') },
    },
    {
      template: '/getting-started-templates/{id}',
      name: 'Getting Started Template Detail',
      handlers: { GET: emptyObject, OPTIONS: options('Getting Started Template Detail') },
    },
    {
      template: '/companies',
      name: 'Company List',
      handlers: {
        GET: (ctx) => page(store.companies.items, ctx, opts),
        // The API documents 200 (not DRF's usual 201) for this create.
        POST: createCompany,
        OPTIONS: options('Company List', { POST: companyWrite }),
      },
    },
    {
      template: '/companies/{id}',
      name: 'Company Detail',
      handlers: {
        GET: (ctx) => ok(store.companies.get(ctx.id)),
        PUT: (ctx) => {
          const record = store.companies.get(ctx.id);
          return ok(store.updateCompany(record, valid(ctx, companyFields)));
        },
        OPTIONS: options('Company Detail', { PUT: companyWrite }),
      },
    },
    {
      template: '/customers',
      name: 'Customer List',
      handlers: { POST: createCompany, OPTIONS: options('Customer List', { POST: companyWrite }) },
    },
    {
      template: '/members',
      name: 'Member List',
      handlers: {
        GET: (ctx) => page(store.members.items, ctx, opts),
        POST: (ctx) => created(store.createMember(valid(ctx, memberFields))),
        OPTIONS: options('Member List', { POST: memberWrite }),
      },
    },
    {
      // Not documented: exists so that PUT answers 405 without the extension.
      template: '/members/{id}',
      name: 'Member Detail',
      handlers: membersPut
        ? {
            PUT: (ctx) => {
              const record = store.members.get(ctx.id);
              return ok(store.updateMember(record, valid(ctx, memberFields)));
            },
            OPTIONS: options('Member Detail', { PUT: memberWrite }),
          }
        : { OPTIONS: options('Member Detail') },
    },
    {
      template: '/project-assets',
      name: 'Project Asset List',
      handlers: {
        GET: (ctx) => page(store.projectAssets.items, ctx, opts),
        POST: (ctx) =>
          created(store.createProjectAsset(valid(ctx, projectAssetFields), ctx.principal)),
        OPTIONS: options('Project Asset List', {
          POST: { specs: projectAssetFields, readOnly: 'projectAsset' },
        }),
      },
    },
    {
      template: '/account',
      name: 'Account',
      handlers: {
        GET: () => ok(store.account),
        PUT: (ctx) => ok(store.updateAccount(valid(ctx, accountFields))),
        OPTIONS: options('Account', { PUT: { specs: accountFields, readOnly: 'account' } }),
      },
    },
    readOnlyList('/team-tasks', 'Team Task List', () => store.teamTasks, opts),
    readOnlyList('/tasks', 'Task List', () => store.tasks, opts),
    readOnlyList('/workflows', 'Workflow List', () => store.workflows, opts),
    readOnlyList('/variables', 'Variable List', () => store.variables, opts),
    readOnlyList('/options', 'Option List', () => store.options, opts),
    {
      template: '/roles',
      name: 'Role List',
      handlers: {
        POST: (ctx) => created(store.createRole(valid(ctx, roleFields), ctx.principal)),
        OPTIONS: options('Role List', { POST: { specs: roleFields, readOnly: 'role' } }),
      },
    },
    {
      template: '/project-types',
      name: 'Project Type List',
      handlers: {
        POST: (ctx) => created(store.createProjectType(valid(ctx, projectTypeFields))),
        OPTIONS: options('Project Type List', {
          POST: { specs: projectTypeFields, readOnly: 'projectType' },
        }),
      },
    },
    {
      template: '/api-accounts',
      name: 'Api Account List',
      handlers: {
        POST: (ctx) => {
          const r = store.postApiAccount(valid(ctx, apiAccountFields));
          return r.created ? created(r.record) : ok(r.record);
        },
        OPTIONS: options('Api Account List', {
          POST: { specs: apiAccountFields, readOnly: 'apiAccount' },
        }),
      },
    },
    {
      template: '/comments/auth',
      name: 'Comment Stream Auth',
      handlers: {
        GET: () => ok({ stream_token: store.streamToken }),
        OPTIONS: options('Comment Stream Auth'),
      },
    },
    {
      template: '/sso',
      name: 'Sso',
      handlers: {
        GET: emptyObject,
        PATCH: (ctx) => {
          valid(ctx, {});
          return ok({});
        },
        OPTIONS: options('Sso'),
      },
    },
    ...['terms-acceptance', 'templates', 'defaults', 'billing'].map((p) => ({
      template: `/${p}`,
      name: titleOf(p),
      handlers: { GET: emptyObject, OPTIONS: options(titleOf(p)) },
    })),
    notifications(
      '/onboardee-user/notifications',
      'Onboardee User Notifications',
      store.onboardeeNotifications,
      onboardeeNotificationFields,
    ),
    notifications(
      '/onboarder-user/notifications',
      'Onboarder User Notifications',
      store.onboarderNotifications,
      onboarderNotificationFields,
    ),
  ];
  return routes;
}

function readOnlyList(
  template: string,
  name: string,
  items: () => readonly Rec[],
  opts: RouteOptions,
): RouteDef {
  return {
    template,
    name,
    handlers: { GET: (ctx) => page(items(), ctx, opts), OPTIONS: options(name) },
  };
}

function notifications(template: string, name: string, record: Rec, specs: FieldSpecs): RouteDef {
  return {
    template,
    name,
    handlers: {
      // The API documents only PUT for the onboardee set; we read GET as its pair.
      GET: () => ok(record),
      PUT: (ctx) => ok(Object.assign(record, valid(ctx, specs))),
      OPTIONS: options(name, { PUT: { specs, readOnly: 'none' } }),
    },
  };
}

function titleOf(path: string): string {
  return path
    .split('-')
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join(' ');
}
