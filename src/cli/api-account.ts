/**
 * `crm-sync api-account create NAME`: creates a dedicated API account through
 * POST /api-accounts with the current key and prints the new account's token
 * once, on stdout only. The token is registered as a secret first, so no log
 * line or error can carry it; it is never stored.
 */
import type { Command } from 'commander';

export function registerApiAccountCommand(program: Command): void {
  const group = program
    .command('api-account')
    .description('manage the platform API accounts crm-sync uses');
  group
    .command('create')
    .description(
      'create a dedicated API account (POST /api-accounts, status active) and print its token once',
    )
    .argument('<name>', "the account's first_name, e.g. crm-sync-production")
    .option('--json', 'print {id, name, status, token} as one JSON object')
    .action(async (name: string, flags: { json?: boolean }) => {
      const { cliRuntime } = await import('./runtime.js');
      const { requirePlatform } = await import('../config.js');
      const { registerSecret } = await import('../log.js');
      const { PlatformClient } = await import('../platform/client.js');
      const { PlatformError } = await import('../platform/errors.js');
      const { config, logger } = cliRuntime();
      const platform = requirePlatform(config);
      const client = new PlatformClient({
        ...platform,
        timeoutMs: config.platform.timeoutMs,
        logger,
      });
      try {
        // POST is not idempotent: no retry, or a second account could be made.
        const account = await client.createApiAccount({ first_name: name, status: 'active' });
        const token = account.token;
        if (!token) throw new Error('the platform created the account but returned no token');
        registerSecret(token);
        const shown = {
          id: account.id ?? null,
          name: account.name ?? account.first_name ?? name,
          status: account.status ?? null,
          token,
        };
        if (flags.json) process.stdout.write(`${JSON.stringify(shown)}\n`);
        else {
          process.stderr.write(`created API account ${shown.id ?? ''} "${shown.name}"\n`);
          process.stdout.write(`${token}\n`);
        }
        process.stderr.write(
          'store this token as a secret now (e.g. the file PLATFORM_API_KEY_FILE names); it is not shown again\n',
        );
      } catch (err) {
        if (err instanceof PlatformError && err.mayHaveApplied) {
          throw new Error(
            `${err.message}; the account may have been created without its token reaching us: check the platform's API accounts before trying again`,
            { cause: err },
          );
        }
        throw err;
      } finally {
        client.close();
      }
    });
}
