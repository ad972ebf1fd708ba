/**
 * The comments module's metrics (docs/comments.md), and those of the cache of the public list
 * (list-cache.ts; what a bound drops is counted, so that an operator sees it). The `website` label
 * only ever holds valid website names (and, with configured websites, a configured name), so the
 * series count is bounded by the websites in use.
 */

import type { Counter, Registry } from "prom-client";
import { counter } from "../platform/metrics.js";
import type { ListCacheObserver } from "./list-cache.js";
import type { SpamSignal } from "./spam.js";

/** Why a comment was refused: the `reason` label of `comments_rejected_total`. */
export type RejectionReason = "invalid" | "challenge" | "rate_limit";

/** The counters of the comments module, registered in the server's registry. */
export class CommentMetrics {
  readonly #added: Counter<"website">;
  readonly #rejected: Counter<"website" | "reason">;
  readonly #issued: Counter<"website">;
  readonly #spam: Counter<"signal">;
  /** The reports of the list cache, label children resolved once: the hit path runs per request. */
  readonly listCache: Required<ListCacheObserver>;

  constructor(registry: Registry) {
    this.#added = counter(registry, "comments_added_total", "Comments accepted and stored, by website.", ["website"]);
    this.#rejected = counter(
      registry,
      "comments_rejected_total",
      "Comments refused, by website and reason (invalid, challenge, rate_limit).",
      ["website", "reason"],
    );
    this.#issued = counter(registry, "challenges_issued_total", "Challenges issued, by website.", ["website"]);
    this.#spam = counter(
      registry,
      "comments_spam_total",
      "Comments a spam signal caught, by signal (honeypot, too_fast, links, akismet).",
      ["signal"],
    );
    const lookups = counter(
      registry,
      "comments_list_cache_lookups_total",
      "Public lists of approved comments answered from the cache (hit) or read from the database (miss).",
      ["result"],
    );
    const dropped = counter(
      registry,
      "comments_list_cache_dropped_total",
      "Public lists dropped from the cache, or not kept, to stay within its bounds of articles and bytes.",
    );
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

  /** Counts a comment caught by a spam signal. */
  spam(signal: SpamSignal): void {
    this.#spam.inc({ signal });
  }

  /** Counts an issued challenge. */
  challengeIssued(website: string): void {
    this.#issued.inc({ website });
  }
}
