/**
 * Copies a stopped API's SQLite database into an empty PostgreSQL database, keeping every id, token hash,
 * secret and timestamp (issue 23): `npm run db:copy -- --from data/slb.db --to postgres://user@host/slb`.
 * Prints rows per table and a count check; exits 1 on any refusal or failure, with nothing committed.
 */
import { parseArgs } from 'node:util';
import { CopyError, copySqliteToPg, describeError, redactUrl } from '../pg/copy.js';

const USAGE = `usage: npm run db:copy -- --from <sqlite file> --to <postgres://…>

  --from   the API's SQLite file (SLB_DB_PATH); stop the API first: it locks the file while it runs
  --to     an empty PostgreSQL database; default: SLB_DATABASE_URL. It is migrated, then filled in one
           transaction: a refusal or failure leaves it as it was (apart from the migrations)`;

function fail(message: string): never {
  process.stderr.write(`db:copy: ${message}\n`);
  process.exit(1);
}

async function main(): Promise<void> {
  let values: { from?: string; to?: string; help?: boolean };
  try {
    ({ values } = parseArgs({
      options: { from: { type: 'string' }, to: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    }));
  } catch (error) {
    fail(`${describeError(error)}\n${USAGE}`);
  }
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const to = values.to ?? process.env.SLB_DATABASE_URL;
  if (!values.from || !to) fail(`--from and --to are required\n${USAGE}`);
  if (!/^postgres(ql)?:\/\//.test(to)) fail('--to must be a postgres:// or postgresql:// connection string');
  process.stdout.write(`copying ${values.from} into ${redactUrl(to)}\n`);
  try {
    const result = await copySqliteToPg({
      from: values.from,
      to,
      onMigrated: (applied) => process.stdout.write(`target migrated (${applied} migration(s) applied)\n`),
      onProgress: ({ table, rows, ms }) =>
        process.stdout.write(`  ${table.padEnd(24)} ${String(rows).padStart(9)} rows  ${ms.toFixed(0)} ms\n`),
    });
    process.stdout.write(
      `count check: ${result.counts.length} tables, ${result.rows} rows, equal in SQLite and PostgreSQL\n` +
        `copied in ${(result.ms / 1000).toFixed(2)} s (${Math.round(result.rows / (result.ms / 1000))} rows/s), committed\n`,
    );
  } catch (error) {
    fail(error instanceof CopyError ? error.message : `failed, nothing committed: ${describeError(error)}`);
  }
}

await main();
