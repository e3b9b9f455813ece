/**
 * Zod schemas for every resource of the platform API (docs/PLATFORM-API.md),
 * one field table each; schema-fields.ts says what a table becomes (request
 * fields, response fields, optional, nullable, safe integers).
 */
import { z } from 'zod';
import { bool, dateTime, int, json, opt, resource, str } from './schema-fields.js';

// Company (also customers)
const company = resource(
  {
    name: str,
    website: str,
    uuid: str,
    icon: str,
    icon_delete: bool,
    icon_base64: json,
    external_id: str,
    crm_account_id: str,
    crm_company_id: int,
    custom: str,
  },
  {
    id: int,
    avatar: str,
    logos: str,
    created_at: dateTime,
    modified_at: dateTime,
    created_by: str,
  },
);
export const CompanyRequest = company.request;
export const Company = company.response;

// Company list envelope
export const CompanyPage = z.looseObject({
  count: int,
  next: z.string().nullable(),
  previous: z.string().nullable(),
  results: z.array(Company),
});

// Member
const member = resource(
  {
    first_name: str,
    last_name: str,
    email: z.email(),
    role: str,
    account_type: str,
    external_id: str,
    chat_member_id: str,
    roles: str,
    role_ids: z.array(str),
    features: json,
    meeting_insights: bool,
    manage_chatbot: bool,
    custom: str,
  },
  {
    id: int,
    name: str,
    avatar: str,
    created_at: dateTime,
    modified_at: dateTime,
    invited_at: dateTime,
    status: str,
    last_login: str,
    fora_id: str,
  },
);
export const MemberRequest = member.request;
// A stored e-mail that is not RFC-valid must not make a whole listing fail.
export const Member = member.response.extend({ email: opt(str) });

// Project asset
const projectAsset = resource(
  {
    name: str,
    description: str,
    file: str,
    link: str,
    link_label: str,
    content_type: str,
    object_id: int,
    onboarder_user_id: int,
    onboardee_user_id: int,
    include_in_outboard: bool,
    order: int,
  },
  {
    id: int,
    file_url: str,
    file_type: str,
    file_size: int,
    content_type_name: str,
    onboarder_user: str,
    onboardee_user: str,
    created_at: dateTime,
    modified_at: dateTime,
    created_by: str,
  },
);
export const ProjectAssetRequest = projectAsset.request;
export const ProjectAsset = projectAsset.response;

// Account
const account = resource(
  {
    company_name: str,
    slug: str,
    domain: str,
    is_active: bool,
    settings: str,
    outboard_logo_img: str,
    icon: str,
    avatar_img: str,
    outboard_logo_delete: bool,
    avatar_delete: bool,
    is_ai_enabled: bool,
    auto_update_enabled: bool,
    stalled_status_threshold: int,
    outboard_settings: str,
  },
  {
    id: int,
    uuid: str,
    outboard_logo: str,
    avatar: str,
    logos: str,
    default_api_key: str,
    created_at: dateTime,
    first_roadmap_created_at: str,
    address: str,
    has_variables: str,
    has_tasks: str,
    has_project_templates: str,
    has_custom_sending_domain: str,
    has_chat: str,
    payment_subscription_id: str,
    payment_customer_id: str,
    trial_end_date: str,
    is_trialing: str,
    terms_acceptance: str,
    internal: bool,
  },
);
export const AccountRequest = account.request;
export const Account = account.response;

// Team task (response only)
export const TeamTask = resource(
  {},
  {
    id: int,
    name: str,
    description_preview: str,
    description: str,
    due_date: str,
    is_internal: bool,
    is_optional: bool,
    is_section: bool,
    is_hidden: bool,
    time_tracking_enabled: bool,
    is_ttv: bool,
    created_at: dateTime,
    modified_at: dateTime,
    completed_at: dateTime,
    map_id: int,
    map_name: str,
    map_status: str,
    map_expected_launch_date: dateTime,
    onboardee_company_name: str,
    onboardee_company_avatar: str,
    roadmap_id: str,
    roadmap_status: str,
    status: str,
    onboarder_user: str,
    onboardee_user: str,
    onboarder_user_id: int,
    onboardee_user_id: int,
    time_spent: int,
    time_spent_raw: int,
    time_spent_unit: str,
    external_id: str,
  },
).response;

// Task (response only)
export const Task = resource(
  {},
  {
    id: int,
    name: str,
    description: str,
    description_preview: str,
    order: int,
    is_section: bool,
    is_optional: bool,
    is_internal: bool,
    assign_to_owner: bool,
    due_date_enabled: bool,
    time_tracking_enabled: bool,
    is_billable: bool,
    is_ttv: bool,
    update_tasks: bool,
    update_tasks_notify: bool,
    client_visibility: str,
    due_date_type: str,
    due_date_days: int,
    options_advanced: str,
    options: str,
    forms: str,
    created_at: dateTime,
    modified_at: dateTime,
    move_to: int,
    estimated_time: int,
    estimated_time_raw: int,
    estimated_time_unit: str,
    assign_to_role: str,
    assign_to_role_id: str,
    dependencies: z.array(str),
    category: str,
    embedded: str,
    embedded_url: str,
    embedded_panel_title: str,
    embedded_url_merge_tag: str,
    embedded_option: str,
    map_types: str,
    map_types_ids: str,
    due_date_days_after_specific_task_completed_task_id: int,
    due_date_days_after_specific_task_completed_task: str,
    due_date_days_after_specific_task_due_task_id: int,
    due_date_days_after_specific_task_due_task: str,
  },
).response;

