/**
 * Authentication shared by every module (docs/api.md): the token travels in `Authorization`,
 * raw or as `Bearer <token>`; a verifier (registered by the registry module) maps a token to a user
 * with a role; modules guard routes with {@link Auth.require}.
 */

import { createHash, timingSafeEqual } from "node:crypto";
import type { FastifyReply, FastifyRequest, preHandlerHookHandler } from "fastify";
import { type ErrorCode, VigieError } from "./errors.js";
import { queryOf } from "./query.js";

/** The two roles of a registry user (docs/registry.md). `admin` may do everything `tech` may. */
export type Role = "admin" | "tech";

/**
 * The authenticated caller, set on `request.principal` by a guard. `scopes` and `crates` are the
 * limits of a Cargo token (docs/cargo.md: scope names, crate name patterns), `undefined` meaning all;
 * a principal with either one is "scoped" (see {@link isScoped}).
 */
export interface Principal {
  readonly id: string;
  readonly name: string;
  readonly role: Role;
  /** What the token may do on the Cargo registry (`publish-new`, `yank` …); `undefined`: everything. */
  readonly scopes?: readonly string[] | undefined;
  /** Crate name patterns (`serde`, `acme-*`) the token is for; `undefined`: every crate. */
  readonly crates?: readonly string[] | undefined;
}

/**
 * Whether a principal comes from a token created with `scopes` or `crates` (docs/cargo.md): such a
 * token is for Cargo only, and every guard but those created with `{scoped: true}` refuses it.
 */
export function isScoped(principal: Principal): boolean {
  return principal.scopes !== undefined || principal.crates !== undefined;
}

/** The 403 sentence for a scoped token on a route that is not Cargo's (docs/api.md). */
export const SCOPED_TOKEN_ERROR = "a token with scopes is for Cargo only";

/** How one authentication ended; the values of `registry_auth_total{result}` (docs/registry.md). */
export type AuthOutcome = "ok" | "missing" | "invalid" | "expired" | "inactive" | "forbidden";

/** What a verifier says of a token. */
export type TokenVerification =
  | { readonly outcome: "ok"; readonly principal: Principal }
  | { readonly outcome: "invalid" | "expired" | "inactive" };

/**
 * Maps a token to its user. Returns synchronously when it can (a cache hit), so the guard of a hot
 * route adds no promise.
 */
export type TokenVerifier = (token: string) => TokenVerification | Promise<TokenVerification>;

declare module "fastify" {
  interface FastifyRequest {
    /** The caller, once a guard accepted a registry token; `undefined` otherwise. */
    principal?: Principal;
  }
}

const BEARER = /^bearer\s+/i;

/**
 * The token of an `Authorization` header value: `Bearer <token>` (scheme case-insensitive,
 * RFC 6750 §2.1) or the raw token. Returns `undefined` for a missing or blank header.
 */
export function readToken(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const token = header.replace(BEARER, "").trim();
  return token === "" ? undefined : token;
}

/**
 * Compares two secrets in constant time. Both sides are hashed first so that neither the content
 * nor the length of the expected secret leaks through timing.
 */
export function constantTimeEqual(given: string, expected: string): boolean {
  const a = createHash("sha256").update(given).digest();
  const b = createHash("sha256").update(expected).digest();
  return timingSafeEqual(a, b);
}

const FAILURES: Readonly<Record<Exclude<AuthOutcome, "ok">, readonly [ErrorCode, string]>> = {
  missing: ["VIGIE_ERR_UNAUTHORIZED", "missing token"],
  invalid: ["VIGIE_ERR_UNAUTHORIZED", "invalid token"],
  expired: ["VIGIE_ERR_UNAUTHORIZED", "token expired"],
  inactive: ["VIGIE_ERR_FORBIDDEN", "user is not active"],
  forbidden: ["VIGIE_ERR_FORBIDDEN", "forbidden"],
};

const SCOPED_FAILURE: readonly [ErrorCode, string] = ["VIGIE_ERR_FORBIDDEN", SCOPED_TOKEN_ERROR];

/** Options of {@link Auth.require}. */
export interface GuardOptions {
  /**
   * A module's own secret that also opens the route (the comments admin token): called with the
   * token before the registry is asked; true lets the request through without a principal.
   */
  readonly alsoAccept?: (token: string) => boolean;
  /**
   * A query parameter that may carry the token when `Authorization` is absent: browsers cannot set
   * headers on a WebSocket upgrade. The URL then holds a secret, so it must never be logged.
   */
  readonly queryParameter?: string;
  /**
   * Lets scoped tokens through ({@link isScoped}): only the Cargo routes pass it, and check the scopes
   * of `request.principal` themselves (`missingScope` of src/registry/cargo/scopes.ts). Without it
   * a scoped token gets 403 `a token with scopes is for Cargo only`.
   */
  readonly scoped?: boolean;
}

