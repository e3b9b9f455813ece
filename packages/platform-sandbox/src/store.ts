/**
 * The sandbox's state, in memory, one per instance. Records are kept in their
 * response shape (every documented field, response-only ones set by the
 * server), so reads only serialise. Nothing is ever deleted: the API has no
 * DELETE, and ids only grow.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { notFound } from './errors.js';
import {
  seededOptions,
  seededTasks,
  seededTeamTasks,
  seededVariables,
  seededWorkflows,
} from './fixtures.js';

export type Rec = Record<string, unknown>;

/** Who made a request: the configured key, or an API account's token. */
export interface Principal {
  name: string;
  apiAccountId?: number;
}

export type AuthResult = { ok: true; principal: Principal } | { ok: false; detail: string };

/** Records in id order, with lookup by id. */
export class Collection {
  readonly items: Rec[] = [];
  private readonly byId = new Map<number, Rec>();
  private nextId: number;

  constructor(firstId = 1) {
    this.nextId = firstId;
  }

  add(fields: Rec): Rec {
    const record = { id: this.nextId++, ...fields };
    this.items.push(record);
    this.byId.set(record.id, record);
    return record;
  }

  /** The record for a path id, or 404 as DRF gives it. */
  get(id: string | undefined): Rec {
    const n = id !== undefined && /^\d{1,15}$/.test(id) ? Number(id) : NaN;
    const record = this.byId.get(n);
    if (!record) throw notFound();
    return record;
  }

  find(id: unknown): Rec | undefined {
    return typeof id === 'number' ? this.byId.get(id) : undefined;
  }
}

const now = (): string => new Date().toISOString();
// 40 hex characters, as DRF's Token.generate_key makes them.
const newToken = (): string => randomBytes(20).toString('hex');

export class Store {
  readonly companies = new Collection();
  readonly members = new Collection();
  readonly projectAssets = new Collection();
  readonly roles = new Collection();
  readonly projectTypes = new Collection();
  readonly apiAccounts = new Collection();
  readonly account: Rec;
  readonly onboardeeNotifications: Rec;
  readonly onboarderNotifications: Rec;
  readonly tasks = seededTasks();
  readonly teamTasks = seededTeamTasks();
  readonly workflows = seededWorkflows();
  readonly variables = seededVariables();
  readonly options = seededOptions();
  readonly streamToken = newToken();
  private readonly tokens = new Map<string, Rec>();
  private readonly defaultPrincipal: Principal = { name: 'Sandbox API' };

  constructor(private readonly apiKey: string) {
    const created = now();
    this.account = {
      id: 1,
      company_name: 'Sandbox Onboarding Co',
      slug: 'sandbox',
      domain: 'sandbox.example.com',
      uuid: randomUUID(),
      is_active: true,
      settings: null,
      outboard_logo_img: null,
      outboard_logo: null,
      icon: null,
      avatar_img: null,
      avatar: null,
      logos: null,
      outboard_logo_delete: false,
      avatar_delete: false,
      is_ai_enabled: false,
      auto_update_enabled: true,
      stalled_status_threshold: 14,
      // The configured key is the account's default key, not an API account:
      // regenerating API-account tokens can never lock the sandbox's owner out.
      default_api_key: apiKey,
      created_at: created,
      first_roadmap_created_at: null,
      address: null,
      has_variables: 'true',
      has_tasks: 'true',
      has_project_templates: 'false',
      has_custom_sending_domain: 'false',
      has_chat: 'false',
      payment_subscription_id: null,
      payment_customer_id: null,
      trial_end_date: null,
      is_trialing: 'false',
      terms_acceptance: null,
      outboard_settings: null,
      internal: false,
    };
    this.onboardeeNotifications = {
      task_due_date_changed: true,
      task_due_date_reminders: true,
      task_overdue: true,
      discussion_mentions: true,
      discussion_daily_digest: false,
      task_summary_onboardee: true,
    };
    this.onboarderNotifications = {
      roadmap_status_updates: true,
      task_due_date_changed: true,
      task_due_date_reminders: true,
      task_overdue: true,
      discussion_mentions: true,
      discussion_daily_digest: false,
      task_summary: true,
    };
    for (const [name, description] of [
      ['Onboarding Manager', 'Owns the onboarding plan.'],
      ['Implementation Specialist', 'Configures the product for the customer.'],
    ] as const) {
      this.createRole({ name, description, role_type: 'internal' }, this.defaultPrincipal);
    }
    this.createProjectType({
      type: 'Standard onboarding',
      description: 'The default plan.',
      is_default: true,
    });
  }

  authenticate(header: string | undefined): AuthResult {
    if (header === undefined || header === '') {
      return { ok: false, detail: 'Authentication credentials were not provided.' };
    }
    if (header === this.apiKey) return { ok: true, principal: this.defaultPrincipal };
    const account = this.tokens.get(header);
    if (!account) return { ok: false, detail: 'Invalid token.' };
    if (account.is_active !== 'true') return { ok: false, detail: 'User inactive or deleted.' };
    return {
      ok: true,
      principal: { name: account.name as string, apiAccountId: account.id as number },
    };
  }

