/**
 * `crm-sync audit ENTITY [--json] [--created-by NAME]`: lists the platform and
 * reports records that share an identity (`external_id`, a CRM id, a
 * member's e-mail) and records we created that our state lost
 * (src/sync/audit.ts says exactly what each means). It writes no sync state
 * (its requests only book their turns in the shared pacer). Exit code 0
 * when it found no problem, 6 when it did: the check to run after Redis lost
 * writes (docs/OPERATIONS.md, "Persistence").
 */
import { Argument, type Command } from 'commander';
import type { AuditReport } from '../sync/audit.js';
import { ENTITIES, type Entity } from '../sync/identity.js';
import { ExitCode } from './output.js';
import { formatTable, type Column } from './table.js';

interface AuditFlags {
  json?: boolean;
  createdBy?: string;
}

export const AUDIT_HELP = `
What it reports:
  shared     an identity carried by two or more platform records. A shared
             external_id is a problem (our jobs write one record each); a
             CRM id or e-mail shared by records with distinct external_ids
             is two sources' records, listed but not a problem.
  lost       a record our state does not track although our state gives one
             of its identities to another record (a create sent twice after
             our state lost the first), or, with --created-by, a record our
             API account created that our state does not know: a problem.
  pending    a record carrying a create of unknown outcome that its run
             verifies: not a problem.
  untracked  a record none of whose identities our state knows: created
             elsewhere, or by us with every trace lost; cannot be told
             apart, not a problem.
Exit code 0 when no problem was found, 6 when one was. Writes nothing.`;

export function registerAuditCommand(program: Command): void {
  program
    .command('audit')
    .description(
      'list the platform and report records sharing an identity, and records our state lost',
    )
    .addArgument(
      new Argument('<entity>', 'what to audit').choices(ENTITIES as readonly string[] as string[]),
    )
    .option('--json', 'print the report as one JSON object')
    .option(
      '--created-by <name>',
      "our API account's name: untracked companies it created count as lost (members carry no creator)",
    )
    .addHelpText('after', AUDIT_HELP)
    .action(async (entity: Entity, flags: AuditFlags) => {
      const { cliRuntime, openProducer } = await import('./runtime.js');
      const { pacedClient } = await import('./paced-client.js');
      const { requirePlatform } = await import('../config.js');
      const { auditEntity } = await import('../engine/audit.js');
      const { config, logger } = cliRuntime();
      requirePlatform(config);
      const producer = await openProducer(config);
      const { client, close: closeClient } = pacedClient(config, producer, logger);
      try {
        const report = await auditEntity(
          {
            store: producer.store,
            client,
            logger,
            rateLimit: config.platform.rateLimit,
            retry: config.retry,
          },
          entity,
          flags.createdBy !== undefined ? { createdBy: flags.createdBy } : {},
        );
        process.stdout.write(
          flags.json ? `${JSON.stringify(report)}\n` : `${formatAudit(report)}\n`,
        );
        process.exitCode = report.problems > 0 ? ExitCode.problems : ExitCode.ok;
      } finally {
        closeClient();
        await producer.close();
      }
    });
}

/** Untracked records of no problem kind shown in the table (--json lists all). */
const UNTRACKED_SHOWN = 20;

const SHARED_COLUMNS: Column[] = [
  { header: 'FIELD' },
  { header: 'VALUE', maxWidth: 48 },
  { header: 'RECORDS', maxWidth: 60 },
  { header: 'IN STATE', align: 'right' },
  { header: 'PROBLEM' },
];

const UNTRACKED_COLUMNS: Column[] = [
  { header: 'RECORD', align: 'right' },
  { header: 'KIND' },
  { header: 'IDENTITY', maxWidth: 48 },
  { header: 'IN STATE', align: 'right' },
  { header: 'REASON', maxWidth: 200 },
];

/** The report for people: a summary line, then a table per finding kind. */
export function formatAudit(r: AuditReport): string {
  const count = (kind: string) => r.untracked.filter((u) => u.kind === kind).length;
  const lines = [
    `audit of ${r.entity}: listed ${r.listed}, tracked by our state ${r.tracked}; ` +
      `shared identities ${r.shared.length}, lost ${count('lost')}, pending ${count('pending')}, ` +
      `untracked ${count('untracked')}` +
      (r.withoutIdentity > 0 ? `, without identity ${r.withoutIdentity}` : '') +
      ` — ${r.problems === 0 ? 'no problems' : `${r.problems} problem(s)`}`,
  ];
  if (r.shared.length > 0) {
    lines.push(
      '',
      formatTable(
        SHARED_COLUMNS,
        r.shared.map((s) => [
          s.field,
          s.value,
          s.platformIds.join(', '),
          s.stateId === undefined ? '-' : String(s.stateId),
          s.problem ? 'yes' : 'no (distinct external_ids)',
        ]),
      ),
    );
  }
  const problemKinds = r.untracked.filter((u) => u.kind !== 'untracked');
  const others = r.untracked.filter((u) => u.kind === 'untracked');
  const shown = [...problemKinds, ...others.slice(0, UNTRACKED_SHOWN)];
  if (shown.length > 0) {
    lines.push(
      '',
      formatTable(
        UNTRACKED_COLUMNS,
        shown.map((u) => [
          String(u.platformId),
          u.kind,
          u.key ?? '',
          u.stateId === undefined ? '-' : String(u.stateId),
          u.reason,
        ]),
      ),
    );
  }
  if (others.length > UNTRACKED_SHOWN) {
    lines.push(`… ${others.length - UNTRACKED_SHOWN} more untracked records (--json lists all)`);
  }
  return lines.join('\n');
}
