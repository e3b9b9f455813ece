/**
 * The typed platform client: one method per documented operation of the
 * platform API (docs/PLATFORM-API.md), each naming its route and schemas;
 * typed-calls.ts checks the bodies against them. Lists are async iterators.
 *
 * The client never retries: wrap calls in `withRetry` (src/platform/with-retry.ts)
 * where a retry is wanted, so that retries stay one layer.
 */
import { PlatformHttp, type HttpOptions } from './http.js';
import { resolveNext } from './pages.js';
import {
  Account,
  AccountRequest,
  ApiAccount,
  ApiAccountRequest,
  CommentStreamCredential,
  Company,
  CompanyPage,
  CompanyRequest,
  JsonObject,
  Member,
  MemberRequest,
  OnboardeeNotifications,
  OnboardeeNotificationsRequest,
  OnboarderNotifications,
  OnboarderNotificationsRequest,
  Option,
  ProjectAsset,
  ProjectAssetRequest,
  ProjectType,
  ProjectTypeRequest,
  Role,
  RoleRequest,
  Task,
  TeamTask,
  Variable,
  Workflow,
} from './schemas.js';
import { TypedCalls, type CallOptions, type Id, type ListOptions } from './typed-calls.js';

export type PlatformClientOptions = HttpOptions;
export type { CallOptions, ListOptions } from './typed-calls.js';

export class PlatformClient {
  private readonly http: PlatformHttp;
  private readonly typed: TypedCalls;

  constructor(opts: PlatformClientOptions) {
    this.http = new PlatformHttp(opts);
    this.typed = new TypedCalls(this.http);
  }

  /** The base URL's origin: the only origin the key is ever sent to. */
  get origin(): string {
    return this.http.origin;
  }

  // Operations with documented status codes (200, 400, 401, 404) ------------

  root(o: CallOptions = {}): Promise<JsonObject> {
    return this.typed.call({ method: 'GET', route: '/', response: JsonObject, ...o });
  }

  rootOptions(o: CallOptions = {}): Promise<JsonObject> {
    return this.typed.call({ method: 'OPTIONS', route: '/', response: JsonObject, ...o });
  }

  gettingStartedTemplates(o: CallOptions = {}): AsyncGenerator<JsonObject, void, undefined> {
    return this.typed.list('/getting-started-templates', JsonObject, o);
  }

  gettingStartedTemplatesOptions(o: CallOptions = {}): Promise<JsonObject> {
    return this.typed.call({
      method: 'OPTIONS',
      route: '/getting-started-templates',
      response: JsonObject,
      ...o,
    });
  }

  gettingStartedTemplate(id: Id, o: CallOptions = {}): Promise<JsonObject> {
    return this.typed.call({
      method: 'GET',
      route: '/getting-started-templates/{id}',
      id,
      response: JsonObject,
      ...o,
    });
  }

  gettingStartedTemplateOptions(id: Id, o: CallOptions = {}): Promise<JsonObject> {
    return this.typed.call({
      method: 'OPTIONS',
      route: '/getting-started-templates/{id}',
      id,
      response: JsonObject,
      ...o,
    });
  }

  /**
   * One page of GET /companies: the first, or the one at `url` (a `next` or
   * `previous` link). A URL on another origin is refused before sending.
   */
  async companiesPage(url?: string, o: CallOptions = {}): Promise<CompanyPage> {
    const route = '/companies';
    const first = this.http.url(route);
    const target =
      url === undefined ? first : resolveNext(url, first, this.origin, { method: 'GET', route });
    return this.typed.call({ method: 'GET', route, url: target, response: CompanyPage, ...o });
  }

  /** Every page of GET /companies, following `next` on the same origin; a loop is an error. */
  companyPages(o: ListOptions = {}): AsyncGenerator<CompanyPage, void, undefined> {
    return this.typed.pages('/companies', CompanyPage, o);
  }

  /** Every company, streamed page by page. */
  async *companies(o: ListOptions = {}): AsyncGenerator<Company, void, undefined> {
    for await (const page of this.companyPages(o)) yield* page.results;
  }

