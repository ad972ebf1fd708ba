/**
 * The registry's tables (registry.md §2–3), as Kysely sees them. Timestamps are BIGINT milliseconds
 * since the Unix epoch; booleans are INTEGER 0/1 so SQLite and PostgreSQL store and return the same
 * values.
 */
import type { Kysely } from "kysely";
import type { Role } from "../platform/auth.js";
import type { PlatformTables } from "../platform/database.js";

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
}

/**
 * One failed token creation: `registry_token_failure`, the memory of the rate limit (registry.md §3).
 * In the database, not in process memory, so instances sharing a PostgreSQL database share limits.
 */
export interface TokenFailureTable {
  /** What was limited: `user:<name>` or `address:<client address>`. */
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
