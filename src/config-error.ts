/** Invalid settings, every problem listed at once (thrown at start-up). */
export class ConfigError extends Error {
  readonly code = 'crm-sync.config';
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  ${problems.join('\n  ')}`);
    this.name = 'ConfigError';
  }
}
