/**
 * The table of durable outputs (docs/outputs.md, "Durable outputs"): the events of each output with
 * `durable: true` that were accepted and not yet settled, numbered per output in the order they
 * came. Every SQL statement of durable outputs is here; the queue itself (durable-log.ts) sees
 * only {@link DurableStore}.
 */
import type { Kysely, Migration } from "kysely";
import type { PlatformTables } from "../database.js";
import { runDdl } from "../ddl.js";
import type { Event } from "./event.js";

/** The migration of the durable outputs' table (a platform migration: outputs are not a module). */
export const outputQueueMigrations: Readonly<Record<string, Migration>> = {
  "platform-0003-output-queue": {
    // seq: the event's number in its output, from 1, contiguous; event: the event as JSON text.
    up: (db) =>
      runDdl(db, [
        `create table output_queue (output varchar(128) not null, seq bigint not null, event text not null,
          primary key (output, seq))`,
      ]),
  },
};

type QueueTables = {
  output_queue: { output: string; seq: number; event: string };
};

/** An event kept on disk, and its number in its output. */
export interface StoredEvent {
  readonly seq: number;
  readonly event: Event;
}

/** One write of a durable queue: events appended and settled ones removed, atomically. */
export interface QueueWrite {
  /** The number of the first appended event; the others follow, one by one. */
  readonly firstSeq: number;
  /** The appended events, JSON-encoded, oldest first (may be empty). */
  readonly events: readonly string[];
  /** Events numbered below this are removed (0: none). */
  readonly removeBefore: number;
}

/** What a durable queue needs of its storage. */
export interface DurableStore {
  /**
   * The kept events of `output`, oldest first, at most `limit`; those beyond are removed (the
   * queue got smaller since they were written).
   * @returns the events read and how many were removed
   */
  load(output: string, limit: number): Promise<{ events: StoredEvent[]; removed: number }>;
  /** Appends and removes in one transaction. @throws the database's error (nothing is written then) */
  write(output: string, change: QueueWrite): Promise<void>;
}

/** Rows per `insert` statement: 3 parameters each, far below both databases' limits. */
const ROWS_PER_INSERT = 500;

/** {@link DurableStore} on the server's database (SQLite or PostgreSQL). */
export class SqlDurableStore implements DurableStore {
  readonly #db: Kysely<PlatformTables & QueueTables>;

  constructor(kysely: Kysely<PlatformTables>) {
    this.#db = kysely.withTables<QueueTables>();
  }

  async load(output: string, limit: number): Promise<{ events: StoredEvent[]; removed: number }> {
    const rows = await this.#db
      .selectFrom("output_queue")
      .select(["seq", "event"])
      .where("output", "=", output)
      .orderBy("seq")
      .limit(limit)
      .execute();
    const events = rows.map((row) => ({ seq: Number(row.seq), event: JSON.parse(row.event) as Event }));
    const last = events.at(-1)?.seq ?? 0;
    const deleted = await this.#db
      .deleteFrom("output_queue")
      .where("output", "=", output)
      .where("seq", ">", last)
      .executeTakeFirst();
    return { events, removed: Number(deleted.numDeletedRows) };
  }

  async write(output: string, change: QueueWrite): Promise<void> {
    await this.#db.transaction().execute(async (trx) => {
      for (let start = 0; start < change.events.length; start += ROWS_PER_INSERT) {
        const rows = change.events
          .slice(start, start + ROWS_PER_INSERT)
          .map((event, index) => ({ output, seq: change.firstSeq + start + index, event }));
        await trx.insertInto("output_queue").values(rows).execute();
      }
      if (change.removeBefore > 0) {
        await trx
          .deleteFrom("output_queue")
          .where("output", "=", output)
          .where("seq", "<", change.removeBefore)
          .execute();
      }
    });
  }
}