  /** Every company in one array: for small sets and tests; syncs use `companies()`. */
  async listCompanies(o: CallOptions = {}): Promise<Company[]> {
    const all: Company[] = [];
    for await (const c of this.companies(o)) all.push(c);
    return all;
  }

  /** POST /companies. Not idempotent: on an error with `mayHaveApplied`, verify before creating again. */
  createCompany(body: CompanyRequest, o: CallOptions = {}): Promise<Company> {
    return this.typed.call({
      method: 'POST',
      route: '/companies',
      request: CompanyRequest,
      body,
      response: Company,
      ...o,
    });
  }

  companiesOptions(o: CallOptions = {}): Promise<JsonObject> {
    return this.typed.call({ method: 'OPTIONS', route: '/companies', response: JsonObject, ...o });
  }

  getCompany(id: Id, o: CallOptions = {}): Promise<Company> {
    return this.typed.call({
      method: 'GET',
      route: '/companies/{id}',
      id,
      response: Company,
      ...o,
    });
  }

  updateCompany(id: Id, body: CompanyRequest, o: CallOptions = {}): Promise<Company> {
    return this.typed.call({
      method: 'PUT',
      route: '/companies/{id}',
      id,
      request: CompanyRequest,
      body,
      response: Company,
      ...o,
    });
  }

  // Other operations --------------------------------------------------------

  /** POST /customers: the alias of POST /companies (same fields, same record). */
  createCustomer(body: CompanyRequest, o: CallOptions = {}): Promise<Company> {
    return this.typed.call({
      method: 'POST',
      route: '/customers',
      request: CompanyRequest,
      body,
      response: Company,
      ...o,
    });
  }

  commentsAuth(o: CallOptions = {}): Promise<CommentStreamCredential> {
    return this.typed.call({
      method: 'GET',
      route: '/comments/auth',
      response: CommentStreamCredential,
      ...o,
    });
  }

  createMember(body: MemberRequest, o: CallOptions = {}): Promise<Member> {
    return this.typed.call({
      method: 'POST',
      route: '/members',
      request: MemberRequest,
      body,
      response: Member,
      ...o,
    });
  }

  members(o: ListOptions = {}): AsyncGenerator<Member, void, undefined> {
    return this.typed.list('/members', Member, o);
  }

  /**
   * PUT /members/{id}. An extension beyond the documented API, which gives
   * members POST and GET only: call it only for a job that opted in (the sandbox serves it
   * with `extensions: ['members-put']`). Elsewhere a changed member is reported.
   */
  updateMember(id: Id, body: MemberRequest, o: CallOptions = {}): Promise<Member> {
    return this.typed.call({
      method: 'PUT',
      route: '/members/{id}',
      id,
      request: MemberRequest,
      body,
      response: Member,
      ...o,
    });
  }

  createProjectAsset(body: ProjectAssetRequest, o: CallOptions = {}): Promise<ProjectAsset> {
    return this.typed.call({
      method: 'POST',
      route: '/project-assets',
      request: ProjectAssetRequest,
      body,
      response: ProjectAsset,
      ...o,
    });
  }

  projectAssets(o: CallOptions = {}): AsyncGenerator<ProjectAsset, void, undefined> {
    return this.typed.list('/project-assets', ProjectAsset, o);
  }

  getAccount(o: CallOptions = {}): Promise<Account> {
    return this.typed.call({ method: 'GET', route: '/account', response: Account, ...o });
  }

  updateAccount(body: AccountRequest, o: CallOptions = {}): Promise<Account> {
    return this.typed.call({
      method: 'PUT',
      route: '/account',
      request: AccountRequest,
      body,
      response: Account,
      ...o,
    });
  }

  teamTasks(o: CallOptions = {}): AsyncGenerator<TeamTask, void, undefined> {
    return this.typed.list('/team-tasks', TeamTask, o);
  }

  tasks(o: CallOptions = {}): AsyncGenerator<Task, void, undefined> {
    return this.typed.list('/tasks', Task, o);
  }

