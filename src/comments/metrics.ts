/**
 * The comments module's metrics (comments.md §8), and those of the cache of the public list
 * (list-cache.ts; platform.md §8 wants what a bound drops counted). The `website` label only ever
 * holds names that passed the rules of §2 (and, with configured websites, a configured name), so the
 * series count is bounded by the websites in use.
 */
import { Counter, type Registry } from "prom-client";
import type { ListCacheObserver } from "./list-cache.js";

/** Why a comment was refused: the `reason` label of `comments_rejected_total`. */
export type RejectionReason = "invalid" | "challenge" | "rate_limit";

/** The counters of the comments module, registered in the server's registry. */
export class CommentMetrics {
  readonly #added: Counter<"website">;
  readonly #rejected: Counter<"website" | "reason">;
  readonly #issued: Counter<"website">;
  /** The reports of the list cache, label children resolved once: the hit path runs per request. */
  readonly listCache: Required<ListCacheObserver>;

  constructor(registry: Registry) {
    this.#added = new Counter({
      name: "comments_added_total",
      help: "Comments accepted and stored, by website.",
      labelNames: ["website"] as const,
      registers: [registry],
    });
    this.#rejected = new Counter({
      name: "comments_rejected_total",
      help: "Comments refused, by website and reason (invalid, challenge, rate_limit).",
      labelNames: ["website", "reason"] as const,
      registers: [registry],
    });
    this.#issued = new Counter({
      name: "challenges_issued_total",
      help: "Challenges issued, by website.",
      labelNames: ["website"] as const,
      registers: [registry],
    });
    const lookups = new Counter({
      name: "comments_list_cache_lookups_total",
      help: "Public lists of approved comments answered from the cache (hit) or read from the database (miss).",
      labelNames: ["result"] as const,
      registers: [registry],
    });
    const dropped = new Counter({
      name: "comments_list_cache_dropped_total",
      help: "Public lists dropped from the cache, or not kept, to stay within its bounds of articles and bytes.",
      registers: [registry],
    });
    const hits = lookups.labels("hit");
    const misses = lookups.labels("miss");
    this.listCache = {
      hit: () => hits.inc(),
      miss: () => misses.inc(),
      dropped: () => dropped.inc(),
    };
  }

  /** Counts an accepted comment. */
  added(website: string): void {
    this.#added.inc({ website });
  }

  /** Counts a refused comment. */
  rejected(website: string, reason: RejectionReason): void {
    this.#rejected.inc({ website, reason });
  }

  /** Counts an issued challenge. */
  challengeIssued(website: string): void {
    this.#issued.inc({ website });
  }
}
