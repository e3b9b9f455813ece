/**
 * Seeded read-only data: a few realistic tasks, team tasks, workflows,
 * variables and options, carrying every documented field of each.
 */
type Rec = Record<string, unknown>;

const T0 = '2026-01-05T09:00:00.000Z';
const T1 = '2026-01-12T14:30:00.000Z';

function task(id: number, name: string, order: number, extra: Rec = {}): Rec {
  return {
    id,
    name,
    description: `<p>${name}.</p>`,
    description_preview: `${name}.`,
    order,
    is_section: false,
    is_optional: false,
    is_internal: false,
    assign_to_owner: true,
    due_date_enabled: true,
    time_tracking_enabled: false,
    is_billable: false,
    is_ttv: false,
    update_tasks: false,
    update_tasks_notify: false,
    client_visibility: 'show_when_map_created',
    due_date_type: 'before_target_launch_date',
    due_date_days: 7,
    options_advanced: null,
    options: null,
    forms: null,
    created_at: T0,
    modified_at: T1,
    move_to: null,
    estimated_time: 30,
    estimated_time_raw: 30,
    estimated_time_unit: 'minutes',
    assign_to_role: null,
    assign_to_role_id: null,
    dependencies: [],
    category: 'task',
    embedded: null,
    embedded_url: null,
    embedded_panel_title: null,
    embedded_url_merge_tag: null,
    embedded_option: 'url',
    map_types: null,
    map_types_ids: null,
    due_date_days_after_specific_task_completed_task_id: null,
    due_date_days_after_specific_task_completed_task: null,
    due_date_days_after_specific_task_due_task_id: null,
    due_date_days_after_specific_task_due_task: null,
    ...extra,
  };
}

function teamTask(id: number, name: string, status: string, extra: Rec = {}): Rec {
  return {
    id,
    name,
    description_preview: `${name}.`,
    description: `<p>${name}.</p>`,
    due_date: '2026-02-02',
    is_internal: false,
    is_optional: false,
    is_section: false,
    is_hidden: false,
    time_tracking_enabled: true,
    is_ttv: false,
    created_at: T0,
    modified_at: T1,
    completed_at: null,
    map_id: 301,
    map_name: 'Acme Corp onboarding',
    map_status: 'in_progress',
    map_expected_launch_date: '2026-03-01T00:00:00.000Z',
    onboardee_company_name: 'Acme Corp',
    onboardee_company_avatar: null,
    roadmap_id: 'c0ffee00-0000-4000-8000-000000000301',
    roadmap_status: 'on_track',
    status,
    onboarder_user: 'Olivia Owner',
    onboardee_user: 'Evan Client',
    onboarder_user_id: 11,
    onboardee_user_id: 12,
    time_spent: 45,
    time_spent_raw: 45,
    time_spent_unit: 'minutes',
    external_id: null,
    ...extra,
  };
}

function workflow(id: number, name: string, extra: Rec): Rec {
  return {
    id,
    name,
    workflow_actions: '[]',
    workflow_actions_display: '',
    trigger_display: '',
    internal_description: '',
    created_by: 'Olivia Owner',
    button_color: '#2563eb',
    button_title: '',
    filters_rql: '',
    workflow_events: '[]',
    schedule_time: null,
    workflow_type: 'quick_action',
    trigger: 'map-created',
    created_at: T0,
    modified_at: T1,
    button_placement: 'map',
    is_enabled: true,
    is_hidden: false,
    filters: {},
    schedule_type: null,
    schedule_day: null,
    ...extra,
  };
}

function variable(id: number, name: string, type: string, order: number, extra: Rec = {}): Rec {
  return {
    id,
    name,
    options: null,
    message: `Please provide the ${name.toLowerCase()}.`,
    map_types: null,
    type,
    tasks: 0,
    created_at: T0,
    modified_at: T1,
    is_required: false,
    order,
    ...extra,
  };
}

export function seededTasks(): Rec[] {
  return [
    task(1, 'Kick-off call', 1),
    task(2, 'Share brand assets', 2, { due_date_days: 14 }),
    task(3, 'Go-live review', 3, { is_ttv: true, is_internal: true, dependencies: ['1', '2'] }),
  ];
}

export function seededTeamTasks(): Rec[] {
  return [
    teamTask(101, 'Kick-off call', 'completed', { completed_at: '2026-01-20T10:00:00.000Z' }),
    teamTask(102, 'Share brand assets', 'open'),
    teamTask(103, 'Go-live review', 'open', {
      is_internal: true,
      time_spent: 0,
      time_spent_raw: 0,
    }),
  ];
}

export function seededWorkflows(): Rec[] {
  return [
    workflow(201, 'Notify CSM on new map', {
      trigger_display: 'Map created',
      workflow_actions_display: 'Send e-mail to owner',
    }),
    workflow(202, 'Weekly status digest', {
      workflow_type: 'scheduled',
      trigger: 'schedule',
      trigger_display: 'Every Monday',
      schedule_type: 'weekly',
      schedule_day: 1,
      schedule_time: '09:00',
    }),
  ];
}

export function seededVariables(): Rec[] {
  return [
    variable(401, 'Seat count', 'number', 1, { is_required: true, tasks: 1 }),
    variable(402, 'Region', 'select', 2, { options: 'EU, US, APAC' }),
  ];
}

export function seededOptions(): Rec[] {
  return [
    { id: 501, name: 'eu', variable: 'Region', verbose_name: 'EU' },
    { id: 502, name: 'us', variable: 'Region', verbose_name: 'US' },
    { id: 503, name: 'apac', variable: 'Region', verbose_name: 'APAC' },
  ];
}
