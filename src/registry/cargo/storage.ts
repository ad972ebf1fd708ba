/**
 * The Cargo registry's tables, migrations and queries (docs/cargo.md), the same on SQLite and
 * PostgreSQL. Times are BIGINT milliseconds since the epoch; booleans INTEGER 0/1.
 *
 * - `registry_crate`: one row per crate, under its canonical name (lower case, `_` as `-`, so
 *   `Foo_bar` and `foo-bar` are one crate); `index_etag` changes with every publish and yank, so
 *   that revalidating an index file is one lookup by primary key;
 * - `registry_crate_version`: one row per published version with its index line, in publication
 *   order (`id`); (crate, version without build metadata) is unique, which is what makes two
 *   concurrent publishes of one version end in one success and one 409, across instances;
 * - `registry_crate_owner`: who may publish, yank and change owners;
 * - `registry_user_number`: a positive 32-bit number per user, for Cargo's owner list (`id` is a
 *   `u32` to Cargo; users have UUIDs), given the first time a user is shown as an owner.
 */

import { createHash } from "node:crypto";
import type { Generated, Kysely, Migration, Transaction } from "kysely";
import { sql } from "kysely";
import { type Database, migrationDialect, type PlatformTables } from "../../platform/database.js";
import { runDdl } from "../../platform/ddl.js";
import { ConflictError, ForbiddenError } from "../../platform/errors.js";
import { isPlainObject } from "../../platform/validation.js";
import type { RegistryTables } from "../storage.js";
import { withYanked } from "./publish.js";

/** One crate: `registry_crate`. */
export interface CrateTable {
  id: Generated<number>;
  /** The canonical name: lower case, `_` as `-`; unique. */
  canonical: string;
  /** The name as first published (`Foo_bar`). */
  name: string;
  /** From the latest publish: shown and searched. */
  description: string;
  /** JSON array of strings, from the latest publish. */
  keywords: string;
  /** Changes with every publish and yank of the crate: the index file's ETag. */
  index_etag: string;
  /** Milliseconds since the epoch: the index file's Last-Modified. */
  updated_at: number;
  created_at: number;
}

/** One published version: `registry_crate_version`. */
export interface CrateVersionTable {
  /** Publication order (autoincrement). */
  id: Generated<number>;
  crate_id: number;
  /** As published, build metadata included (`1.0.0+abc`). */
  vers: string;
  /** Without build metadata: unique per crate. */
  vers_key: string;
  /** The line of the sparse index, JSON, `yanked` kept equal to the column below. */
  index_line: string;
  /** SHA-256 of the `.crate`, 64 hex digits. */
  cksum: string;
  /** Bytes of the `.crate`. */
  size: number;
  yanked: number;
  downloads: number;
  /** JSON object: description, keywords, categories, license, repository, documentation, homepage, readme. */
  metadata: string;
  /** The publisher, `registry_user.id`, or null once that user is deleted. */
  published_by: string | null;
  published_at: number;
}

/** One owner of a crate: `registry_crate_owner`. */
export interface CrateOwnerTable {
  crate_id: number;
  user_id: string;
}

/** A user's number for Cargo: `registry_user_number`. */
export interface UserNumberTable {
  number: Generated<number>;
  user_id: string;
}

/** The Cargo tables by name. */
export type CargoTables = {
  registry_crate: CrateTable;
  registry_crate_version: CrateVersionTable;
  registry_crate_owner: CrateOwnerTable;
  registry_user_number: UserNumberTable;
};

type CargoDb = Kysely<PlatformTables & RegistryTables & CargoTables>;