  createCompany(data: Rec, by: Principal): Rec {
    const t = now();
    return this.companies.add({
      name: data.name,
      website: data.website ?? null,
      uuid: data.uuid ?? randomUUID(),
      avatar: null,
      logos: null,
      icon: null,
      icon_delete: false,
      icon_base64: data.icon_base64 ?? null,
      created_at: t,
      modified_at: t,
      created_by: by.name,
      external_id: data.external_id ?? null,
      crm_account_id: data.crm_account_id ?? null,
      crm_company_id: data.crm_company_id ?? null,
      custom: data.custom ?? null,
    });
  }

  updateCompany(record: Rec, data: Rec): Rec {
    const { icon_delete: _ignored, icon: _file, ...fields } = data;
    Object.assign(record, fields, { modified_at: now() });
    if (data.icon_delete === true) Object.assign(record, { icon: null, avatar: null, logos: null });
    return record;
  }

  createMember(data: Rec): Rec {
    const t = now();
    const record: Rec = {
      first_name: '',
      last_name: '',
      name: '',
      email: data.email,
      role: null,
      account_type: 'member',
      avatar: null,
      created_at: t,
      modified_at: t,
      invited_at: t,
      status: 'active',
      external_id: null,
      last_login: null,
      chat_member_id: null,
      roles: null,
      role_ids: [],
      features: {},
      fora_id: null,
      meeting_insights: false,
      manage_chatbot: false,
      custom: null,
    };
    Object.assign(record, data);
    record.name = fullName(record);
    return this.members.add(record);
  }

  updateMember(record: Rec, data: Rec): Rec {
    Object.assign(record, data, { modified_at: now() });
    record.name = fullName(record);
    return record;
  }

  createProjectAsset(data: Rec, by: Principal): Rec {
    const t = now();
    const record: Rec = {
      name: data.name,
      description: null,
      file: null,
      file_url: null,
      file_type: data.link ? 'link' : null,
      file_size: null,
      link: null,
      link_label: null,
      content_type: null,
      content_type_name: data.content_type ?? null,
      object_id: null,
      onboarder_user: memberName(this.members.find(data.onboarder_user_id)),
      onboarder_user_id: null,
      onboardee_user: memberName(this.members.find(data.onboardee_user_id)),
      onboardee_user_id: null,
      include_in_outboard: false,
      order: 0,
      created_at: t,
      modified_at: t,
      created_by: by.name,
    };
    Object.assign(record, data);
    return this.projectAssets.add(record);
  }

  createRole(data: Rec, by: Principal): Rec {
    return this.roles.add({
      name: data.name,
      description: data.description ?? null,
      role_type: data.role_type ?? 'internal',
      created_at: now(),
      order: this.roles.items.length + 1,
      created_by: by.name,
    });
  }

  createProjectType(data: Rec): Rec {
    const t = now();
    // One default project type at a time.
    if (data.is_default === true) for (const p of this.projectTypes.items) p.is_default = false;
    return this.projectTypes.add({
      type: data.type,
      description: data.description ?? null,
      is_default: data.is_default ?? false,
      created_at: t,
      modified_at: t,
    });
  }

  /**
   * POST /api-accounts: with `regenerate_token: true` and the first_name of an
   * existing account, that account (the oldest of that name) gets a new token
   * and the old one stops working; otherwise a new account is created.
   */
  postApiAccount(data: Rec): { created: boolean; record: Rec } {
    const t = now();
    const status = (data.status as string | undefined) ?? 'active';
    if (data.regenerate_token === true) {
      const existing = this.apiAccounts.items.find((a) => a.first_name === data.first_name);
      if (existing) {
        this.tokens.delete(existing.token as string);
        Object.assign(existing, {
          token: newToken(),
          modified_at: t,
          ...(data.status !== undefined && { status, is_active: String(status === 'active') }),
        });
        this.tokens.set(existing.token as string, existing);
        return { created: false, record: existing };
      }
    }
    const record = this.apiAccounts.add({
      first_name: data.first_name,
      name: data.first_name,
      account_type: 'admin',
      is_active: String(status === 'active'),
      created_at: t,
      modified_at: t,
      invited_at: t,
      status,
      token: newToken(),
      regenerate_token: false,
    });
    this.tokens.set(record.token as string, record);
    return { created: true, record };
  }

  updateAccount(data: Rec): Rec {
    const { outboard_logo_delete, avatar_delete, ...fields } = data;
    Object.assign(this.account, fields);
    if (outboard_logo_delete === true)
      Object.assign(this.account, { outboard_logo: null, outboard_logo_img: null });
    if (avatar_delete === true) Object.assign(this.account, { avatar: null, avatar_img: null });
    return this.account;
  }

  /** Every stored record as the API returns it, keyed by the path it lives at. */
  dump(): Record<string, unknown> {
    return {
      companies: this.companies.items,
      members: this.members.items,
      'api-accounts': this.apiAccounts.items,
      roles: this.roles.items,
      'project-types': this.projectTypes.items,
      'project-assets': this.projectAssets.items,
      account: this.account,
      'onboardee-user/notifications': this.onboardeeNotifications,
      'onboarder-user/notifications': this.onboarderNotifications,
      tasks: this.tasks,
      'team-tasks': this.teamTasks,
      workflows: this.workflows,
      variables: this.variables,
      options: this.options,
    };
  }
}

function fullName(r: Rec): string {
  return `${String(r.first_name ?? '')} ${String(r.last_name ?? '')}`.trim();
}

function memberName(r: Rec | undefined): string | null {
  return r ? (r.name as string) : null;
}
