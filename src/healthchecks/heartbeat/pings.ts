/**
 * What a ping request says (docs/healthchecks.md, "Heartbeat checks"): the signal of its path, its
 * body as text, and whether its key pinged too often. Plain TypeScript: no Fastify, no SQL.
 */
import type { PingSignal } from "./tracker.js";

/** The body kept of a ping, bytes: more is dropped (truncated, never refused). */
export const MAX_PING_BODY_BYTES = 100 * 1024;

/** Pings one key may send per second; more get a 429. */
export const PINGS_PER_SECOND = 10;

/** Keys the rate limiter remembers at most (it only counts known keys; this bounds it anyway). */
export const MAX_RATE_KEYS = 100_000;

const EXIT_STATUS = /^(?:0|[1-9][0-9]{0,2})$/;

/**
 * The signal of the path segment after the key: none (`/ping/<key>`) is a success, `start`,
 * `fail`, `log`, or an exit status 0–255 written in decimal without leading zeros.
 * @returns undefined for anything else (`/ping/<key>/256`, `/ping/<key>/007`): the route's 404
 */
export function signalOf(segment: string | undefined): PingSignal | undefined {
  if (segment === undefined || segment === "") return { kind: "success" };
  if (segment === "start" || segment === "fail" || segment === "log") return { kind: segment };
  if (!EXIT_STATUS.test(segment)) return undefined;
  const status = Number(segment);
  return status <= 255 ? { kind: "exit", status } : undefined;
}

const decoder = new TextDecoder("utf-8", { fatal: false });

/**
 * A ping's body as text: its first {@link MAX_PING_BODY_BYTES} bytes, decoded as UTF-8 with each
 * invalid sequence replaced by U+FFFD (a sequence cut at the limit included).
 */
export function bodyText(body: Uint8Array | undefined): string {
  if (body === undefined || body.length === 0) return "";
  const kept = body.length > MAX_PING_BODY_BYTES ? body.subarray(0, MAX_PING_BODY_BYTES) : body;
  return decoder.decode(kept);
}

/** A `rid`: a UUID (any version), compared in lower case. */
const RID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Whether `value` is a UUID usable as a `rid`. */
export function isRid(value: string): boolean {
  return RID.test(value);
}

interface Window {
  second: number;
  count: number;
}

/**
 * At most {@link PINGS_PER_SECOND} pings per key in each second of the clock (fixed windows: a
 * cron job pings once a minute, a loop gone wrong hundreds of times a second).
 */
export class PingRateLimiter {
  readonly #windows = new Map<string, Window>();

  constructor(
    readonly perSecond: number = PINGS_PER_SECOND,
    readonly maxKeys: number = MAX_RATE_KEYS,
  ) {}

  /** Keys counted now. */
  get size(): number {
    return this.#windows.size;
  }

  /**
   * Counts a ping of `key` at `nowMs`.
   * @returns 0 when allowed, else the seconds to wait (the `Retry-After` value)
   */
  take(key: string, nowMs: number): number {
    const second = Math.floor(nowMs / 1000);
    const window = this.#windows.get(key);
    if (window === undefined || window.second !== second) {
      if (window === undefined && this.#windows.size >= this.maxKeys) this.#sweep(second);
      if (window === undefined) this.#windows.set(key, { second, count: 1 });
      else {
        window.second = second;
        window.count = 1;
      }
      return 0;
    }
    if (window.count >= this.perSecond) return 1;
    window.count++;
    return 0;
  }

  /** Forgets a key (its heartbeat was deleted). */
  forget(key: string): void {
    this.#windows.delete(key);
  }

  /** Drops the windows of past seconds; when every key pinged this second, the oldest half. */
  #sweep(second: number): void {
    for (const [key, window] of this.#windows) if (window.second !== second) this.#windows.delete(key);
    if (this.#windows.size < this.maxKeys) return;
    let drop = Math.ceil(this.maxKeys / 2);
    for (const key of this.#windows.keys()) {
      if (drop-- <= 0) break;
      this.#windows.delete(key);
    }
  }
}
