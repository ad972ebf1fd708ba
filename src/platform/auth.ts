/**
 * Authentication shared by every module (platform.md §5): the token travels in `Authorization`,
 * raw or as `Bearer <token>`; a verifier (registered by the registry module) maps a token to a user
 * with a role; modules guard routes with {@link Auth.require}.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { FastifyReply, FastifyRequest, preHandlerHookHandler } from "fastify";
import { isPlainObject } from "./validation.js";

/** The two roles of registry.md §1. `admin` may do everything `tech` may. */
export type Role = "admin" | "tech";

/** The authenticated caller, set on `request.principal` by a guard. */
export interface Principal {
  readonly id: string;
  readonly name: string;
  readonly role: Role;
}

/** How one authentication ended; the values of `registry_auth_total{result}` (registry.md §5). */
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
 * The token of an `Authorization` header value: `Bearer <token>` (scheme case-insensitive, RFC 6750
 * §2.1) or the raw token. Returns `undefined` for a missing or blank header.
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

const FAILURES: Readonly<Record<Exclude<AuthOutcome, "ok">, readonly [number, string]>> = {
  missing: [401, "missing token"],
  invalid: [401, "invalid token"],
  expired: [401, "token expired"],
  inactive: [403, "user is not active"],
  forbidden: [403, "forbidden"],
};

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
}

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
   * token is invalid.
   */
  check(token: string | undefined, role: Role): AuthResult | Promise<AuthResult> {
    if (token === undefined) return this.#finish({ outcome: "missing" }, role);
    if (this.#verifier === undefined) return this.#finish({ outcome: "invalid" }, role);
    const verification = this.#verifier(token);
    return verification instanceof Promise
      ? verification.then((result) => this.#finish(result, role))
      : this.#finish(verification, role);
  }

  #finish(verification: TokenVerification | { outcome: "missing" }, role: Role): AuthResult {
    let result: AuthResult = verification;
    if (verification.outcome === "ok" && role === "admin" && verification.principal.role !== "admin") {
      result = { outcome: "forbidden" };
    }
    for (const listener of this.#listeners) listener(result.outcome);
    return result;
  }

  /**
   * A preHandler that lets a request through only with a registry token of an active user having
   * `role` (an admin has every role), or with a token `alsoAccept` recognises. The token comes from
   * `Authorization`, else from the `queryParameter` of the URL when one is named. Answers 401 `missing
   * token` / `invalid token` / `token expired`, 403 `user is not active` / `forbidden`.
   */
  require(role: Role, options: GuardOptions = {}): preHandlerHookHandler {
    const { alsoAccept, queryParameter } = options;
    return (request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void) => {
      let token = readToken(request.headers.authorization);
      if (token === undefined && queryParameter !== undefined) {
        const query = request.query;
        const value = isPlainObject(query) ? query[queryParameter] : undefined;
        if (typeof value === "string" && value !== "") token = value;
      }
      if (token !== undefined && alsoAccept?.(token)) return done();
      const result = this.check(token, role);
      if (result instanceof Promise) {
        result.then((settled) => respond(request, reply, settled, done), done);
      } else {
        respond(request, reply, result, done);
      }
    };
  }
}

/** The result of {@link Auth.check}. */
export type AuthResult = TokenVerification | { readonly outcome: "missing" | "forbidden" };

function respond(request: FastifyRequest, reply: FastifyReply, result: AuthResult, done: () => void): void {
  if (result.outcome === "ok") {
    request.principal = result.principal;
    done();
    return;
  }
  const [status, message] = FAILURES[result.outcome];
  reply.code(status).type("application/json; charset=utf-8").send({ error: message });
}
