/**
 * The registry's storage (docs/registry.md): its tables, its migrations and every SQL statement of
 * the module, the same on SQLite and PostgreSQL. Timestamps are BIGINT milliseconds since the Unix
 * epoch; booleans are INTEGER 0/1 so that both databases store and return the same values.
 *
 * - `registry_user`: users, with their Argon2id password hash (never leaves the server);
 * - `registry_token`: tokens, of which only the SHA-256 is stored, in a unique index, with their
 *   Cargo limits as JSON arrays of strings in text columns, null for all;
 * - `registry_token_failure`: failed token creations, the memory of the rate limit, in the
 *   database so that instances sharing PostgreSQL share it.
 */

import { randomUUID } from "node:crypto";
import type { Kysely, Migration } from "kysely";
import type { Role } from "../platform/auth.js";
import { type Database, migrationDialect, type PlatformTables } from "../platform/database.js";
import { runDdl } from "../platform/ddl.js";
import { ConflictError } from "../platform/errors.js";
import { type RateLimitPolicy, retryAfterSeconds } from "../platform/rate-limit.js";
import {
  DAY_MS,
  generateToken,
  hashToken,
  type StoredToken,
  type TokenLimits,
  type TokenOwner,
  tokenNotFound,
} from "./tokens.js";
import {
  compareNames,
  LAST_ADMIN,
  type NewUser,
  type User,
  type UserChanges,
  type UserCredentials,
  userExists,
  userNotFound,
} from "./users.js";

/** One user: `registry_user`. */
export interface UserTable {
  /** UUID v4. */
  id: string;
  /** 1–64 characters of `A-Z a-z 0-9 . _ -`; unique. */
  name: string;
  description: string;
  role: Role;
  /** 1 active, 0 inactive. */
  active: number;
  /** Argon2id PHC string; never leaves the server. */
  password_hash: string;
  /** Milliseconds since the epoch. */
  created_at: number;
  /** Milliseconds since the epoch. */
  updated_at: number;
}

/** One API token: `registry_token`. The token itself is never stored, only its SHA-256. */
export interface TokenTable {
  /** UUID v4. */
  id: string;
  /** The owner, `registry_user.id`; deleting the user deletes its tokens. */
  user_id: string;
  /** Unique per user. */
  name: string;
  /** SHA-256 of the token, 64 lower-case hex digits; unique and indexed. */
  hash: string;
  /** Milliseconds since the epoch. */
  created_at: number;
  /** Milliseconds since the epoch; the token is refused from this instant on. */
  expires_at: number;
  /** Milliseconds since the epoch, or null before the first use. Written at most once a minute. */
  last_used_at: number | null;
  /** Cargo scopes, a JSON array of strings; null: every scope. */
  scopes: string | null;
  /** Crate name patterns, a JSON array of strings; null: every crate. */
  crates: string | null;
}

/**
 * One failed token creation: `registry_token_failure`, the memory of the rate limit.
 * In the database, not in process memory, so instances sharing a PostgreSQL database share limits.
 */
export interface TokenFailureTable {
  /** What was limited: `user:<name>`, `address:<client address>` or `user-address:<name> <address>`. */
  key: string;
  /** Milliseconds since the epoch. */
  at: number;
}

/** The registry's tables by name (a type, not an interface: `withTables` needs an index signature). */
export type RegistryTables = {
  registry_user: UserTable;
  registry_token: TokenTable;
  registry_token_failure: TokenFailureTable;
};

/** A Kysely instance that knows the platform's and the registry's tables. */
export type RegistryDb = Kysely<PlatformTables & RegistryTables>;

/** Migrations by name, `registry-<number>-<what>`. */
export const registryMigrations: Readonly<Record<string, Migration>> = {
  "registry-0001-users-and-tokens": {
    up: (db) =>
      runDdl(db, [
        `create table registry_user (id varchar(36) primary key, name varchar(64) not null unique,
          description text not null, role varchar(16) not null check (role in ('admin', 'tech')),
          active integer not null check (active in (0, 1)), password_hash text not null,
          created_at bigint not null, updated_at bigint not null)`,
        `create table registry_token (id varchar(36) primary key,
          user_id varchar(36) not null references registry_user (id) on delete cascade,
          name varchar(64) not null, hash char(64) not null, created_at bigint not null,
          expires_at bigint not null, last_used_at bigint,
          constraint registry_token_user_name_unique unique (user_id, name))`,
        // Authenticating a request is one lookup in this index.
        "create unique index registry_token_hash_unique on registry_token (hash)",
        "create table registry_token_failure (key varchar(200) not null, at bigint not null)",
        "create index registry_token_failure_key_at on registry_token_failure (key, at)",
        // For the sweep of failures older than the window.
        "create index registry_token_failure_at on registry_token_failure (at)",
      ]),
  },
  "registry-0002-token-names-of-100-characters": {
    // Token names grew from 64 to 100 characters. SQLite does not enforce a varchar length (and
    // cannot alter a column); PostgreSQL counts characters, not bytes.
    up: (db) =>
      runDdl(
        db,
        migrationDialect(db) === "postgres" ? ["alter table registry_token alter column name type varchar(100)"] : [],
      ),
  },
  "registry-0003-token-scopes": {
    // Token scopes (docs/cargo.md). Nullable, so existing tokens keep every scope; text holding a
    // JSON array on both databases (one column per statement: SQLite adds one at a time).
    up: (db) =>
      runDdl(db, [
        "alter table registry_token add column scopes text",
        "alter table registry_token add column crates text",
      ]),
  },
};