/** The Cargo registry's migrations, merged into the registry module's. */
export const cargoMigrations: Readonly<Record<string, Migration>> = {
  "registry-0004-cargo-crates": {
    up: (db) => {
      // An autoincrement key: an identity column on PostgreSQL, INTEGER PRIMARY KEY on SQLite.
      const serial =
        migrationDialect(db) === "postgres"
          ? "bigint primary key generated always as identity"
          : "integer primary key autoincrement";
      return runDdl(db, [
        `create table registry_crate (id ${serial}, canonical varchar(64) not null unique,
          name varchar(64) not null, description text not null, keywords text not null,
          index_etag varchar(64) not null, updated_at bigint not null, created_at bigint not null)`,
        // A version exists whatever its build metadata (vers_key drops it): a constraint, so that
        // the rule holds between instances, which a process lock would not.
        `create table registry_crate_version (id ${serial},
          crate_id bigint not null references registry_crate (id) on delete cascade,
          vers varchar(128) not null, vers_key varchar(128) not null, index_line text not null,
          cksum char(64) not null, size bigint not null, yanked integer not null check (yanked in (0, 1)),
          downloads bigint not null, metadata text not null,
          published_by varchar(36) references registry_user (id) on delete set null,
          published_at bigint not null,
          constraint registry_crate_version_unique unique (crate_id, vers_key))`,
        `create table registry_crate_owner (
          crate_id bigint not null references registry_crate (id) on delete cascade,
          user_id varchar(36) not null references registry_user (id) on delete cascade,
          constraint registry_crate_owner_pk primary key (crate_id, user_id))`,
        "create index registry_crate_owner_user on registry_crate_owner (user_id)",
        `create table registry_user_number (number ${serial},
          user_id varchar(36) not null unique references registry_user (id) on delete cascade)`,
      ]);
    },
  },
};

/** What a publish stores, checked by the domain (publish.ts) and written to disk before. */
export interface NewVersion {
  /** The name as published. */
  readonly name: string;
  readonly canonical: string;
  readonly vers: string;
  readonly versKey: string;
  /** The index line, JSON, with `"yanked":false`. */
  readonly indexLine: string;
  readonly cksum: string;
  /** Bytes. */
  readonly size: number;
  readonly description: string;
  readonly keywords: readonly string[];
  /** Shown by the browsing API: description, keywords, categories, license, links, readme. */
  readonly metadata: Readonly<Record<string, unknown>>;
  /** The publisher's user id. */
  readonly userId: string;
  /** Whether the publisher is an admin (who may publish a crate it does not own). */
  readonly admin: boolean;
  /** Milliseconds since the epoch. */
  readonly now: number;
}

/** A crate and the version just stored. */
export interface PublishOutcome {
  /** True when the crate did not exist before this publish. */
  readonly newCrate: boolean;
  /** The crate's name as first published (a later `foo_bar` publishes to crate `foo-bar`). */
  readonly crateName: string;
}

/** A crate as the index and the web API find it. */
export interface StoredCrate {
  readonly id: number;
  readonly name: string;
  readonly canonical: string;
  readonly indexEtag: string;
  /** Milliseconds since the epoch. */
  readonly updatedAt: number;
}

/** One version, for downloads and browsing. */
export interface StoredVersion {
  readonly id: number;
  readonly vers: string;
  readonly cksum: string;
  readonly size: number;
  readonly yanked: boolean;
  readonly downloads: number;
  readonly metadata: Readonly<Record<string, unknown>>;
  /** Milliseconds since the epoch. */
  readonly publishedAt: number;
  /** The publisher's name, or null once deleted. */
  readonly publishedBy: string | null;
}

/** An owner as Cargo lists it (`GET /api/v1/crates/<name>/owners`). */
export interface CrateOwner {
  /** Stable positive 32-bit number of the user. */
  readonly id: number;
  readonly login: string;
  readonly name: string;
}

/** One crate of a search or of the browsing list. */
export interface FoundCrate {
  readonly id: number;
  readonly name: string;
  readonly description: string;
}

/** A stored `.crate` as `vigie registry check` compares it with the files. */
export interface StoredFile {
  readonly canonical: string;
  readonly vers: string;
  /** Bytes. */
  readonly size: number;
  readonly cksum: string;
}

/** The ETag of an index file after a change: random enough to differ between instances. */
function newEtag(crateId: number, now: number, salt: string): string {
  return createHash("sha256").update(`${crateId}:${now}:${salt}:${Math.random()}`).digest("hex").slice(0, 32);
}

/** Parses a stored JSON object; an unreadable one (never written so) reads as empty. */
function jsonObject(text: string): Record<string, unknown> {
  const value: unknown = JSON.parse(text);
  return isPlainObject(value) ? value : {};
}

/** Every SQL statement of the Cargo registry. */
export class CargoStore {
  readonly #db: CargoDb;

