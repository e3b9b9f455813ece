/**
 * The writable fields of every resource, as DRF serializer specs, and the
 * response-only fields with their types (for OPTIONS). The API documents no
 * required fields or lengths; our readings, described in docs/SANDBOX.md,
 * follow what the Django models evidently are.
 */
import type { FieldSpecs } from './fields.js';

const text = { kind: 'string', nullable: true, maxLength: null } as const;
const optionalString = (maxLength = 255) =>
  ({ kind: 'string', nullable: true, maxLength }) as const;
const flag = { kind: 'boolean' } as const;
const file = { kind: 'file' } as const;

export const companyFields: FieldSpecs = {
  name: { kind: 'string', required: true, maxLength: 255 },
  website: optionalString(),
  uuid: optionalString(),
  icon: file,
  icon_delete: flag,
  icon_base64: { kind: 'dict', nullable: true },
  external_id: optionalString(),
  crm_account_id: optionalString(),
  // A BigIntegerField in reality; bounded here to what JSON numbers carry exactly.
  crm_company_id: {
    kind: 'integer',
    nullable: true,
    min: -Number.MAX_SAFE_INTEGER,
    max: Number.MAX_SAFE_INTEGER,
  },
  custom: text,
};

export const memberFields: FieldSpecs = {
  first_name: { kind: 'string', maxLength: 150 },
  last_name: { kind: 'string', maxLength: 150 },
  email: { kind: 'email', required: true },
  role: optionalString(),
  account_type: { kind: 'string', maxLength: 50 },
  external_id: optionalString(),
  chat_member_id: optionalString(),
  roles: text,
  role_ids: { kind: 'string-list' },
  features: { kind: 'dict' },
  meeting_insights: flag,
  manage_chatbot: flag,
  custom: text,
};

export const projectAssetFields: FieldSpecs = {
  name: { kind: 'string', required: true, maxLength: 255 },
  description: text,
  file,
  link: { kind: 'url', nullable: true },
  link_label: optionalString(),
  content_type: optionalString(100),
  object_id: { kind: 'integer', nullable: true, min: 0 },
  onboarder_user_id: { kind: 'integer', nullable: true, min: 0 },
  onboardee_user_id: { kind: 'integer', nullable: true, min: 0 },
  include_in_outboard: flag,
  order: { kind: 'integer', min: 0 },
};

export const accountFields: FieldSpecs = {
  company_name: { kind: 'string', maxLength: 255 },
  slug: { kind: 'slug', maxLength: 50 },
  domain: optionalString(),
  is_active: flag,
  settings: text,
  outboard_logo_img: file,
  icon: file,
  avatar_img: file,
  outboard_logo_delete: flag,
  avatar_delete: flag,
  is_ai_enabled: flag,
  auto_update_enabled: flag,
  stalled_status_threshold: { kind: 'integer', min: 0 },
  outboard_settings: text,
};

export const roleFields: FieldSpecs = {
  name: { kind: 'string', required: true, maxLength: 255 },
  description: text,
  role_type: { kind: 'string', maxLength: 50 },
};

export const projectTypeFields: FieldSpecs = {
  type: { kind: 'string', required: true, maxLength: 255 },
  description: text,
  is_default: flag,
};

export const apiAccountFields: FieldSpecs = {
  first_name: { kind: 'string', required: true, maxLength: 150 },
  status: { kind: 'string', maxLength: 50 },
  regenerate_token: flag,
};

export const onboardeeNotificationFields: FieldSpecs = {
  task_due_date_changed: flag,
  task_due_date_reminders: flag,
  task_overdue: flag,
  discussion_mentions: flag,
  discussion_daily_digest: flag,
  task_summary_onboardee: flag,
};

export const onboarderNotificationFields: FieldSpecs = {
  roadmap_status_updates: flag,
  task_due_date_changed: flag,
  task_due_date_reminders: flag,
  task_overdue: flag,
  discussion_mentions: flag,
  discussion_daily_digest: flag,
  task_summary: flag,
};

/** Response-only fields and their DRF metadata types, for OPTIONS answers. */
export const readOnlyFields = {
  company: {
    id: 'integer',
    avatar: 'string',
    logos: 'string',
    created_at: 'datetime',
    modified_at: 'datetime',
    created_by: 'string',
  },
  member: {
    id: 'integer',
    name: 'string',
    avatar: 'string',
    created_at: 'datetime',
    modified_at: 'datetime',
    invited_at: 'datetime',
    status: 'choice',
    last_login: 'string',
    fora_id: 'string',
  },
  projectAsset: {
    id: 'integer',
    file_url: 'file upload',
    file_type: 'string',
    file_size: 'integer',
    content_type_name: 'string',
    onboarder_user: 'string',
    onboardee_user: 'string',
    created_at: 'datetime',
    modified_at: 'datetime',
    created_by: 'string',
  },
  role: { id: 'integer', created_at: 'datetime', order: 'integer', created_by: 'string' },
  projectType: { id: 'integer', created_at: 'datetime', modified_at: 'datetime' },
  apiAccount: {
    id: 'integer',
    name: 'string',
    account_type: 'choice',
    is_active: 'string',
    created_at: 'datetime',
    modified_at: 'datetime',
    invited_at: 'datetime',
    token: 'string',
  },
  account: {
    id: 'integer',
    uuid: 'string',
    outboard_logo: 'string',
    avatar: 'string',
    logos: 'string',
    default_api_key: 'string',
    created_at: 'datetime',
    first_roadmap_created_at: 'string',
    address: 'string',
    has_variables: 'string',
    has_tasks: 'string',
    has_project_templates: 'string',
    has_custom_sending_domain: 'string',
    has_chat: 'string',
    payment_subscription_id: 'string',
    payment_customer_id: 'string',
    trial_end_date: 'date',
    is_trialing: 'string',
    terms_acceptance: 'string',
    internal: 'boolean',
  },
  none: {},
} as const satisfies Record<string, Record<string, string>>;

export type ReadOnlySet = keyof typeof readOnlyFields;