/** The registry's view of a database. */
export function registryDb(database: Database): RegistryDb {
  return database.kysely.withTables<RegistryTables>();
}

function toUser(row: Pick<UserTable, "id" | "name" | "description" | "active" | "role">): User {
  return { id: row.id, name: row.name, description: row.description, active: row.active === 1, role: row.role };
}

/** Reads and writes `registry_user`. Works the same on SQLite and PostgreSQL. */
export class UserStore {
  readonly #db: RegistryDb;
  readonly #postgres: boolean;

  constructor(database: Database) {
    this.#db = registryDb(database);
    this.#postgres = database.dialect === "postgres";
  }

  /**
   * Inserts a user with a new UUID v4.
   *
   * @param now milliseconds since the epoch
   * @throws ConflictError `user <name> already exists`
   */
  async create(user: NewUser, now: number): Promise<User> {
    const created = await this.createIfAbsent(user, now);
    if (created === undefined) throw userExists(user.name);
    return created;
  }

  /**
   * Inserts a user unless one of that name exists (several instances may try at once: the unique
   * index decides, the others insert nothing).
   *
   * @returns the new user, or `undefined` when the name was taken
   */
  async createIfAbsent(user: NewUser, now: number): Promise<User | undefined> {
    const row = {
      id: randomUUID(),
      name: user.name,
      description: user.description,
      role: user.role,
      active: user.active ? 1 : 0,
      password_hash: user.passwordHash,
      created_at: now,
      updated_at: now,
    };
    const result = await this.#db
      .insertInto("registry_user")
      .values(row)
      .onConflict((conflict) => conflict.column("name").doNothing())
      .executeTakeFirst();
    return Number(result.numInsertedOrUpdatedRows ?? 0) > 0 ? toUser(row) : undefined;
  }

  /** Every user, sorted by name. */
  async list(): Promise<User[]> {
    const rows = await this.#db
      .selectFrom("registry_user")
      .select(["id", "name", "description", "active", "role"])
      .execute();
    return rows.map(toUser).sort(compareNames);
  }

  /** The user named `name`, or `undefined`. */
  async find(name: string): Promise<User | undefined> {
    const row = await this.#db
      .selectFrom("registry_user")
      .select(["id", "name", "description", "active", "role"])
      .where("name", "=", name)
      .executeTakeFirst();
    return row === undefined ? undefined : toUser(row);
  }

  /** The user named `name` with its password hash, or `undefined`. */
  async findCredentials(name: string): Promise<UserCredentials | undefined> {
    const row = await this.#db
      .selectFrom("registry_user")
      .select(["id", "name", "description", "active", "role", "password_hash"])
      .where("name", "=", name)
      .executeTakeFirst();
    return row === undefined ? undefined : { ...toUser(row), passwordHash: row.password_hash };
  }