/** Options of {@link Auth.check}. */
export interface CheckOptions {
  /** Accept a scoped principal (see {@link GuardOptions.scoped}); default false. */
  readonly scoped?: boolean;
}

const MISSING: AuthResult = { outcome: "missing" };
const INVALID: AuthResult = { outcome: "invalid" };
const FORBIDDEN_ROLE: AuthResult = { outcome: "forbidden", reason: "role" };
const FORBIDDEN_SCOPED: AuthResult = { outcome: "forbidden", reason: "scoped" };

/** The authentication hook point: one per server, shared by every module. */
export class Auth {
  #verifier: TokenVerifier | undefined;
  readonly #listeners: Array<(outcome: AuthOutcome) => void> = [];

  /** Registers the verifier of registry tokens (the registry module does, at start-up). */
  setVerifier(verifier: TokenVerifier): void {
    this.#verifier = verifier;
  }

  /** Calls `listener` with the outcome of every registry-token check (metrics). */
  onOutcome(listener: (outcome: AuthOutcome) => void): void {
    this.#listeners.push(listener);
  }

  /**
   * Verifies a token and the role it needs. Without a registered verifier (registry disabled) every
   * token is invalid. A scoped principal is `forbidden` (reason `scoped`) unless `options.scoped`;
   * that comes before the role, so a scoped token hears why whatever its user's role.
   */
  check(token: string | undefined, role: Role, options?: CheckOptions): AuthResult | Promise<AuthResult> {
    const scoped = options?.scoped === true;
    if (token === undefined) return this.#finish(MISSING, role, scoped);
    if (this.#verifier === undefined) return this.#finish(INVALID, role, scoped);
    const verification = this.#verifier(token);
    return verification instanceof Promise
      ? verification.then((result) => this.#finish(result, role, scoped))
      : this.#finish(verification, role, scoped);
  }

  #finish(verification: AuthResult, role: Role, scoped: boolean): AuthResult {
    let result = verification;
    if (verification.outcome === "ok") {
      const { principal } = verification;
      if (!scoped && isScoped(principal)) result = FORBIDDEN_SCOPED;
      else if (role === "admin" && principal.role !== "admin") result = FORBIDDEN_ROLE;
    }
    for (const listener of this.#listeners) listener(result.outcome);
    return result;
  }

  /**
   * A preHandler that lets a request through only with a registry token of an active user having
   * `role` (an admin has every role), or with a token `alsoAccept` recognises. The token comes from
   * `Authorization`, else from the `queryParameter` of the URL when one is named. Answers 401 `missing
   * token` / `invalid token` / `token expired`, 403 `user is not active` / `forbidden` / `a token
   * with scopes is for Cargo only` (a scoped token, unless `scoped`).
   */
  require(role: Role, options: GuardOptions = {}): preHandlerHookHandler {
    const { alsoAccept, queryParameter } = options;
    const checkOptions: CheckOptions = { scoped: options.scoped === true };
    return (request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void) => {
      let token = readToken(request.headers.authorization);
      if (token === undefined && queryParameter !== undefined) {
        const value = queryOf(request.query)[queryParameter];
        if (typeof value === "string" && value !== "") token = value;
      }
      if (token !== undefined && alsoAccept?.(token)) return done();
      const result = this.check(token, role, checkOptions);
      if (result instanceof Promise) {
        result.then((settled) => respond(request, settled, done), done);
      } else {
        respond(request, result, done);
      }
    };
  }
}

/**
 * The result of {@link Auth.check}. `forbidden` says why: the user's `role` is not enough, or the
 * token is `scoped` (for Cargo only); both count as `forbidden` in `registry_auth_total`.
 */
export type AuthResult =
  | TokenVerification
  | { readonly outcome: "missing" }
  | { readonly outcome: "forbidden"; readonly reason: "role" | "scoped" };

function respond(request: FastifyRequest, result: AuthResult, done: (error?: Error) => void): void {
  if (result.outcome === "ok") {
    request.principal = result.principal;
    done();
    return;
  }
  const [code, message] =
    result.outcome === "forbidden" && result.reason === "scoped" ? SCOPED_FAILURE : FAILURES[result.outcome];
  done(new VigieError(code, message));
}
