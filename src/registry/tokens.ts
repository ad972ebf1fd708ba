/**
 * API tokens (docs/registry.md): their format, their hash, the rules of a token request and their API
 * view (storage.ts keeps them). The database keeps only the SHA-256 of a token, so authenticating is
 * one indexed lookup.
 */
import { createHash, randomBytes } from "node:crypto";
import type { Role } from "../platform/auth.js";
import { NotFoundError } from "../platform/errors.js";
import { rfc3339 } from "../platform/time.js";
import {
  described,
  integer,
  object,
  optional,
  required,
  string,
  ValidationError,
  type Validator,
  withDefault,
} from "../platform/validation.js";
import { cratePatterns, tokenScopes } from "./cargo/scopes.js";
import { userName } from "./users.js";

/** What every token starts with, so a leaked one is recognisable (secret scanners). */
export const TOKEN_PREFIX = "vigie_";

/** `vigie_` and 32 random bytes in base64url without padding (43 characters). */
export const TOKEN_FORMAT = /^vigie_[A-Za-z0-9_-]{43}$/;

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

/** The most characters (Unicode code points) a token name may have. */
export const TOKEN_NAME_MAX = 100;

/**
 * What a token name may not contain: control characters (C0, DEL, C1), line and paragraph
 * separators, lone surrogates (not text at all), and the bidirectional embeddings, overrides and
 * isolates (U+202A–U+202E, U+2066–U+2069), which make a name display as another one.
 */
const NOT_PRINTABLE_CLASS = String.raw`\p{Cc}\p{Zl}\p{Zp}\p{Cs}\u202A-\u202E\u2066-\u2069`;
const NOT_PRINTABLE = new RegExp(`[${NOT_PRINTABLE_CLASS}]`, "u");

/** The rule of token names, worded for errors. */
export const TOKEN_NAME_RULE = `must be 1 to ${TOKEN_NAME_MAX} characters of printable text (spaces allowed, no control characters)`;

/**
 * A token name: 1–100 characters (code points, as PostgreSQL's `varchar(100)`
 * counts) of printable Unicode, spaces included (`laptop ci`, `clé de déploiement`), no control
 * characters. Taken as given: not trimmed.
 */
export const tokenName: Validator<string> = described(
  (value, path) => {
    if (typeof value !== "string") throw new ValidationError(path, TOKEN_NAME_RULE, value);
    let length = 0;
    for (const _ of value) length += 1;
    if (length === 0 || length > TOKEN_NAME_MAX || NOT_PRINTABLE.test(value)) {
      throw new ValidationError(path, TOKEN_NAME_RULE, value);
    }
    return value;
  },
  // JSON Schema counts lengths in code points too.
  { type: "string", minLength: 1, maxLength: TOKEN_NAME_MAX, pattern: `^[^${NOT_PRINTABLE_CLASS}]*$` },
);

/**
 * The body of POST /api/v1/registry/token. `password` is only checked for type and size here: a
 * password that breaks the rules of a user's password is simply a wrong one (401), counted by the rate limit.
 * `scopes` and `crates` are optional non-empty arrays, duplicates removed; absent
 * (or null) means all.
 *
 * @throws ValidationError naming the field: `name: is required`, `scopes[1]: must be one of ...`
 */
export const newTokenBody = object(
  {
    name: required(tokenName),
    user: required(userName),
    password: required(string({ min: 1, max: 1024 })),
    /** Days, 1–3650, default 365. */
    validity: withDefault(integer(1, 3650), 365),
    /** Cargo scopes; absent: all. */
    scopes: optional(tokenScopes),
    /** Crate name patterns; absent: every crate. */
    crates: optional(cratePatterns),
  },
  { unknownKeys: "ignore" },
);

/** A valid body of POST /api/v1/registry/token. */
export type NewTokenBody = ReturnType<typeof newTokenBody>;

/**
 * The limits of a Cargo token, set when it is created and never changed: scope names
 * and crate name patterns, each `undefined` for all. A token with either one is "scoped", for
 * Cargo only.
 */
export interface TokenLimits {
  readonly scopes?: readonly string[] | undefined;
  readonly crates?: readonly string[] | undefined;
}

/**
 * A token as the API lists it (dates are RFC 3339 UTC strings); `scopes` and `crates` only when
 * the token has them.
 */
export interface TokenView {
  readonly id: string;
  readonly name: string;
  readonly "created-at": string;
  readonly "expires-at": string;
  readonly "last-used-at": string | null;
  readonly scopes?: readonly string[];
  readonly crates?: readonly string[];
}

/** A stored token, without its hash. Times in milliseconds since the epoch. */
export interface StoredToken extends TokenLimits {
  readonly id: string;
  readonly userId: string;
  readonly name: string;
  readonly createdAt: number;
  readonly expiresAt: number;
  readonly lastUsedAt: number | null;
}

/**
 * What authenticating a token needs: the token (with its limits) and its user, read in one indexed
 * lookup.
 */
export interface TokenOwner extends TokenLimits {
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

/** The API view of a stored token; `scopes` and `crates` appear only when set. */
export function tokenView(token: StoredToken): TokenView {
  return {
    id: token.id,
    name: token.name,
    "created-at": rfc3339(token.createdAt),
    "expires-at": rfc3339(token.expiresAt),
    "last-used-at": token.lastUsedAt === null ? null : rfc3339(token.lastUsedAt),
    ...(token.scopes === undefined ? {} : { scopes: token.scopes }),
    ...(token.crates === undefined ? {} : { crates: token.crates }),
  };
}

/** `token <name> not found`. */
export function tokenNotFound(name: string): NotFoundError {
  return new NotFoundError(`token ${name} not found`);
}
