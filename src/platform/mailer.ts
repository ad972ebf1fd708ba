/**
 * E-mail to chosen recipients (docs/notifiers.md, "Mail from modules"): a module that writes to
 * people directly (comment moderation, reply notifications) hands a {@link Mail} to the platform
 * through {@link Mailer}, which sends it with the SMTP settings of a declared `email` output. Unlike
 * notifications, the module chooses the recipients and the headers; the output's own `to` and
 * templates are not used.
 */

/** One message to send. */
export interface Mail {
  /** The name of a declared `email` output whose SMTP server, `from` and limits are used. */
  readonly output: string;
  /** Bare addresses (`a@example.org`), 1 to 100. */
  readonly to: readonly string[];
  /** One line; longer than 250 characters is cut. */
  readonly subject: string;
  /** The plain text part. */
  readonly text: string;
  /** An HTML part, when there is one. */
  readonly html?: string;
  /** Extra headers (`List-Unsubscribe` …); values on one line. */
  readonly headers?: Readonly<Record<string, string>>;
}

/**
 * How a message's delivery ended: `delivered`; `failed` (refused by the server, or retries
 * exhausted, `reason` says which); `dropped` (queue full, output unknown or stopping).
 */
export type MailOutcome = "delivered" | "failed" | "dropped";

/** Where modules hand e-mail. */
export interface Mailer {
  /** Whether `output` is a declared `email` output. */
  canSend(output: string): boolean;
  /**
   * Queues `mail` and returns at once: `true` when queued, `false` when dropped (unknown output,
   * queue full, stopping). Never throws. `onOutcome` is told once how the delivery ended.
   */
  send(mail: Mail, onOutcome?: (outcome: MailOutcome, reason?: string) => void): boolean;
}

/** A mailer without any `email` output: every message is dropped (tests, modules without mail). */
export const NO_MAILER: Mailer = {
  canSend: () => false,
  send: (_mail, onOutcome) => {
    onOutcome?.("dropped", "no email output");
    return false;
  },
};
