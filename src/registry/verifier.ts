/**
 * The verifier of registry tokens that the registry registers with the platform's auth hook:
 * SHA-256 of the token, then the in-process cache, else one indexed lookup that
 * joins the user. A cache hit answers synchronously, so a guarded route awaits no promise. The
 * token's Cargo limits come in the same lookup and travel on the principal, built
 * once per lookup: the guard reads them without any further query or allocation.
 */
import type { Principal, TokenVerification } from "../platform/auth.js";
import { isPlainObject } from "../platform/validation.js";
import type { LastUsedRecorder } from "./last-used.js";
import type { CachedToken, TokenCache } from "./token-cache.js";
import { hashToken, isTokenFormat, type TokenOwner } from "./tokens.js";

/** Reads a token and its user by the token's SHA-256. */
export type FindOwner = (hash: string) => Promise<TokenOwner | undefined>;

const INVALID: TokenVerification = { outcome: "invalid" };
const EXPIRED: TokenVerification = { outcome: "expired" };
const INACTIVE: TokenVerification = { outcome: "inactive" };

interface Verified extends CachedToken {
  /** The answer for a valid use, built once per lookup rather than per request. */
  readonly ok: TokenVerification;
}

/** What a change of the registry makes every instance forget: a user's tokens, or one token. */
export type Invalidation = { readonly user: string } | { readonly token: string };

/** Whether a value received from another instance is an {@link Invalidation}. */
export function isInvalidation(value: unknown): value is Invalidation {
  return isPlainObject(value) && (typeof value.user === "string" || typeof value.token === "string");
}

/** Maps tokens to users: outcomes ok, invalid (unknown or malformed), expired, inactive. */
export class RegistryVerifier {
  readonly #findOwner: FindOwner;
  readonly #cache: TokenCache<Verified>;
  readonly #lastUsed: LastUsedRecorder;
  readonly #now: () => number;
  /** Lookups in flight by token hash, so a burst with a new token asks the database once. */
  readonly #inFlight = new Map<string, Promise<Verified | undefined>>();

  constructor(options: {
    findOwner: FindOwner;
    cache: TokenCache<Verified>;
    lastUsed: LastUsedRecorder;
    now: () => number;
  }) {
    this.#findOwner = options.findOwner;
    this.#cache = options.cache;
    this.#lastUsed = options.lastUsed;
    this.#now = options.now;
  }

  /**
   * Verifies a token (the platform's `TokenVerifier`). Synchronous on a cache hit or a malformed
   * token; otherwise resolves after one database lookup.
   *
   * @throws (rejects) when the database fails; the guard answers 500
   */
  readonly verify = (token: string): TokenVerification | Promise<TokenVerification> => {
    if (!isTokenFormat(token)) return INVALID;
    const hash = hashToken(token);
    const cached = this.#cache.get(hash);
    if (cached !== undefined) return this.#outcome(cached);
    let lookup = this.#inFlight.get(hash);
    if (lookup === undefined) {
      lookup = this.#lookUp(hash);
      this.#inFlight.set(hash, lookup);
      // Only this lookup's entry: a forget() may have started a newer one for the same hash.
      const settled = () => {
        if (this.#inFlight.get(hash) === lookup) this.#inFlight.delete(hash);
      };
      lookup.then(settled, settled);
    }
    return lookup.then((verified) => (verified === undefined ? INVALID : this.#outcome(verified)));
  };

  /**
   * Called after this instance changed a user or deleted a token, with what to forget: cluster
   * mode tells the other instances (docs/cluster.md), which apply it with {@link forget}.
   */
  onInvalidate: (change: Invalidation) => void = () => {};

  /** Forgets what is cached of a user's tokens, after the user changed or was deleted. */
  invalidateUser(userId: string): void {
    this.forget({ user: userId });
    this.onInvalidate({ user: userId });
  }

  /** Forgets a deleted token. */
  invalidateToken(tokenId: string): void {
    this.forget({ token: tokenId });
    this.onInvalidate({ token: tokenId });
  }

  /**
   * Forgets a user's or token's cached lookups (a change made here or on another instance), or
   * every lookup (`"all"`: after missing changes, when the change listener reconnected).
   */
  forget(change: Invalidation | "all"): void {
    if (change === "all") this.#cache.clear();
    else if ("user" in change) this.#cache.invalidateUser(change.user);
    else {
      this.#cache.invalidateToken(change.token);
      this.#lastUsed.forget(change.token);
    }
    // A lookup that started before the change may have read the old row: later requests ask again.
    this.#inFlight.clear();
  }

  async #lookUp(hash: string): Promise<Verified | undefined> {
    const generation = this.#cache.generation;
    const owner = await this.#findOwner(hash);
    if (owner === undefined) return undefined;
    // Every principal has the same keys (a limit is undefined when absent): one shape for the guard.
    const principal: Principal = {
      id: owner.userId,
      name: owner.userName,
      role: owner.role,
      scopes: owner.scopes,
      crates: owner.crates,
    };
    const verified: Verified = {
      tokenId: owner.tokenId,
      principal,
      active: owner.active,
      expiresAt: owner.expiresAt,
      ok: { outcome: "ok", principal },
    };
    this.#lastUsed.known(owner.tokenId, owner.lastUsedAt);
    this.#cache.set(hash, verified, generation);
    return verified;
  }

  #outcome(verified: Verified): TokenVerification {
    const now = this.#now();
    if (verified.expiresAt <= now) return EXPIRED;
    if (!verified.active) return INACTIVE;
    this.#lastUsed.used(verified.tokenId, now);
    return verified.ok;
  }
}
