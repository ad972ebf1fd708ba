/**
 * The rate limit of token creations, the registry's sign-in (a token is created with the user's
 * password). Three sliding windows of failed attempts, each with its own limit:
 *
 * - per client address, whatever the user: 10 failures per 15 minutes, then every attempt from that
 *   address is refused (429) before its password is checked;
 * - per user name, whatever the address: 10 failures per 15 minutes put the user under guessing.
 *   This does not refuse everyone (else anybody could lock the real admin out by failing on purpose
 *   from a few addresses): it only tightens the next rule;
 * - per user name and address, while the user is under guessing: 1 failure per 15 minutes. An
 *   address that has not failed for that user in the window still has its password checked (the
 *   right one creates the token); one that has is refused before the check.
 *
 * So a correct password from an address with no recent failure is always accepted, and guessing a
 * user's password from many addresses costs one address per guess and per 15 minutes once 10
 * guesses failed, instead of ten. Successes and refusals are not failures.
 */
import { createHash } from "node:crypto";
import type { Duration } from "../platform/duration.js";
import type { RateLimitPolicy } from "../platform/rate-limit.js";
import { duration, type Infer, integer, object, withDefault } from "../platform/validation.js";
import type { FailureLimiter } from "./storage.js";

const FIFTEEN_MINUTES = 15 * 60_000;
const FIFTEEN_MINUTES_TEXT: Duration = { text: "15m", milliseconds: FIFTEEN_MINUTES };

/**
 * `registry.sign-in`: the limits of failed token creations, counted over one sliding `window`
 * (default 15m, at least 1s): `failures-per-address` (default 10), `failures-per-user` (default
 * 10) and `failures-per-user-and-address` (default 1), read as {@link SignInLimits} says.
 */
export const signInSection = object(
  {
    "failures-per-address": withDefault(integer(1, 1_000_000), 10),
    "failures-per-user": withDefault(integer(1, 1_000_000), 10),
    "failures-per-user-and-address": withDefault(integer(1, 1_000_000), 1),
    window: withDefault(duration(1_000), FIFTEEN_MINUTES_TEXT),
  },
  { unknownKeys: "reject", optional: true },
);

/** The validated `registry.sign-in` section. */
export type SignInSettings = Infer<typeof signInSection>;

/** The limits a `registry.sign-in` section sets. */
export function signInLimitsOf(settings: SignInSettings): SignInLimits {
  const windowMs = settings.window.milliseconds;
  return {
    address: { limit: settings["failures-per-address"], windowMs },
    user: { limit: settings["failures-per-user"], windowMs },
    userAddress: { limit: settings["failures-per-user-and-address"], windowMs },
  };
}

/** The three windows of the sign-in rate limit; every one counts failed attempts only. */
export interface SignInLimits {
  /** Failures per client address, any user, before that address is refused; default 10 per 15 minutes. */
  readonly address: RateLimitPolicy;
  /** Failures per user name, any address, before the user is under guessing; default 10 per 15 minutes. */
  readonly user: RateLimitPolicy;
  /**
   * Failures per user name and client address, before that address is refused for that user, while
   * the user is under guessing; default 1 per 15 minutes (an address that failed once waits).
   */
  readonly userAddress: RateLimitPolicy;
}

/** The defaults: 10, 10 and 1 failures per 15 minutes. */
export const SIGN_IN_LIMITS: SignInLimits = {
  address: { limit: 10, windowMs: FIFTEEN_MINUTES },
  user: { limit: 10, windowMs: FIFTEEN_MINUTES },
  userAddress: { limit: 1, windowMs: FIFTEEN_MINUTES },
};

/** The widest key the failure table holds. */
const MAX_KEY = 200;

/**
 * A key of the failure table: itself when it fits in 200 characters, else its SHA-256 (a client
 * address taken from `X-Forwarded-For` may be any string).
 */
export function failureKey(key: string): string {
  return key.length <= MAX_KEY ? key : `sha256:${createHash("sha256").update(key).digest("hex")}`;
}

/** Applies {@link SignInLimits} to the failures a {@link FailureLimiter} remembers. */
export class SignInLimiter {
  constructor(
    readonly failures: FailureLimiter,
    readonly limits: SignInLimits = SIGN_IN_LIMITS,
  ) {}

  /** The longest window, in milliseconds: how long a failure must be remembered. */
  static keepMs(limits: SignInLimits): number {
    return Math.max(limits.address.windowMs, limits.user.windowMs, limits.userAddress.windowMs);
  }

  /**
   * Whether an attempt for `user` from `address` is refused before its password is checked.
   *
   * @param now milliseconds since the epoch
   * @returns whole seconds to wait (`Retry-After`), or `undefined` when the password may be checked
   */
  async refusal(user: string, address: string, now: number): Promise<number | undefined> {
    const keys = keysOf(user, address);
    const addressWait = await this.failures.wait(keys.address, this.limits.address, now);
    if (addressWait !== undefined) return addressWait;
    const userWait = await this.failures.wait(keys.user, this.limits.user, now);
    if (userWait === undefined) return undefined;
    const pairWait = await this.failures.wait(keys.userAddress, this.limits.userAddress, now);
    // Free again when either the user is no longer under guessing or this address's failure ages out.
    return pairWait === undefined ? undefined : Math.min(userWait, pairWait);
  }

  /**
   * Records a failed attempt (unknown user or wrong password) under its three keys.
   *
   * @param now milliseconds since the epoch
   */
  async failed(user: string, address: string, now: number): Promise<void> {
    const keys = keysOf(user, address);
    await this.failures.record([keys.address, keys.user, keys.userAddress], now);
  }
}

function keysOf(user: string, address: string): { address: string; user: string; userAddress: string } {
  return {
    address: failureKey(`address:${address}`),
    user: failureKey(`user:${user}`),
    userAddress: failureKey(`user-address:${user} ${address}`),
  };
}