  constructor(database: Database) {
    this.#db = database.kysely.withTables<RegistryTables & CargoTables>();
  }

  /**
   * Stores a version in one transaction: the crate (created with the publisher as owner when new),
   * the version and its index line. Refuses, writing nothing, a publisher that neither owns the
   * crate nor is an admin (403) and a version that exists, build metadata ignored (409, decided by
   * the unique constraint so that it holds across instances).
   *
   * @throws ForbiddenError (not an owner); ConflictError (the version exists)
   */
  async publish(version: NewVersion): Promise<PublishOutcome> {
    return await this.#db.transaction().execute(async (trx) => {
      const created = await trx
        .insertInto("registry_crate")
        .values({
          canonical: version.canonical,
          name: version.name,
          description: version.description,
          keywords: JSON.stringify(version.keywords),
          index_etag: "",
          updated_at: version.now,
          created_at: version.now,
        })
        .onConflict((conflict) => conflict.column("canonical").doNothing())
        .executeTakeFirst();
      const newCrate = Number(created.numInsertedOrUpdatedRows ?? 0) > 0;
      const crate = await trx
        .selectFrom("registry_crate")
        .select(["id", "name"])
        .where("canonical", "=", version.canonical)
        .executeTakeFirstOrThrow();
      if (newCrate) {
        await trx.insertInto("registry_crate_owner").values({ crate_id: crate.id, user_id: version.userId }).execute();
      } else if (!version.admin && !(await isOwner(trx, crate.id, version.userId))) {
        throw new ForbiddenError(
          `you are not an owner of crate ${crate.name}: ask an owner to add you (cargo owner --add)`,
        );
      }
      const inserted = await trx
        .insertInto("registry_crate_version")
        .values({
          crate_id: crate.id,
          vers: version.vers,
          vers_key: version.versKey,
          index_line: version.indexLine,
          cksum: version.cksum,
          size: version.size,
          yanked: 0,
          downloads: 0,
          metadata: JSON.stringify(version.metadata),
          published_by: version.userId,
          published_at: version.now,
        })
        .onConflict((conflict) => conflict.columns(["crate_id", "vers_key"]).doNothing())
        .executeTakeFirst();
      if (Number(inserted.numInsertedOrUpdatedRows ?? 0) === 0) {
        throw new ConflictError(`crate ${crate.name} version ${version.versKey} already exists`);
      }
      await trx
        .updateTable("registry_crate")
        .set({
          description: version.description,
          keywords: JSON.stringify(version.keywords),
          index_etag: newEtag(crate.id, version.now, version.vers),
          updated_at: version.now,
        })
        .where("id", "=", crate.id)
        .execute();
      return { newCrate, crateName: crate.name };
    });
  }

  /** The crate whose canonical name is `canonical`, or `undefined`. */
  async findCrate(canonical: string): Promise<StoredCrate | undefined> {
    const row = await this.#db
      .selectFrom("registry_crate")
      .select(["id", "name", "canonical", "index_etag", "updated_at"])
      .where("canonical", "=", canonical)
      .executeTakeFirst();
    return row === undefined
      ? undefined
      : { id: row.id, name: row.name, canonical: row.canonical, indexEtag: row.index_etag, updatedAt: row.updated_at };
  }

  /** The index lines of a crate in publication order. */
  async indexLines(crateId: number): Promise<string[]> {
    const rows = await this.#db
      .selectFrom("registry_crate_version")
      .select("index_line")
      .where("crate_id", "=", crateId)
      .orderBy("id")
      .execute();
    return rows.map((row) => row.index_line);
  }

  /** One version of a crate, build metadata ignored (`1.0.0` finds `1.0.0+abc`), or `undefined`. */
  async findVersion(crateId: number, versKey: string): Promise<StoredVersion | undefined> {
    const row = await this.#versions()
      .where("v.crate_id", "=", crateId)
      .where("v.vers_key", "=", versKey)
      .executeTakeFirst();
    return row === undefined ? undefined : toVersion(row);
  }

  /** Every version of a crate in publication order. */
  async versions(crateId: number): Promise<StoredVersion[]> {
    const rows = await this.#versions().where("v.crate_id", "=", crateId).orderBy("v.id").execute();
    return rows.map(toVersion);
  }

  #versions() {
    return this.#db
      .selectFrom("registry_crate_version as v")
      .leftJoin("registry_user as u", "u.id", "v.published_by")
      .select([
        "v.id",
        "v.vers",
        "v.cksum",
        "v.size",
        "v.yanked",
        "v.downloads",
        "v.metadata",
        "v.published_at",
        "u.name as publisher",
      ]);
  }

  /**
   * Sets the yanked flag of a version and rewrites its index line, in one transaction that also
   * changes the index file's ETag. Idempotent.
   *
   * @returns false when the version does not exist
   */
  async setYanked(crateId: number, versKey: string, yanked: boolean, now: number): Promise<boolean> {
    return this.#db.transaction().execute(async (trx) => {
      const row = await trx
        .selectFrom("registry_crate_version")
        .select(["id", "index_line", "yanked"])
        .where("crate_id", "=", crateId)
        .where("vers_key", "=", versKey)
        .executeTakeFirst();
      if (row === undefined) return false;
      if ((row.yanked === 1) === yanked) return true;
      await trx
        .updateTable("registry_crate_version")
        .set({ yanked: yanked ? 1 : 0, index_line: withYanked(row.index_line, yanked) })
        .where("id", "=", row.id)
        .execute();
      await trx
        .updateTable("registry_crate")
        .set({ index_etag: newEtag(crateId, now, `${versKey}:${yanked}`), updated_at: now })
        .where("id", "=", crateId)
        .execute();
      return true;
    });
  }

  /** Whether `userId` owns the crate. */
  async isOwner(crateId: number, userId: string): Promise<boolean> {
    return isOwner(this.#db, crateId, userId);
  }

  /** The owners of a crate, by name, each with its number (given now to those who have none). */
  async owners(crateId: number): Promise<CrateOwner[]> {
    const owners = this.#db.selectFrom("registry_crate_owner").select("user_id").where("crate_id", "=", crateId);
    await this.#db
      .insertInto("registry_user_number")
      .columns(["user_id"])
      .expression(owners)
      .onConflict((conflict) => conflict.column("user_id").doNothing())
      .execute();
    const rows = await this.#db
      .selectFrom("registry_crate_owner as o")
      .innerJoin("registry_user as u", "u.id", "o.user_id")
      .innerJoin("registry_user_number as n", "n.user_id", "o.user_id")
      .select(["n.number", "u.name", "u.description"])
      .where("o.crate_id", "=", crateId)
      .orderBy("u.name")
      .execute();
    return rows.map((row) => ({ id: Number(row.number), login: row.name, name: row.description }));
  }

  /** Adds owners (by user id); those who already own the crate stay. */
  async addOwners(crateId: number, userIds: readonly string[]): Promise<void> {
    if (userIds.length === 0) return;
    await this.#db
      .insertInto("registry_crate_owner")
      .values(userIds.map((userId) => ({ crate_id: crateId, user_id: userId })))
      .onConflict((conflict) => conflict.columns(["crate_id", "user_id"]).doNothing())
      .execute();
  }

  /**
   * Removes owners (by user id), unless none would be left: the crate keeps at least one owner.
   * @throws ConflictError when the removal would leave the crate without owner
   */
  async removeOwners(crateId: number, crateName: string, userIds: readonly string[]): Promise<void> {
    if (userIds.length === 0) return;
    await this.#db.transaction().execute(async (trx) => {
      await trx
        .deleteFrom("registry_crate_owner")
        .where("crate_id", "=", crateId)
        .where("user_id", "in", userIds)
        .execute();
      const left = await trx
        .selectFrom("registry_crate_owner")
        .select((eb) => eb.fn.countAll().as("count"))
        .where("crate_id", "=", crateId)
        .executeTakeFirstOrThrow();
      if (Number(left.count) === 0) {
        throw new ConflictError(`cannot remove every owner of crate ${crateName}: add another one first`);
      }
    });
  }

  /** Adds `counts` (downloads by version id) to the versions' download counters, in one transaction. */
  async addDownloads(counts: ReadonlyMap<number, number>): Promise<void> {
    if (counts.size === 0) return;
    await this.#db.transaction().execute(async (trx) => {
      for (const [id, count] of counts) {
        await trx
          .updateTable("registry_crate_version")
          .set((eb) => ({ downloads: eb("downloads", "+", count) }))
          .where("id", "=", id)
          .execute();
      }
    });
  }

  /**
   * Crates whose name, description or keywords contain every word (case-insensitive, `%` and `_`
   * taken literally), sorted by canonical name: `limit` of them from `offset`, and the number of
   * all matches. No word: every crate.
   */
  async search(words: readonly string[], limit: number, offset = 0): Promise<{ crates: FoundCrate[]; total: number }> {
    let query = this.#db.selectFrom("registry_crate as c");
    for (const word of words) {
      const pattern = `%${word.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
      const like = (column: "c.name" | "c.description" | "c.keywords") =>
        sql<boolean>`lower(${sql.ref(column)}) like ${pattern} escape '\\'`;
      // Keywords are stored as a JSON array: a word with JSON's punctuation would match its syntax,
      // and no keyword holds such a character.
      const inKeywords = !/["[\],\\]/.test(word);
      query = query.where((eb) =>
        eb.or(
          inKeywords
            ? [like("c.name"), like("c.description"), like("c.keywords")]
            : [like("c.name"), like("c.description")],
        ),
      );
    }
    const total = await query.select((eb) => eb.fn.countAll().as("count")).executeTakeFirstOrThrow();
    const rows = await query
      .select(["c.id", "c.name", "c.description"])
      .orderBy("c.canonical")
      .limit(limit)
      .offset(offset)
      .execute();
    return { crates: rows.map((row) => ({ ...row, id: Number(row.id) })), total: Number(total.count) };
  }

  /** The versions that are not yanked of each crate, by crate id (crates without any are absent). */
  async liveVersions(crateIds: readonly number[]): Promise<Map<number, string[]>> {
    const versions = new Map<number, string[]>();
    if (crateIds.length === 0) return versions;
    const rows = await this.#db
      .selectFrom("registry_crate_version")
      .select(["crate_id", "vers"])
      .where("crate_id", "in", crateIds)
      .where("yanked", "=", 0)
      .execute();
    for (const row of rows) {
      const id = Number(row.crate_id);
      const list = versions.get(id);
      if (list === undefined) versions.set(id, [row.vers]);
      else list.push(row.vers);
    }
    return versions;
  }

  /** How many crates and versions are stored (metrics). */
  async counts(): Promise<{ crates: number; versions: number }> {
    const crates = await this.#db
      .selectFrom("registry_crate")
      .select((eb) => eb.fn.countAll().as("count"))
      .executeTakeFirstOrThrow();
    const versions = await this.#db
      .selectFrom("registry_crate_version")
      .select((eb) => eb.fn.countAll().as("count"))
      .executeTakeFirstOrThrow();
    return { crates: Number(crates.count), versions: Number(versions.count) };
  }

  /** Every stored version's file facts, for `vigie registry check`. */
  async files(): Promise<StoredFile[]> {
    const rows = await this.#db
      .selectFrom("registry_crate_version as v")
      .innerJoin("registry_crate as c", "c.id", "v.crate_id")
      .select(["c.canonical", "v.vers", "v.size", "v.cksum"])
      .execute();
    return rows.map((row) => ({ canonical: row.canonical, vers: row.vers, size: Number(row.size), cksum: row.cksum }));
  }
}

async function isOwner(
  db: CargoDb | Transaction<PlatformTables & RegistryTables & CargoTables>,
  crateId: number,
  userId: string,
) {
  const row = await db
    .selectFrom("registry_crate_owner")
    .select("user_id")
    .where("crate_id", "=", crateId)
    .where("user_id", "=", userId)
    .executeTakeFirst();
  return row !== undefined;
}

function toVersion(row: {
  id: number;
  vers: string;
  cksum: string;
  size: number;
  yanked: number;
  downloads: number;
  metadata: string;
  published_at: number;
  publisher: string | null;
}): StoredVersion {
  return {
    id: Number(row.id),
    vers: row.vers,
    cksum: row.cksum,
    size: Number(row.size),
    yanked: row.yanked === 1,
    downloads: Number(row.downloads),
    metadata: jsonObject(row.metadata),
    publishedAt: Number(row.published_at),
    publishedBy: row.publisher,
  };
}
