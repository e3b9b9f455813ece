#!/usr/bin/env node
/**
 * The `crm-sync` command: a thin layer over the library. Each command lives in
 * src/cli/<command>.ts and only parses its arguments, calls the library and
 * prints. Errors are one clear line (the stack with --verbose).
 */
import { Command, CommanderError } from 'commander';
import { reportFatal } from './cli/output.js';
import { registerRunCommands } from './cli/run.js';
import { registerSandboxCommand } from './cli/sandbox.js';
import { registerSchedulerCommand } from './cli/scheduler.js';
import { registerWorkerCommands } from './cli/worker.js';

export function buildProgram(): Command {
  const program = new Command('crm-sync')
    .description('Keeps a customer-onboarding platform in step with a CRM.')
    .option('--verbose', 'print stack traces with errors')
    .showHelpAfterError()
    .exitOverride();
  // Commands register themselves here, one module each under src/cli/.
  registerRunCommands(program);
  registerWorkerCommands(program);
  registerSchedulerCommand(program);
  registerSandboxCommand(program);
  return program;
}

async function main(argv: string[]): Promise<void> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      process.exitCode = err.exitCode;
      return;
    }
    reportFatal(err, argv.includes('--verbose'));
  }
}

await main(process.argv);
