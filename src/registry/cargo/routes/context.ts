/**
 * What every Cargo route shares: its options and the access checks (token, crate, ownership) built
 * once from them, so each route file registers only its own handlers.
 */
import type { FastifyRequest } from "fastify";
import type Semver from "semver";
import { type Auth, type Principal, readToken } from "../../../platform/auth.js";
import { ForbiddenError, NotFoundError, VigieError } from "../../../platform/errors.js";
import { lazyLibrary } from "../../../platform/lazy.js";
import type { UserStore } from "../../storage.js";
import type { CargoSettings } from "../config.js";
import type { CrateFiles } from "../files.js";
import type { IndexCache } from "../index-cache.js";
import type { CargoMetrics } from "../metrics.js";
import { canonicalCrateName, crateName } from "../names.js";
import { publishVersion } from "../publish.js";
import type { ReleasePublisher } from "../release-events.js";
import { type CargoScope, missingScope } from "../scopes.js";
import type { CargoStore, StoredCrate } from "../storage.js";

/** semver, loaded with the Cargo registry's first request (start-up skips it). */
const semver = lazyLibrary<typeof Semver>("semver");

/** What the Cargo routes need. */
export interface CargoRoutesOptions {
  readonly settings: CargoSettings;
  /** `http.public-url`, without a trailing slash. */
  readonly publicUrl: string;
  readonly store: CargoStore;
  readonly files: CrateFiles;
  /** Rendered index files, bounded by `index-cache-size`. */
  readonly indexCache: IndexCache;
  readonly users: UserStore;
  readonly auth: Auth;
  readonly metrics: CargoMetrics;
  /** Where publishes, yanks and owner changes go as stream events (`registry.streams`). */
  readonly releases: ReleasePublisher;
  /** Counts a download of a version (flushed to the database in batches). */
  readonly countDownload: (versionId: number) => void;
  /** Milliseconds since the epoch. */
  readonly now: () => number;
}

/** Bytes of every body under `/api/v1/crates` but a publish's (an owners list). */
export const SMALL_BODY = 64 * 1024;

/** The options of the Cargo routes and the access checks they share. */
export interface CargoContext extends CargoRoutesOptions {
  /** `registry.cargo.auth-required`: whether reading needs a token too. */
  readonly authRequired: boolean;
  /**
   * The principal of a request's token, or `undefined` without one when `required` is false.
   * @throws VigieError `VIGIE_ERR_UNAUTHORIZED` (missing, invalid or expired token; with Cargo's WWW-Authenticate),
   *   ForbiddenError
   */
  readonly authenticate: (request: FastifyRequest, required: boolean) => Promise<Principal | undefined>;
  /** The principal of a request's token. @throws as {@link CargoContext.authenticate} */
  readonly requireUser: (request: FastifyRequest) => Promise<Principal>;
  /** The crate of a path segment, whatever its case and `-`/`_`. @throws NotFoundError */
  readonly findCrate: (name: string) => Promise<StoredCrate>;
  /**
   * Lets an owner of the crate or an admin through, with the token's `scope` for the crate.
   * @throws ForbiddenError naming what is missing
   */
  readonly requireOwner: (principal: Principal, crate: StoredCrate, scope: CargoScope) => Promise<void>;
}

/** `crate <name> not found`. */
function crateNotFound(name: string): NotFoundError {
  return new NotFoundError(`crate ${name} not found`);
}

/** Reads a request's token for Cargo, as {@link CargoContext.authenticate}; the mirror's routes use it too. */
export type CargoAuthenticate = CargoContext["authenticate"];

/**
 * The token check of Cargo's routes: 401 answers carry Cargo's `WWW-Authenticate` challenge,
 * naming `<public-url>/me` as where a token is made.
 */
export function cargoAuthenticator(auth: Auth, publicUrl: string): CargoAuthenticate {
  const loginUrl = `${publicUrl}/me`;
  const challenge = { "www-authenticate": `Cargo login_url="${loginUrl}"` };
  // 401 with Cargo's challenge, which tells cargo where a token is made.
  const unauthorized = (message: string) => new VigieError("VIGIE_ERR_UNAUTHORIZED", message, challenge);

  const authenticate = async (request: FastifyRequest, required: boolean): Promise<Principal | undefined> => {
    const token = readToken(request.headers.authorization);
    if (token === undefined) {
      if (!required) return undefined;
      throw unauthorized(
        `this registry needs a token: create one (see ${loginUrl}) and run cargo login --registry <name>`,
      );
    }
    // A token limited by scopes is for these routes: each checks its scope with missingScope.
    const result = await auth.check(token, "tech", { scoped: true });
    switch (result.outcome) {
      case "ok":
        return result.principal;
      case "expired":
        throw unauthorized(`token expired: create another one (see ${loginUrl})`);
      case "inactive":
        throw new ForbiddenError("the token's user is not active");
      case "forbidden":
        throw new ForbiddenError("this token may not use the Cargo registry");
      default:
        throw unauthorized(`invalid token: create one (see ${loginUrl}) and run cargo login`);
    }
  };
  return authenticate;
}

/** Builds the access checks of the Cargo routes from their options. */
export function cargoContext(options: CargoRoutesOptions): CargoContext {
  const { settings, publicUrl, store, auth } = options;
  const authenticate = cargoAuthenticator(auth, publicUrl);
  return {
    ...options,
    authRequired: settings["auth-required"],
    authenticate,
    requireUser: async (request) => {
      const principal = await authenticate(request, true);
      if (principal === undefined) throw new VigieError("VIGIE_ERR_UNAUTHORIZED", "missing token");
      return principal;
    },
    findCrate: async (name) => {
      let valid: string;
      try {
        valid = crateName(name);
      } catch {
        throw crateNotFound(name);
      }
      const crate = await store.findCrate(canonicalCrateName(valid));
      if (crate === undefined) throw crateNotFound(name);
      return crate;
    },
    requireOwner: async (principal, crate, scope) => {
      const missing = missingScope(principal, scope, crate.name);
      if (missing !== undefined) throw new ForbiddenError(missing);
      if (principal.role === "admin" || (await store.isOwner(crate.id, principal.id))) return;
      throw new ForbiddenError(`you are not an owner of crate ${crate.name}`);
    },
  };
}

/** The highest version of a list by SemVer precedence, or `undefined` for an empty list. */
export function highest(versions: readonly string[]): string | undefined {
  let best: string | undefined;
  for (const version of versions) if (best === undefined || semver().gt(version, best)) best = version;
  return best;
}

/** Whether a path segment is a version as published (strict SemVer, build metadata allowed). */
export function isVersion(text: string): boolean {
  try {
    publishVersion(text);
    return true;
  } catch {
    return false;
  }
}
