/**
 * The database: Kysely on better-sqlite3 (`sqlite:<file>`, `sqlite::memory:`) or on pg
 * (`postgres://...`), with the migrations of every module run at start-up (docs/operations.md).
 */

import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import SQLite from "better-sqlite3";
import { Kysely, type Migration, Migrator, PostgresDialect, SqliteAdapter, SqliteDialect, sql } from "kysely";
import type pg from "pg";
import { clusterMigrations } from "./cluster/storage.js";
import { runDdl } from "./ddl.js";
import { errorMessage } from "./errors.js";
import { lazyLibrary } from "./lazy.js";
import { outputQueueMigrations } from "./outputs/durable-storage.js";
import {
  createPrivateFileSync,
  type ModeWarning,
  makePrivateDirectorySync,
  warnIfSharedSync,
} from "./private-files.js";

/** The tables of the platform itself; each module adds its own with `kysely.withTables<T>()`. */
export interface PlatformTables {
  /** Secrets Vigie generates itself (the comments admin token and challenge secret), by key. */
  settings: { key: string; value: string };
}

/** The kind of database behind a URL. */
export type DatabaseDialect = "sqlite" | "postgres";

/** An open, migrated database. */
export interface Database {
  readonly kysely: Kysely<PlatformTables>;
  readonly dialect: DatabaseDialect;
  /**
   * The better-sqlite3 connection under Kysely; undefined on PostgreSQL. Only for a statement so
   * hot that it must stay prepared (Kysely's driver prepares every statement again), and only
   * inside `kysely.connection().execute()`: that holds Kysely's single connection, so no Kysely
   * transaction is open around the statement.
   */
  readonly sqlite?: SQLite.Database;
  /** The PostgreSQL URL (cluster mode opens a listening connection of its own); undefined on SQLite. */
  readonly url?: string;
  /**
   * Where Vigie keeps files beside the database (comments-admin-token): the directory of the
   * SQLite file, `./data` for PostgreSQL, a new temporary directory for in-memory SQLite.
   */
  readonly dataDirectory: string;
  /** Resolves when the database answers a trivial query; rejects otherwise. */
  ping(): Promise<void>;
  /** Closes every connection (SQLite: checkpoints the WAL). */
  close(): Promise<void>;
}

/**
 * SQLite supports DDL inside transactions; Kysely's adapter says it does not, so its migrator would
 * run SQLite migrations outside one. This adapter tells the truth so a failed migration rolls back.
 */
class TransactionalSqliteAdapter extends SqliteAdapter {
  override get supportsTransactionalDdl(): boolean {
    return true;
  }
}

class VigieSqliteDialect extends SqliteDialect {
  override createAdapter(): SqliteAdapter {
    return new TransactionalSqliteAdapter();
  }
}

/**
 * The dialect a migration runs on, from the adapter of its Kysely instance (public API), for the
 * rare statement the two databases spell differently (SQLite has no `ALTER COLUMN`).
 */
export function migrationDialect(db: Kysely<unknown>): DatabaseDialect {
  return db.getExecutor().adapter instanceof SqliteAdapter ? "sqlite" : "postgres";
}

/**
 * The `VALUES` list of a multi-row INSERT with positional parameters, `rows` groups of `columns`
 * each: `(?, ?), (?, ?)` on SQLite, `($1, $2), ($3, $4)` on PostgreSQL (whose driver numbers its
 * parameters). For statements whose text is written once per size and kept, on paths too hot for
 * Kysely's query building.
 */
export function valuesList(rows: number, columns: number, dialect: DatabaseDialect): string {
  const groups: string[] = new Array(rows);
  const values: string[] = new Array(columns);
  for (let row = 0; row < rows; row++) {
    for (let column = 0; column < columns; column++) {
      values[column] = dialect === "sqlite" ? "?" : `$${row * columns + column + 1}`;
    }
    groups[row] = `(${values.join(", ")})`;
  }
  return groups.join(", ");
}

/** Milliseconds an SQLite writer waits for a lock held by another process before failing. */
const SQLITE_BUSY_TIMEOUT_MS = 5_000;

/** The file path of a `sqlite:` URL, or `:memory:`. `sqlite:///abs` and `sqlite:rel` both work. */
export function sqlitePath(url: string): string {
  const rest = url.startsWith("sqlite://") ? url.slice("sqlite://".length) : url.slice("sqlite:".length);
  return rest === ":memory:" ? ":memory:" : rest;
}

/** The dialect of a database URL (validated by the configuration already). */
export function dialectOf(url: string): DatabaseDialect {
  return url.startsWith("sqlite:") ? "sqlite" : "postgres";
}

/**
 * The data directory and the database file, private: created 0700 and 0600 when missing (SQLite
 * gives its `-wal` and `-shm` files the mode of the database file), reported through `warn` when
 * they exist wider.
 */
function preparePrivateSqlite(path: string, dataDirectory: string, warn: ModeWarning): void {
  if (existsSync(dataDirectory)) warnIfSharedSync(dataDirectory, "data directory", warn);
  else makePrivateDirectorySync(dataDirectory);
  if (!createPrivateFileSync(path)) warnIfSharedSync(path, "database file", warn);
  for (const suffix of ["-wal", "-shm"]) warnIfSharedSync(`${path}${suffix}`, "database file", warn);
}

