/**
 * An in-process cache of token lookups, so most authenticated requests are answered without
 * waiting for the database (a budget of 0.2 ms of CPU per request).
 *
 * Entries live `ttlMs` (5 s by default). This process drops them as soon as it changes a user or
 * deletes a token; another instance sharing the database sees such a change after at most the TTL
 * (a deactivated user's token keeps working there for up to 5 s). A token's expiry is checked
 * against the clock on every request, so it is exact everywhere.
 */
import type { Principal } from "../platform/auth.js";

/** What the cache keeps of a token and its user. */
export interface CachedToken {
  readonly tokenId: string;
  /** The user, with the token's Cargo limits, which never change once created. */
  readonly principal: Principal;
  readonly active: boolean;
  /** Milliseconds since the epoch. */
  readonly expiresAt: number;
}

interface Entry<V> {
  readonly value: V;
  /** Milliseconds since the epoch after which the entry is stale. */
  readonly staleAt: number;
}

/** Options of {@link TokenCache}. */
export interface TokenCacheOptions {
  /** How long an entry is trusted, in milliseconds; 0 disables the cache. Default 5000. */
  readonly ttlMs?: number;
  /** The most entries kept; the oldest is dropped beyond. Default 10 000. */
  readonly maxEntries?: number;
  /** The clock, milliseconds since the epoch. */
  readonly now?: () => number;
}

/** Token lookups by token hash, with a TTL and a bounded size; `V` is what a lookup keeps. */
export class TokenCache<V extends CachedToken = CachedToken> {
  readonly #entries = new Map<string, Entry<V>>();
  readonly #ttlMs: number;
  readonly #maxEntries: number;
  readonly #now: () => number;
  #generation = 0;

  constructor(options: TokenCacheOptions = {}) {
    this.#ttlMs = options.ttlMs ?? 5_000;
    this.#maxEntries = options.maxEntries ?? 10_000;
    this.#now = options.now ?? Date.now;
  }

  /** The number of entries, stale ones included. */
  get size(): number {
    return this.#entries.size;
  }

  /**
   * Increases on every invalidation. A lookup notes it before asking the database and passes it to
   * {@link set}, so an answer read before an invalidation is not cached after it.
   */
  get generation(): number {
    return this.#generation;
  }

  /** The fresh entry of a token hash, or `undefined` (a stale entry is dropped). */
  get(hash: string): V | undefined {
    const entry = this.#entries.get(hash);
    if (entry === undefined) return undefined;
    if (entry.staleAt <= this.#now()) {
      this.#entries.delete(hash);
      return undefined;
    }
    return entry.value;
  }

  /** Keeps a lookup, unless the cache was invalidated since `generation` was read. */
  set(hash: string, value: V, generation: number): void {
    if (this.#ttlMs <= 0 || generation !== this.#generation) return;
    this.#entries.delete(hash);
    this.#entries.set(hash, { value, staleAt: this.#now() + this.#ttlMs });
    // A Map iterates in insertion order: the first key is the oldest entry.
    for (const oldest of this.#entries.keys()) {
      if (this.#entries.size <= this.#maxEntries) break;
      this.#entries.delete(oldest);
    }
  }

  /** Drops every entry of a user (after its role, activity or existence changed). */
  invalidateUser(userId: string): void {
    this.#drop((value) => value.principal.id === userId);
  }

  /** Drops the entry of a token (after it was deleted). */
  invalidateToken(tokenId: string): void {
    this.#drop((value) => value.tokenId === tokenId);
  }

  /** Drops every entry. */
  clear(): void {
    this.#generation += 1;
    this.#entries.clear();
  }

  #drop(matches: (value: V) => boolean): void {
    this.#generation += 1;
    // At most maxEntries entries, on rare administrative changes: a scan is cheaper than an index.
    for (const [hash, entry] of this.#entries) if (matches(entry.value)) this.#entries.delete(hash);
  }
}