  /**
   * Changes a user, refusing to demote or deactivate the last active admin.
   *
   * @param now milliseconds since the epoch
   * @returns the user after the change
   * @throws NotFoundError `user <name> not found`; ConflictError `at least one active admin must remain`
   */
  async update(name: string, changes: UserChanges, now: number): Promise<User> {
    return this.#db.transaction().execute(async (trx) => {
      const admins = await this.#activeAdmins(trx);
      const current = await this.#lockUser(trx, name);
      if (current === undefined) throw userNotFound(name);
      const next: User = {
        ...current,
        ...(changes.description === undefined ? {} : { description: changes.description }),
        ...(changes.role === undefined ? {} : { role: changes.role }),
        ...(changes.active === undefined ? {} : { active: changes.active }),
      };
      const wasActiveAdmin = current.active && current.role === "admin";
      const isActiveAdmin = next.active && next.role === "admin";
      if (wasActiveAdmin && !isActiveAdmin && admins.length <= 1) throw new ConflictError(LAST_ADMIN);
      await trx
        .updateTable("registry_user")
        .set({
          description: next.description,
          role: next.role,
          active: next.active ? 1 : 0,
          ...(changes.passwordHash === undefined ? {} : { password_hash: changes.passwordHash }),
          updated_at: now,
        })
        .where("id", "=", current.id)
        .execute();
      return next;
    });
  }

  /**
   * Deletes a user and its tokens, refusing to delete the last active admin.
   *
   * @returns the deleted user
   * @throws NotFoundError `user <name> not found`; ConflictError `at least one active admin must remain`
   */
  async delete(name: string): Promise<User> {
    return this.#db.transaction().execute(async (trx) => {
      const admins = await this.#activeAdmins(trx);
      const current = await this.#lockUser(trx, name);
      if (current === undefined) throw userNotFound(name);
      if (current.active && current.role === "admin" && admins.length <= 1) throw new ConflictError(LAST_ADMIN);
      // The foreign key cascades too; deleting explicitly does not depend on SQLite's foreign_keys pragma.
      await trx.deleteFrom("registry_token").where("user_id", "=", current.id).execute();
      await trx.deleteFrom("registry_user").where("id", "=", current.id).execute();
      return current;
    });
  }

  /**
   * The ids of the active admins. On PostgreSQL the rows are locked (`FOR UPDATE`, in id order so
   * concurrent transactions lock them in the same order): two admins demoting each other at once
   * are serialised, and the second sees that only one admin is left. SQLite serialises writers
   * already (one connection per process, one writer per database).
   */
  async #activeAdmins(trx: RegistryDb): Promise<string[]> {
    const rows = await trx
      .selectFrom("registry_user")
      .select("id")
      .where("role", "=", "admin")
      .where("active", "=", 1)
      .orderBy("id")
      .$if(this.#postgres, (query) => query.forUpdate())
      .execute();
    return rows.map((row) => row.id);
  }

  async #lockUser(trx: RegistryDb, name: string): Promise<User | undefined> {
    const row = await trx
      .selectFrom("registry_user")
      .select(["id", "name", "description", "active", "role"])
      .where("name", "=", name)
      .$if(this.#postgres, (query) => query.forUpdate())
      .executeTakeFirst();
    return row === undefined ? undefined : toUser(row);
  }
}

/** The column form of a token limit: a JSON array, or null for all. */
function encodeList(list: readonly string[] | undefined): string | null {
  return list === undefined ? null : JSON.stringify(list);
}

/**
 * A token limit read from its column: null gives `undefined` (all), a JSON array of strings a
 * frozen array (shared by every request of the token through the cache).
 *
 * @throws Error when the column holds anything else (the database was edited by hand)
 */
function decodeList(text: string | null, column: string): readonly string[] | undefined {
  if (text === null) return undefined;
  const value: unknown = JSON.parse(text);
  if (!Array.isArray(value) || !value.every((item) => typeof item === "string")) {
    throw new Error(`registry_token.${column} is not a JSON array of strings: ${text}`);
  }
  return Object.freeze(value);
}

function toStoredToken(
  row: Pick<TokenTable, "id" | "user_id" | "name" | "created_at" | "expires_at" | "last_used_at" | "scopes" | "crates">,
): StoredToken {
  return {
    id: row.id,
    userId: row.user_id,
    name: row.name,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    lastUsedAt: row.last_used_at,
    scopes: decodeList(row.scopes, "scopes"),
    crates: decodeList(row.crates, "crates"),
  };
}

const COLUMNS = ["id", "user_id", "name", "created_at", "expires_at", "last_used_at", "scopes", "crates"] as const;

/** Reads and writes `registry_token`. Works the same on SQLite and PostgreSQL. */
export class TokenStore {
  readonly #db: RegistryDb;

  constructor(database: Database) {
    this.#db = registryDb(database);
  }

  /**
   * Creates a token for a user.
   *
   * @param validityDays 1–3650
   * @param now milliseconds since the epoch
   * @param limits Cargo scopes and crate patterns, already validated; none: all
   * @returns the token, to show once, and what is stored of it
   * @throws ConflictError `token <name> already exists` when the user has a token of that name
   */
  async create(
    userId: string,
    name: string,
    validityDays: number,
    now: number,
    limits: TokenLimits = {},
  ): Promise<{ token: string; stored: StoredToken }> {
    const token = generateToken();
    const row = {
      id: randomUUID(),
      user_id: userId,
      name,
      hash: hashToken(token),
      created_at: now,
      expires_at: now + validityDays * DAY_MS,
      last_used_at: null,
      scopes: encodeList(limits.scopes),
      crates: encodeList(limits.crates),
    };
    const result = await this.#db
      .insertInto("registry_token")
      .values(row)
      .onConflict((conflict) => conflict.columns(["user_id", "name"]).doNothing())
      .executeTakeFirst();
    if (Number(result.numInsertedOrUpdatedRows ?? 0) === 0) throw new ConflictError(`token ${name} already exists`);
    return { token, stored: toStoredToken(row) };
  }

