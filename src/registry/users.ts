/**
 * Users of the registry (registry.md §1–2): the rules of their fields, and their storage. An admin
 * may do anything except create tokens for another user; a tech user reads and updates only its own
 * account. At least one active admin always remains.
 */
import { randomUUID } from "node:crypto";
import type { Role } from "../platform/auth.js";
import type { Database } from "../platform/database.js";
import { HttpError } from "../platform/errors.js";
import {
  boolean,
  isPlainObject,
  object,
  oneOf,
  optional,
  required,
  string,
  ValidationError,
  type Validator,
} from "../platform/validation.js";
import type { RegistryDb, RegistryTables, UserTable } from "./tables.js";

/** The roles of registry.md §1, in the order error messages list them. */
export const ROLES: readonly Role[] = ["admin", "tech"];

/** A user name, also a token name: 1–64 characters of `A-Z a-z 0-9 . _ -` (registry.md §2). */
export const userName: Validator<string> = string({
  min: 1,
  max: 64,
  pattern: /^[A-Za-z0-9._-]+$/,
  patternRule: "must contain only the characters A-Z a-z 0-9 . _ -",
});

/** A description: 0–1000 characters. */
export const userDescription: Validator<string> = string({ max: 1000 });

/** A password: 8–1024 characters (write-only, stored as an Argon2id hash). */
export const userPassword: Validator<string> = string({ min: 8, max: 1024 });

/** `admin` or `tech`. */
export const userRole: Validator<Role> = oneOf(ROLES);

/** The body of POST /api/v1/registry/user: every field required; unknown keys are ignored. */
export const newUserBody = object(
  {
    name: required(userName),
    description: required(userDescription),
    password: required(userPassword),
    role: required(userRole),
    active: required(boolean()),
  },
  { unknownKeys: "ignore" },
);

/** A valid body of POST /api/v1/registry/user. */
export type NewUserBody = ReturnType<typeof newUserBody>;

const updateFields = object(
  {
    description: optional(userDescription),
    password: optional(userPassword),
    role: optional(userRole),
    active: optional(boolean()),
  },
  // `name` is ignored (no rename, registry.md §2), like any other unknown key.
  { unknownKeys: "ignore" },
);

/** A valid body of POST /api/v1/registry/user/<name>: at least one field is set. */
export type UserUpdateBody = ReturnType<typeof updateFields>;

/**
 * The body of POST /api/v1/registry/user/<name>: at least one of description, password, role and
 * active; `null` counts as absent.
 *
 * @throws ValidationError naming the field, or the body when no field is given
 */
export function userUpdateBody(value: unknown, path: string): UserUpdateBody {
  const changes = updateFields(value, path);
  if (Object.keys(changes).length === 0) {
    throw new ValidationError(path, "must contain at least one of description, password, role, active");
  }
  return changes;
}

/** Whether a body tries to set a field only an admin may change (`role`, `active`). */
export function setsAdminOnlyField(body: unknown): boolean {
  return isPlainObject(body) && ["role", "active"].some((key) => body[key] !== undefined && body[key] !== null);
}

/** A user as the API shows it: never the password or its hash. */
export interface User {
  readonly id: string;
  readonly name: string;
  readonly description: string;
  readonly active: boolean;
  readonly role: Role;
}

/** A user with its password hash, for token creation only. */
export interface UserCredentials extends User {
  readonly passwordHash: string;
}

/** A user to insert; the password is already hashed. */
export interface NewUser {
  readonly name: string;
  readonly description: string;
  readonly role: Role;
  readonly active: boolean;
  readonly passwordHash: string;
}

/** Changes to a user; absent fields stay as they are. */
export interface UserChanges {
  readonly description?: string;
  readonly passwordHash?: string;
  readonly role?: Role;
  readonly active?: boolean;
}

/** 404 `user <name> not found`. */
export function userNotFound(name: string): HttpError {
  return new HttpError(404, `user ${name} not found`);
}

/** 409 `user <name> already exists`. */
export function userExists(name: string): HttpError {
  return new HttpError(409, `user ${name} already exists`);
}

/** 409 when a change would leave no active admin. */
export const LAST_ADMIN = "at least one active admin must remain";

/** The registry's view of a database. */
export function registryDb(database: Database): RegistryDb {
  return database.kysely.withTables<RegistryTables>();
}

function toUser(row: Pick<UserTable, "id" | "name" | "description" | "active" | "role">): User {
  return { id: row.id, name: row.name, description: row.description, active: row.active === 1, role: row.role };
}

/** Compares names by UTF-16 code units: the same order on SQLite and PostgreSQL, whatever the collation. */
export function compareNames(a: { name: string }, b: { name: string }): number {
  if (a.name < b.name) return -1;
  return a.name > b.name ? 1 : 0;
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
   * @throws HttpError 409 `user <name> already exists`
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
   * @throws HttpError 404 `user <name> not found`, 409 `at least one active admin must remain`
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
      if (wasActiveAdmin && !isActiveAdmin && admins.length <= 1) throw new HttpError(409, LAST_ADMIN);
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
   * @throws HttpError 404 `user <name> not found`, 409 `at least one active admin must remain`
   */
  async delete(name: string): Promise<User> {
    return this.#db.transaction().execute(async (trx) => {
      const admins = await this.#activeAdmins(trx);
      const current = await this.#lockUser(trx, name);
      if (current === undefined) throw userNotFound(name);
      if (current.active && current.role === "admin" && admins.length <= 1) throw new HttpError(409, LAST_ADMIN);
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
