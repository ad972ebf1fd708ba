/**
 * The cache of the public list of approved comments (`GET /api/v1/comment/<website>/<article>`):
 * per article, the JSON text of the answer and its entity tag, so that a read
 * costs neither a query nor a serialisation. Plain TypeScript, no Fastify and no SQL: the route
 * passes the query as a function, and the routes that write call {@link ListCache.invalidate}.
 *
 * Bounds, as every cache of Vigie has: at most {@link LIST_CACHE_MAX_ARTICLES} articles
 * and {@link LIST_CACHE_MAX_BYTES} bytes of JSON text in all, the least recently used article
 * dropped first; a list longer than {@link LIST_CACHE_MAX_ENTRY_BYTES} is never kept (it is read
 * from the database each time, as without the cache). Every list dropped or not kept for these
 * bounds is reported to {@link ListCacheObserver.dropped} (a metric).
 *
 * Instances: an in-process cache cannot see the writes of another Vigie instance.
 * On SQLite only one process serves the database, and every write of the API goes through this
 * process's routes, which invalidate: entries live until invalidated or dropped (no TTL); a write of
 * another process (`vigie comments import`) clears the whole cache within a second (see
 * {@link ListCache.clear}, called by the module when SQLite's data version changes). On PostgreSQL several
 * instances may share the database, so an entry lives at most {@link LIST_CACHE_SHARED_TTL_MS}
 * (1 s): a comment approved or deleted through another instance shows on this one within a second;
 * writes through this instance show at once. The admin routes never use this cache: every change
 * on the moderation page is visible through the API at once.
 */
import { createHash } from "node:crypto";

/** Most articles whose list is kept at once. */
export const LIST_CACHE_MAX_ARTICLES = 1000;

/** Most bytes (UTF-8 JSON text) kept in all: 32 MiB. */
export const LIST_CACHE_MAX_BYTES = 32 * 1024 * 1024;

/** A list longer than this many bytes (UTF-8 JSON text, 1 MiB, some 5000 comments) is never kept. */
export const LIST_CACHE_MAX_ENTRY_BYTES = 1024 * 1024;

/**
 * How long, in milliseconds, an entry lives when several instances may share the database
 * (PostgreSQL): the longest another instance's write stays invisible on this one.
 */
export const LIST_CACHE_SHARED_TTL_MS = 1000;

/** The answer of the list route, ready to send. */
export interface CachedList {
  /** The JSON text, exactly as `JSON.stringify` writes the array of comments. */
  readonly body: string;
  /** A strong entity tag of `body`, quoted (RFC 9110 §8.8.3): `"<22 base64url characters>"`. */
  readonly etag: string;
}

/** What the cache reports, for metrics. Every method is optional. */
export interface ListCacheObserver {
  /** A list was answered from the cache. */
  hit?(): void;
  /** A list was read from the database. */
  miss?(): void;
  /** A list was dropped (least recently used) or not kept, to stay within the bounds. */
  dropped?(): void;
}

/** Options of {@link ListCache}; the defaults are the constants above. */
export interface ListCacheOptions {
  /** Most articles kept; at least 1. */
  readonly maxArticles?: number;
  /** Most bytes of JSON text kept in all. */
  readonly maxBytes?: number;
  /** Longest list kept, in bytes of JSON text. */
  readonly maxEntryBytes?: number;
  /**
   * Lifetime of an entry in milliseconds, counted from the start of the read that filled it;
   * `undefined`: until invalidated or dropped (one instance, SQLite).
   */
  readonly ttlMs?: number | undefined;
  /** A monotonic clock in milliseconds (default `performance.now`); only read with a TTL. */
  readonly clock?: () => number;
  readonly observer?: ListCacheObserver;
}

/**
 * The strong entity tag of a JSON text: the first 128 bits of its SHA-256 in base64url, quoted.
 * Derived from the content alone, so every instance gives the same list the same tag and a browser
 * revalidating against another instance behind a load balancer still gets its 304.
 */
export function listEntityTag(body: string): string {
  return `"${createHash("sha256").update(body).digest().subarray(0, 16).toString("base64url")}"`;
}

/** One entity tag of an `If-None-Match` list (RFC 9110 §8.8.3): optional `W/`, then the quoted tag. */
const ENTITY_TAG = /(?:W\/)?("[^"]*")/g;

/**
 * Whether a request with this `If-None-Match` header gets 304 Not Modified for a representation
 * tagged `etag` (RFC 9110 §13.1.2): the header is `*`, or one of its tags matches by the weak
 * comparison (RFC 9110 §8.8.3.2, the `W/` prefix ignored). No header: false.
 *
 * @param header the raw header value, `undefined` when absent
 * @param etag the current tag, quoted
 */
export function ifNoneMatchHolds(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  if (header.trim() === "*") return true;
  for (const match of header.matchAll(ENTITY_TAG)) if (match[1] === etag) return true;
  return false;
}