  workflows(o: CallOptions = {}): AsyncGenerator<Workflow, void, undefined> {
    return this.typed.list('/workflows', Workflow, o);
  }

  createRole(body: RoleRequest, o: CallOptions = {}): Promise<Role> {
    return this.typed.call({
      method: 'POST',
      route: '/roles',
      request: RoleRequest,
      body,
      response: Role,
      ...o,
    });
  }

  variables(o: CallOptions = {}): AsyncGenerator<Variable, void, undefined> {
    return this.typed.list('/variables', Variable, o);
  }

  /** GET /options: the options of variables, not HTTP OPTIONS. */
  options(o: CallOptions = {}): AsyncGenerator<Option, void, undefined> {
    return this.typed.list('/options', Option, o);
  }

  createProjectType(body: ProjectTypeRequest, o: CallOptions = {}): Promise<ProjectType> {
    return this.typed.call({
      method: 'POST',
      route: '/project-types',
      request: ProjectTypeRequest,
      body,
      response: ProjectType,
      ...o,
    });
  }

  /** POST /api-accounts. The response's `token` is an API key: treat it as a secret. */
  createApiAccount(body: ApiAccountRequest, o: CallOptions = {}): Promise<ApiAccount> {
    return this.typed.call({
      method: 'POST',
      route: '/api-accounts',
      request: ApiAccountRequest,
      body,
      response: ApiAccount,
      ...o,
    });
  }

  getSso(o: CallOptions = {}): Promise<JsonObject> {
    return this.typed.call({ method: 'GET', route: '/sso', response: JsonObject, ...o });
  }

  /** PATCH /sso: the body's fields are not documented, so any JSON object. */
  updateSso(body: JsonObject, o: CallOptions = {}): Promise<JsonObject> {
    return this.typed.call({
      method: 'PATCH',
      route: '/sso',
      request: JsonObject,
      body,
      response: JsonObject,
      ...o,
    });
  }

  termsAcceptance(o: CallOptions = {}): Promise<JsonObject> {
    return this.typed.call({
      method: 'GET',
      route: '/terms-acceptance',
      response: JsonObject,
      ...o,
    });
  }

  templates(o: CallOptions = {}): Promise<JsonObject> {
    return this.typed.call({ method: 'GET', route: '/templates', response: JsonObject, ...o });
  }

  defaults(o: CallOptions = {}): Promise<JsonObject> {
    return this.typed.call({ method: 'GET', route: '/defaults', response: JsonObject, ...o });
  }

  billing(o: CallOptions = {}): Promise<JsonObject> {
    return this.typed.call({ method: 'GET', route: '/billing', response: JsonObject, ...o });
  }

  /** GET /onboardee-user/notifications: not documented (only its PUT is); our reading. */
  onboardeeNotifications(o: CallOptions = {}): Promise<OnboardeeNotifications> {
    return this.typed.call({
      method: 'GET',
      route: '/onboardee-user/notifications',
      response: OnboardeeNotifications,
      ...o,
    });
  }

  updateOnboardeeNotifications(
    body: OnboardeeNotificationsRequest,
    o: CallOptions = {},
  ): Promise<OnboardeeNotifications> {
    return this.typed.call({
      method: 'PUT',
      route: '/onboardee-user/notifications',
      request: OnboardeeNotificationsRequest,
      body,
      response: OnboardeeNotifications,
      ...o,
    });
  }

  onboarderNotifications(o: CallOptions = {}): Promise<OnboarderNotifications> {
    return this.typed.call({
      method: 'GET',
      route: '/onboarder-user/notifications',
      response: OnboarderNotifications,
      ...o,
    });
  }

  updateOnboarderNotifications(
    body: OnboarderNotificationsRequest,
    o: CallOptions = {},
  ): Promise<OnboarderNotifications> {
    return this.typed.call({
      method: 'PUT',
      route: '/onboarder-user/notifications',
      request: OnboarderNotificationsRequest,
      body,
      response: OnboarderNotifications,
      ...o,
    });
  }

  /** Closes the keep-alive sockets of the agents the client created. */
  close(): void {
    this.http.close();
  }
}