  /** The tokens of a user, expired ones included, sorted by name. */
  async list(userId: string): Promise<StoredToken[]> {
    const rows = await this.#db.selectFrom("registry_token").select(COLUMNS).where("user_id", "=", userId).execute();
    return rows.map(toStoredToken).sort(compareNames);
  }

  /**
   * Deletes the token `name` of a user.
   *
   * @returns the deleted token
   * @throws NotFoundError `token <name> not found`
   */
  async delete(userId: string, name: string): Promise<StoredToken> {
    const row = await this.#db
      .deleteFrom("registry_token")
      .where("user_id", "=", userId)
      .where("name", "=", name)
      .returning(COLUMNS)
      .executeTakeFirst();
    if (row === undefined) throw tokenNotFound(name);
    return toStoredToken(row);
  }

  /**
   * The token whose SHA-256 is `hash`, with its limits and its user: one lookup in a unique index.
   *
   * @throws Error when a limit column holds something else than a JSON array of strings
   */
  async findOwner(hash: string): Promise<TokenOwner | undefined> {
    const row = await this.#db
      .selectFrom("registry_token as t")
      .innerJoin("registry_user as u", "u.id", "t.user_id")
      .select([
        "t.id as tokenId",
        "t.expires_at as expiresAt",
        "t.last_used_at as lastUsedAt",
        "t.scopes as scopes",
        "t.crates as crates",
        "u.id as userId",
        "u.name as userName",
        "u.role as role",
        "u.active as active",
      ])
      .where("t.hash", "=", hash)
      .executeTakeFirst();
    if (row === undefined) return undefined;
    return {
      tokenId: row.tokenId,
      expiresAt: row.expiresAt,
      lastUsedAt: row.lastUsedAt,
      userId: row.userId,
      userName: row.userName,
      role: row.role,
      active: row.active === 1,
      scopes: decodeList(row.scopes, "scopes"),
      crates: decodeList(row.crates, "crates"),
    };
  }

  /**
   * Records a use of a token, unless the stored time of use is less than `minIntervalMs` older
   * than `at` (or newer). The condition is in the statement, so instances sharing a database, each
   * throttling its own writes, still change the row at most once a minute, and a
   * clock behind the others never moves the time back.
   *
   * @param at milliseconds since the epoch
   * @param minIntervalMs milliseconds; default 60 000
   */
  async touch(tokenId: string, at: number, minIntervalMs = 60_000): Promise<void> {
    await this.#db
      .updateTable("registry_token")
      .set({ last_used_at: at })
      .where("id", "=", tokenId)
      .where((where) => where.or([where("last_used_at", "is", null), where("last_used_at", "<=", at - minIntervalMs)]))
      .execute();
  }
}

/**
 * The memory of failed token creations, a sliding window per key (see sign-in-limit.ts for the
 * rule that reads it): {@link wait} tells how long a key stays limited under a policy, {@link record}
 * remembers one failure under several keys. Refused attempts are not failures (nobody's password was
 * checked), so a limited key is free again `windowMs` after its `limit`-th most recent failure.
 * Concurrent attempts may check before any of them records its failure, so a burst can exceed a
 * limit by the number of attempts in flight; the next attempt is refused.
 */
export class FailureLimiter {
  readonly #db: RegistryDb;

  /**
   * @param keepMs how long a failure is kept, in milliseconds: the longest window any policy
   *   reads (older failures are swept by {@link record})
   */
  constructor(
    database: Database,
    readonly keepMs: number,
  ) {
    this.#db = registryDb(database);
  }

  /**
   * How long `key` stays limited under `policy`.
   *
   * @param key at most 200 characters (the column's width)
   * @param now milliseconds since the epoch
   * @returns whole seconds until the key is free, or `undefined` when it is not limited
   */
  async wait(key: string, policy: RateLimitPolicy, now: number): Promise<number | undefined> {
    const rows = await this.#db
      .selectFrom("registry_token_failure")
      .select("at")
      .where("key", "=", key)
      .where("at", ">", now - policy.windowMs)
      .orderBy("at", "desc")
      .limit(policy.limit)
      .execute();
    return retryAfterSeconds(rows[policy.limit - 1]?.at, now, policy);
  }

  /**
   * Records one failure under each key, and forgets failures older than `keepMs` (of every key,
   * so the table stays as small as the recent failures).
   *
   * @param now milliseconds since the epoch
   */
  async record(keys: readonly string[], now: number): Promise<void> {
    await this.#db
      .insertInto("registry_token_failure")
      .values(keys.map((key) => ({ key, at: now })))
      .execute();
    await this.#db
      .deleteFrom("registry_token_failure")
      .where("at", "<=", now - this.keepMs)
      .execute();
  }
}