interface Entry extends CachedList {
  /** Bytes of `body` in UTF-8. */
  readonly bytes: number;
  /** Clock reading (milliseconds) when the read that filled it started; 0 without a TTL. */
  readonly since: number;
}

/**
 * The per-article cache of approved lists; see the file's comment for its bounds and its TTL.
 * Keys are a website name and an article name, already checked against their rules.
 */
export class ListCache {
  readonly #maxArticles: number;
  readonly #maxBytes: number;
  readonly #maxEntryBytes: number;
  readonly #ttlMs: number | undefined;
  readonly #clock: () => number;
  readonly #observer: ListCacheObserver;
  /** In least recently used order: the first key is dropped first. */
  readonly #entries = new Map<string, Entry>();
  #bytes = 0;
  /**
   * Counts invalidations. A read that started before one may have seen the database before the
   * write, so what it read is not kept (it is still answered). One counter for every article keeps
   * this bounded; an invalidation only costs the reads in flight at that moment their entry.
   */
  #generation = 0;

  /** @throws RangeError when a bound is not a positive number */
  constructor(options: ListCacheOptions = {}) {
    this.#maxArticles = options.maxArticles ?? LIST_CACHE_MAX_ARTICLES;
    this.#maxBytes = options.maxBytes ?? LIST_CACHE_MAX_BYTES;
    this.#maxEntryBytes = Math.min(options.maxEntryBytes ?? LIST_CACHE_MAX_ENTRY_BYTES, this.#maxBytes);
    for (const [name, value] of [
      ["maxArticles", this.#maxArticles],
      ["maxBytes", this.#maxBytes],
    ] as const) {
      if (!(value >= 1)) throw new RangeError(`${name} must be at least 1, not ${value}`);
    }
    this.#ttlMs = options.ttlMs;
    this.#clock = options.clock ?? (() => performance.now());
    this.#observer = options.observer ?? {};
  }

  /** How many articles are kept. */
  get size(): number {
    return this.#entries.size;
  }

  /** How many bytes of JSON text are kept. */
  get bytes(): number {
    return this.#bytes;
  }

  /**
   * The list of an article: from the cache when it holds a live entry, else `read()` serialised
   * with `JSON.stringify` (kept when no invalidation happened meanwhile and it fits the bounds).
   *
   * @param read the approved comments of the article, oldest first, from the database
   * @throws whatever `read` throws (nothing is kept then)
   */
  async load(website: string, article: string, read: () => Promise<readonly unknown[]>): Promise<CachedList> {
    const key = keyOf(website, article);
    const cached = this.#entries.get(key);
    if (cached !== undefined) {
      if (this.#ttlMs === undefined || this.#clock() - cached.since < this.#ttlMs) {
        // Most recently used goes last.
        this.#entries.delete(key);
        this.#entries.set(key, cached);
        this.#observer.hit?.();
        return cached;
      }
      this.#remove(key);
    }
    this.#observer.miss?.();
    const generation = this.#generation;
    const since = this.#ttlMs === undefined ? 0 : this.#clock();
    const body = JSON.stringify(await read());
    const entry: Entry = { body, etag: listEntityTag(body), bytes: Buffer.byteLength(body), since };
    if (generation === this.#generation) this.#keep(key, entry);
    return entry;
  }

  /**
   * Forgets the list of an article. Call it after every write that can change the list (a comment
   * added, approved, deleted; all comments of the article deleted), once the write is committed, and
   * also when the write failed (it may have been committed all the same).
   */
  invalidate(website: string, article: string): void {
    this.#generation++;
    this.#remove(keyOf(website, article));
  }

  /**
   * Forgets every list: another process wrote to the database (`vigie comments import` on SQLite),
   * and which articles it changed is not known.
   */
  clear(): void {
    this.#generation++;
    this.#entries.clear();
    this.#bytes = 0;
  }

  #keep(key: string, entry: Entry): void {
    this.#remove(key);
    if (entry.bytes > this.#maxEntryBytes) {
      this.#observer.dropped?.();
      return;
    }
    this.#entries.set(key, entry);
    this.#bytes += entry.bytes;
    // A Map iterates in insertion order: its first key is the least recently stored.
    for (const oldest of this.#entries.keys()) {
      if (this.#entries.size <= this.#maxArticles && this.#bytes <= this.#maxBytes) break;
      this.#remove(oldest);
      this.#observer.dropped?.();
    }
  }

  #remove(key: string): void {
    const entry = this.#entries.get(key);
    if (entry === undefined) return;
    this.#entries.delete(key);
    this.#bytes -= entry.bytes;
  }
}

/** Website names have no `/`, so the pair is unambiguous. */
function keyOf(website: string, article: string): string {
  return `${website}/${article}`;
}
