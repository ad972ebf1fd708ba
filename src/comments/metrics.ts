/**
 * The comments module's metrics (comments.md §8). The `website` label only ever holds names that
 * passed the rules of §2 (and, with configured websites, a configured name), so the series count is
 * bounded by the websites in use.
 */
import { Counter, type Registry } from "prom-client";

/** Why a comment was refused: the `reason` label of `comments_rejected_total`. */
export type RejectionReason = "invalid" | "challenge" | "rate_limit";

/** The counters of the comments module, registered in the server's registry. */
export class CommentMetrics {
  readonly #added: Counter<"website">;
  readonly #rejected: Counter<"website" | "reason">;
  readonly #issued: Counter<"website">;

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
