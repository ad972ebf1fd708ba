/**
 * API tokens (registry.md §3): their format, their hash, the rules of a token request, and their
 * storage. The database keeps only the SHA-256 of a token, so authenticating is one indexed lookup.
 */
import { createHash, randomBytes, randomUUID } from "node:crypto";
import type { Role } from "../platform/auth.js";
import type { Database } from "../platform/database.js";
import { HttpError } from "../platform/errors.js";
import { integer, object, required, string, type Validator, withDefault } from "../platform/validation.js";
import type { RegistryDb, TokenTable } from "./tables.js";
import { compareNames, registryDb, userName } from "./users.js";

/** What every token starts with, so a leaked one is recognisable (secret scanners). */
export const TOKEN_PREFIX = "vigie_";

/** `vigie_` and 32 random bytes in base64url without padding (43 characters). */
const TOKEN_FORMAT = /^vigie_[A-Za-z0-9_-]{43}$/;

/** Milliseconds in a day (validity is counted in days of 24 hours). */
export const DAY_MS = 86_400_000;

/** A new token: `vigie_` followed by 32 bytes of `crypto.randomBytes` in base64url (43 characters). */
export function generateToken(): string {
  return TOKEN_PREFIX + randomBytes(32).toString("base64url");
}

/** Whether a string has the format of a token; anything else is refused without a database lookup. */
export function isTokenFormat(token: string): boolean {
  return TOKEN_FORMAT.test(token);
}

/** The SHA-256 of a token, 64 lower-case hex digits: what the database stores and looks up. */
export function hashToken(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}

/** A token name follows the rule of user names: 1–64 characters of `A-Z a-z 0-9 . _ -`. */
export const tokenName: Validator<string> = userName;

/**
 * The body of POST /api/v1/registry/token. `password` is only checked for type and size here: a
 * password that breaks the rules of §2 is simply a wrong one (401), counted by the rate limit.
 */
export const newTokenBody = object(
  {
    name: required(tokenName),
    user: required(userName),
    password: required(string({ min: 1, max: 1024 })),
    /** Days, 1–3650, default 365. */
    validity: withDefault(integer(1, 3650), 365),
  },
  { unknownKeys: "ignore" },
);

/** A valid body of POST /api/v1/registry/token. */
export type NewTokenBody = ReturnType<typeof newTokenBody>;

/** A token as the API lists it (dates are RFC 3339 UTC strings). */
export interface TokenView {
  readonly id: string;
  readonly name: string;
  readonly "created-at": string;
  readonly "expires-at": string;
  readonly "last-used-at": string | null;
}

/** A stored token, without its hash. Times in milliseconds since the epoch. */
export interface StoredToken {
  readonly id: string;
  readonly userId: string;
  readonly name: string;
  readonly createdAt: number;
  readonly expiresAt: number;
  readonly lastUsedAt: number | null;
}

/** What authenticating a token needs: the token and its user, read in one indexed lookup. */
export interface TokenOwner {
  readonly tokenId: string;
  /** Milliseconds since the epoch. */
  readonly expiresAt: number;
  /** Milliseconds since the epoch, or null. */
  readonly lastUsedAt: number | null;
  readonly userId: string;
  readonly userName: string;
  readonly role: Role;
  readonly active: boolean;
}

/** The RFC 3339 UTC form of a time in milliseconds: `2025-03-01T12:00:00.000Z`. */
export function rfc3339(milliseconds: number): string {
  return new Date(milliseconds).toISOString();
}

/** The API view of a stored token. */
export function tokenView(token: StoredToken): TokenView {
  return {
    id: token.id,
    name: token.name,
    "created-at": rfc3339(token.createdAt),
    "expires-at": rfc3339(token.expiresAt),
    "last-used-at": token.lastUsedAt === null ? null : rfc3339(token.lastUsedAt),
  };
}

function toStoredToken(
  row: Pick<TokenTable, "id" | "user_id" | "name" | "created_at" | "expires_at" | "last_used_at">,
): StoredToken {
  return {
    id: row.id,
    userId: row.user_id,
    name: row.name,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    lastUsedAt: row.last_used_at,
  };
}

/** 404 `token <name> not found`. */
export function tokenNotFound(name: string): HttpError {
  return new HttpError(404, `token ${name} not found`);
}

const COLUMNS = ["id", "user_id", "name", "created_at", "expires_at", "last_used_at"] as const;

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
   * @returns the token, to show once, and what is stored of it
   * @throws HttpError 409 `token <name> already exists` when the user has a token of that name
   */
  async create(
    userId: string,
    name: string,
    validityDays: number,
    now: number,
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
    };
    const result = await this.#db
      .insertInto("registry_token")
      .values(row)
      .onConflict((conflict) => conflict.columns(["user_id", "name"]).doNothing())
      .executeTakeFirst();
    if (Number(result.numInsertedOrUpdatedRows ?? 0) === 0) throw new HttpError(409, `token ${name} already exists`);
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
   * @throws HttpError 404 `token <name> not found`
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

  /** The token whose SHA-256 is `hash`, with its user: one lookup in a unique index. */
  async findOwner(hash: string): Promise<TokenOwner | undefined> {
    const row = await this.#db
      .selectFrom("registry_token as t")
      .innerJoin("registry_user as u", "u.id", "t.user_id")
      .select([
        "t.id as tokenId",
        "t.expires_at as expiresAt",
        "t.last_used_at as lastUsedAt",
        "u.id as userId",
        "u.name as userName",
        "u.role as role",
        "u.active as active",
      ])
      .where("t.hash", "=", hash)
      .executeTakeFirst();
    return row === undefined ? undefined : { ...row, active: row.active === 1 };
  }

  /**
   * Records a use of a token, unless the stored time of use is less than `minIntervalMs` older
   * than `at` (or newer). The condition is in the statement, so instances sharing a database, each
   * throttling its own writes, still change the row at most once a minute (registry.md §3), and a
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