// Workflow (response only)
export const Workflow = resource(
  {},
  {
    id: int,
    name: str,
    workflow_actions: str,
    workflow_actions_display: str,
    trigger_display: str,
    internal_description: str,
    created_by: str,
    button_color: str,
    button_title: str,
    filters_rql: str,
    workflow_events: str,
    schedule_time: str,
    workflow_type: str,
    trigger: str,
    created_at: dateTime,
    modified_at: dateTime,
    button_placement: str,
    is_enabled: bool,
    is_hidden: bool,
    filters: json,
    schedule_type: str,
    schedule_day: int,
  },
).response;

// Role
const role = resource(
  { name: str, description: str, role_type: str },
  { id: int, created_at: dateTime, order: int, created_by: str },
);
export const RoleRequest = role.request;
export const Role = role.response;

// Variable (response only)
export const Variable = resource(
  {},
  {
    id: int,
    name: str,
    options: str,
    message: str,
    map_types: str,
    type: str,
    tasks: int,
    created_at: dateTime,
    modified_at: dateTime,
    is_required: bool,
    order: int,
  },
).response;

// Option (response only)
export const Option = resource(
  {},
  { id: int, name: str, variable: str, verbose_name: str },
).response;

// Project type
const projectType = resource(
  { type: str, description: str, is_default: bool },
  { id: int, created_at: dateTime, modified_at: dateTime },
);
export const ProjectTypeRequest = projectType.request;
export const ProjectType = projectType.response;

// API account
const apiAccount = resource(
  { first_name: str, status: str, regenerate_token: bool },
  {
    id: int,
    name: str,
    account_type: str,
    is_active: str,
    created_at: dateTime,
    modified_at: dateTime,
    invited_at: dateTime,
    token: str,
  },
);
export const ApiAccountRequest = apiAccount.request;
export const ApiAccount = apiAccount.response;

// Notification preferences (onboardee and onboarder users)
const onboardee = resource(
  {
    task_due_date_changed: bool,
    task_due_date_reminders: bool,
    task_overdue: bool,
    discussion_mentions: bool,
    discussion_daily_digest: bool,
    task_summary_onboardee: bool,
  },
  {},
);
export const OnboardeeNotificationsRequest = onboardee.request;
export const OnboardeeNotifications = onboardee.response;

const onboarder = resource(
  {
    roadmap_status_updates: bool,
    task_due_date_changed: bool,
    task_due_date_reminders: bool,
    task_overdue: bool,
    discussion_mentions: bool,
    discussion_daily_digest: bool,
    task_summary: bool,
  },
  {},
);
export const OnboarderNotificationsRequest = onboarder.request;
export const OnboarderNotifications = onboarder.response;

// Comment stream credential
export const CommentStreamCredential = z.looseObject({ stream_token: opt(str) });

/** The records the API gives only as "JSON object" or an empty object. */
export const JsonObject = z.looseObject({});

export type CompanyRequest = z.infer<typeof CompanyRequest>;
export type Company = z.infer<typeof Company>;
export type CompanyPage = z.infer<typeof CompanyPage>;
export type MemberRequest = z.infer<typeof MemberRequest>;
export type Member = z.infer<typeof Member>;
export type ProjectAssetRequest = z.infer<typeof ProjectAssetRequest>;
export type ProjectAsset = z.infer<typeof ProjectAsset>;
export type AccountRequest = z.infer<typeof AccountRequest>;
export type Account = z.infer<typeof Account>;
export type TeamTask = z.infer<typeof TeamTask>;
export type Task = z.infer<typeof Task>;
export type Workflow = z.infer<typeof Workflow>;
export type RoleRequest = z.infer<typeof RoleRequest>;
export type Role = z.infer<typeof Role>;
export type Variable = z.infer<typeof Variable>;
export type Option = z.infer<typeof Option>;
export type ProjectTypeRequest = z.infer<typeof ProjectTypeRequest>;
export type ProjectType = z.infer<typeof ProjectType>;
export type ApiAccountRequest = z.infer<typeof ApiAccountRequest>;
export type ApiAccount = z.infer<typeof ApiAccount>;
export type OnboardeeNotificationsRequest = z.infer<typeof OnboardeeNotificationsRequest>;
export type OnboardeeNotifications = z.infer<typeof OnboardeeNotifications>;
export type OnboarderNotificationsRequest = z.infer<typeof OnboarderNotificationsRequest>;
export type OnboarderNotifications = z.infer<typeof OnboarderNotifications>;
export type CommentStreamCredential = z.infer<typeof CommentStreamCredential>;
export type JsonObject = z.infer<typeof JsonObject>;
