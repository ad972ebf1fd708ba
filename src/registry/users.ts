/**
 * Users of the registry (docs/registry.md): the rules of their fields, their API shape and their
 * errors (storage.ts keeps them). An admin
 * may do anything except create tokens for another user; a tech user reads and updates only its own
 * account. At least one active admin always remains.
 */
import type { Role } from "../platform/auth.js";
import { ConflictError, NotFoundError } from "../platform/errors.js";
import {
  boolean,
  described,
  isPlainObject,
  object,
  oneOf,
  optional,
  required,
  schemaOf,
  string,
  ValidationError,
  type Validator,
} from "../platform/validation.js";

/** The roles of registry users, in the order error messages list them. */
export const ROLES: readonly Role[] = ["admin", "tech"];

/** A user name, also a token name: 1–64 characters of `A-Z a-z 0-9 . _ -`. */
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
  // `name` is ignored (users are never renamed), like any other unknown key.
  { unknownKeys: "ignore" },
);

/** A valid body of POST /api/v1/registry/user/<name>: at least one field is set. */
export type UserUpdateBody = ReturnType<typeof updateFields>;

/** The fields of which a user update sets at least one. */
const UPDATE_FIELDS = ["description", "password", "role", "active"] as const;

/**
 * The body of POST /api/v1/registry/user/<name>: at least one of description, password, role and
 * active; `null` counts as absent.
 *
 * @throws ValidationError naming the field, or the body when no field is given
 */
export const userUpdateBody: Validator<UserUpdateBody> = described(
  (value, path) => {
    const changes = updateFields(value, path);
    if (Object.keys(changes).length === 0) {
      throw new ValidationError(path, `must contain at least one of ${UPDATE_FIELDS.join(", ")}`);
    }
    return changes;
  },
  { ...schemaOf(updateFields), anyOf: UPDATE_FIELDS.map((field) => ({ required: [field] })) },
);

/**
 * Whether a body names a field only an admin may change (`role`, `active`), whatever its value:
 * permission is checked before validation, so a tech user sending `active` gets the
 * 403 even with a value that would not validate, or `null`.
 */
export function setsAdminOnlyField(body: unknown): boolean {
  return isPlainObject(body) && (Object.hasOwn(body, "role") || Object.hasOwn(body, "active"));
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

/** `user <name> not found`. */
export function userNotFound(name: string): NotFoundError {
  return new NotFoundError(`user ${name} not found`);
}

/** `user <name> already exists`. */
export function userExists(name: string): ConflictError {
  return new ConflictError(`user ${name} already exists`);
}

/** The conflict of a change that would leave no active admin. */
export const LAST_ADMIN = "at least one active admin must remain";

/** Compares names by UTF-16 code units: the same order on SQLite and PostgreSQL, whatever the collation. */
export function compareNames(a: { name: string }, b: { name: string }): number {
  if (a.name < b.name) return -1;
  return a.name > b.name ? 1 : 0;
}