function openSqlite(
  url: string,
  warn: ModeWarning,
): { kysely: Kysely<PlatformTables>; connection: SQLite.Database; dataDirectory: string; temporary: boolean } {
  const path = sqlitePath(url);
  // An in-memory database keeps nothing: neither do the files beside it (a temporary directory,
  // which mkdtemp creates 0700).
  const dataDirectory = path === ":memory:" ? mkdtempSync(join(tmpdir(), "vigie-")) : dirname(resolve(path));
  if (path !== ":memory:") preparePrivateSqlite(path, dataDirectory, warn);
  const connection = new SQLite(path);
  if (path !== ":memory:") connection.pragma("journal_mode = WAL");
  // NORMAL in WAL mode: a committed transaction survives a crash of the process (kill -9); only an
  // operating-system crash or power loss can lose the last commits.
  connection.pragma("synchronous = NORMAL");
  connection.pragma(`busy_timeout = ${SQLITE_BUSY_TIMEOUT_MS}`);
  connection.pragma("foreign_keys = ON");
  return {
    kysely: new Kysely({ dialect: new VigieSqliteDialect({ database: connection }) }),
    connection,
    dataDirectory,
    temporary: path === ":memory:",
  };
}

const PG_INT8_OID = 20;

/**
 * pg, loaded on first use: a server on SQLite never loads it (start-up time, docs/benchmarks.md).
 * Loaded with `require` (a CommonJS package), as the server bundle runs no `import()` of a package
 * outside it (scripts/build-server.mjs).
 */
export const loadPg = lazyLibrary<typeof pg>("pg");

/** Opens a pool on PostgreSQL ({@link loadPg}). */
async function openPostgres(url: string, onIdleError: (error: Error) => void): Promise<Kysely<PlatformTables>> {
  const pg = loadPg();
  const pool = new pg.Pool({
    connectionString: url,
    max: 10,
    connectionTimeoutMillis: 5_000,
    // BIGINT columns hold millisecond timestamps and counters, all far below 2^53: read them as
    // numbers. Set per pool rather than globally on the pg module.
    types: {
      getTypeParser: ((oid: number, format?: "text" | "binary") =>
        oid === PG_INT8_OID ? Number : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
    },
  });
  // An idle connection that the server drops (restart, failover) is reported here and replaced;
  // without a listener pg would throw it as an uncaught exception and stop the process.
  pool.on("error", onIdleError);
  return new Kysely({ dialect: new PostgresDialect({ pool }) });
}

/** Options of {@link openDatabase}. */
export interface OpenOptions {
  /** Called when PostgreSQL drops an idle connection (it is replaced on next use). */
  readonly onIdleError?: (error: Error) => void;
  /** Reports a data directory or database file readable by other local users (once per path). */
  readonly warn?: ModeWarning;
}

/**
 * Opens the database of `url` and brings its schema up to date.
 *
 * @param url `sqlite:<file>`, `sqlite::memory:` or `postgres://...`
 * @param migrations every module's migrations by unique name (`<module>-<number>-<what>`); each
 *   runs once, inside the one transaction of the run, recorded in `vigie_migration`
 * @param options.onIdleError called when PostgreSQL drops an idle connection (it is replaced on next use)
 * @param options.warn called once per path when the data directory or an SQLite database file
 *   exists with permissions for group or others (Vigie creates them 0700 and 0600)
 * @throws Error when the database cannot be opened or a migration fails (nothing is applied then)
 */
export async function openDatabase(
  url: string,
  migrations: Readonly<Record<string, Migration>>,
  options: OpenOptions = {},
): Promise<Database> {
  const dialect = dialectOf(url);
  const warn = options.warn ?? (() => {});
  const { kysely, connection, dataDirectory, temporary } =
    dialect === "sqlite"
      ? openSqlite(url, warn)
      : {
          kysely: await openPostgres(url, options.onIdleError ?? (() => {})),
          connection: undefined,
          dataDirectory: resolve("data"),
          temporary: false,
        };
  // On PostgreSQL the directory only holds files beside the database; it is created when one is written.
  if (dialect === "postgres") warnIfSharedSync(dataDirectory, "data directory", warn);
  const close = async () => {
    await kysely.destroy();
    if (temporary) rmSync(dataDirectory, { recursive: true, force: true });
  };
  try {
    const migrator = new Migrator({
      db: kysely,
      provider: { getMigrations: async () => ({ ...migrations }) },
      migrationTableName: "vigie_migration",
      migrationLockTableName: "vigie_migration_lock",
      // Modules number their migrations independently; the order between modules is irrelevant.
      allowUnorderedMigrations: true,
    });
    const { error, results } = await migrator.migrateToLatest();
    if (error !== undefined) {
      const failed = results?.find((result) => result.status === "Error")?.migrationName;
      const cause = errorMessage(error);
      throw new Error(failed === undefined ? `migration failed: ${cause}` : `migration ${failed} failed: ${cause}`);
    }
  } catch (error) {
    await close();
    throw error;
  }
  return {
    kysely,
    dialect,
    ...(connection === undefined ? {} : { sqlite: connection }),
    ...(dialect === "postgres" ? { url } : {}),
    dataDirectory,
    ping: async () => {
      await sql`select 1`.execute(kysely);
    },
    close,
  };
}

/**
 * The platform's own migrations (the cluster's tables included, empty on SQLite; the durable
 * outputs' queue table).
 */
export const platformMigrations: Readonly<Record<string, Migration>> = {
  ...clusterMigrations,
  ...outputQueueMigrations,
  "platform-0001-settings": {
    up: (db) => runDdl(db, ["create table settings (key varchar(200) primary key, value text not null)"]),
  },
};
