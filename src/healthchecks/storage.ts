/**
 * The healthchecks module's storage (healthchecks.md §7): its table, its migrations and every SQL
 * statement of the module. One row per check created through the API, holding its definition as
 * JSON, restored at start-up; configuration-file checks are never stored. Column types mean the
 * same on SQLite and PostgreSQL.
 */
import type { Kysely, Migration } from "kysely";
import type { Database, PlatformTables } from "../platform/database.js";
import { type Definition, toJson } from "./definition.js";

/** The module's table. Times are milliseconds since the epoch. */
export type HealthcheckTables = {
  healthcheck_definition: {
    name: string;
    kind: string;
    /** {@link toJson} of the definition, as JSON text. */
    definition: string;
    created_at: number;
    updated_at: number;
  };
};

/** Migrations by name, `healthchecks-<number>-<what>`. */
export const healthcheckMigrations: Readonly<Record<string, Migration>> = {
  "healthchecks-0001-definitions": {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createTable("healthcheck_definition")
        // 255 characters at most (healthchecks.md §1); varchar counts characters on PostgreSQL.
        .addColumn("name", "varchar(255)", (column) => column.primaryKey())
        .addColumn("kind", "varchar(16)", (column) => column.notNull())
        // The definition as the API returns it, without `source`, as JSON text.
        .addColumn("definition", "text", (column) => column.notNull())
        .addColumn("created_at", "bigint", (column) => column.notNull())
        .addColumn("updated_at", "bigint", (column) => column.notNull())
        .execute();
    },
  },
};

type Tables = PlatformTables & HealthcheckTables;

/** A stored definition, still to be validated by the caller (rules may have changed since). */
export interface StoredDefinition {
  readonly name: string;
  readonly kind: string;
  /** The parsed JSON. */
  readonly definition: unknown;
}

// Rows per INSERT or names per IN list: well below the bind-parameter limits of SQLite (32766) and
// PostgreSQL (65535) with 5 columns a row.
const CHUNK = 500;

function chunks<T>(items: readonly T[]): T[][] {
  const result: T[][] = [];
  for (let index = 0; index < items.length; index += CHUNK) result.push(items.slice(index, index + CHUNK));
  return result;
}

function row(definition: Definition, now: number) {
  return {
    name: definition.name,
    kind: definition.kind,
    definition: JSON.stringify(toJson(definition)),
    created_at: now,
    updated_at: now,
  };
}

async function upsert(db: Kysely<Tables>, definitions: readonly Definition[]): Promise<void> {
  const now = Date.now();
  for (const part of chunks(definitions)) {
    await db
      .insertInto("healthcheck_definition")
      .values(part.map((definition) => row(definition, now)))
      .onConflict((conflict) =>
        conflict.column("name").doUpdateSet((update) => ({
          kind: update.ref("excluded.kind"),
          definition: update.ref("excluded.definition"),
          updated_at: update.ref("excluded.updated_at"),
        })),
      )
      .execute();
  }
}

/** The stored API checks. */
export class HealthcheckStorage {
  readonly #db: Kysely<Tables>;

  constructor(database: Database) {
    this.#db = database.kysely.withTables<HealthcheckTables>();
  }

  /** Every stored check, sorted by name. A row whose JSON does not parse is skipped. */
  async list(): Promise<StoredDefinition[]> {
    const rows = await this.#db
      .selectFrom("healthcheck_definition")
      .select(["name", "kind", "definition"])
      .orderBy("name")
      .execute();
    const stored: StoredDefinition[] = [];
    for (const { name, kind, definition } of rows) {
      try {
        stored.push({ name, kind, definition: JSON.parse(definition) });
      } catch {
        stored.push({ name, kind, definition: undefined });
      }
    }
    return stored;
  }

  /** Adds or replaces one check. */
  async save(definition: Definition): Promise<void> {
    await upsert(this.#db, [definition]);
  }

  /** Deletes one check; false when it was not stored. */
  async delete(name: string): Promise<boolean> {
    const result = await this.#db.deleteFrom("healthcheck_definition").where("name", "=", name).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  /**
   * Makes the stored checks exactly `definitions` in one transaction (healthchecks.md §6): adds or
   * replaces each, deletes every other stored check. Nothing changes when it throws.
   */
  async replaceAll(definitions: readonly Definition[]): Promise<void> {
    await this.#db.transaction().execute(async (transaction) => {
      await upsert(transaction, definitions);
      const wanted = new Set(definitions.map((definition) => definition.name));
      const stored = await transaction.selectFrom("healthcheck_definition").select("name").execute();
      const absent = stored.map(({ name }) => name).filter((name) => !wanted.has(name));
      for (const part of chunks(absent)) {
        await transaction.deleteFrom("healthcheck_definition").where("name", "in", part).execute();
      }
    });
  }
}
