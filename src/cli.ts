#!/usr/bin/env node
/**
 * The `crm-sync` command: a thin layer over the library. Each command lives in
 * src/cli/<command>.ts and only parses its arguments, calls the library and
 * prints; it loads the library in its action, so `--help` and a usage error
 * load none of it. Errors are one clear line (the stack with --verbose).
 */
import { Command, CommanderError } from 'commander';
import { registerApiAccountCommand } from './cli/api-account.js';
import { registerAuditCommand } from './cli/audit.js';
import { registerCancelCommand } from './cli/cancel.js';
import { registerFailuresCommand } from './cli/failures.js';
import { registerMigrateCommand } from './cli/migrate.js';
import { EXIT_CODES_HELP, ExitCode, reportFatal } from './cli/output.js';
import { registerRetryCommand } from './cli/retry.js';
import { registerRunCommands } from './cli/run.js';
import { registerRunsCommand } from './cli/runs.js';
import { registerSandboxCommand } from './cli/sandbox.js';
import { registerScheduleCommands } from './cli/schedule.js';
import { registerSchedulerCommand } from './cli/scheduler.js';
import { registerValidateCommand } from './cli/validate.js';
import { registerWorkerCommands } from './cli/worker.js';

export function buildProgram(): Command {
  const program = new Command('crm-sync')
    .description('Keeps a customer-onboarding platform in step with a CRM.')
    .option('--verbose', 'print stack traces with errors')
    .showHelpAfterError('(crm-sync COMMAND --help lists its options)')
    .addHelpText('after', EXIT_CODES_HELP)
    .exitOverride();
  // Commands register themselves here, one module each under src/cli/.
  registerRunCommands(program);
  registerRunsCommand(program);
  registerFailuresCommand(program);
  registerRetryCommand(program);
  registerCancelCommand(program);
  registerValidateCommand(program);
  registerApiAccountCommand(program);
  registerAuditCommand(program);
  registerMigrateCommand(program);
  registerWorkerCommands(program);
  registerSchedulerCommand(program);
  registerScheduleCommands(program);
  registerSandboxCommand(program);
  return program;
}

async function main(argv: string[]): Promise<void> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version exit 0; every other parse error is a usage error.
      process.exitCode = err.exitCode === 0 ? ExitCode.ok : ExitCode.usage;
      return;
    }
    await reportFatal(err, argv.includes('--verbose'));
  }
}

await main(process.argv);
