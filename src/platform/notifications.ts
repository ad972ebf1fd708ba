/**
 * Notifications between modules (docs/notifications.md): a module that alerts people (healthcheck
 * alerts, comment e-mail) hands a {@link Notification} to a named output through {@link Notifier},
 * never knowing the output's type. The outputs belong to the platform (top-level `outputs:`), so
 * notifications work whether or not the streams module is enabled.
 */

/** The state an alert reports: `critical` while it is triggered, `ok` once resolved. */
export type NotificationState = "critical" | "ok";

/** Why a notification is sent: the first message, a reminder (`repeat`), or the resolve. */
export type NotificationStatus = "triggered" | "reminder" | "resolved";

/** One alert transition, as templates see it (docs/notifications.md lists the variables). */
export interface Notification {
  /** What the alert is about: the check's (or the service's) name. */
  readonly name: string;
  readonly state: NotificationState;
  readonly status: NotificationStatus;
  /** One line for people: the alert's `description`, else the last result's message. */
  readonly message: string;
  /** When the alert triggered, RFC 3339 (for a resolve: when it had triggered). */
  readonly since: string;
  /** Seconds between `since` and the notification (0 for a trigger). */
  readonly duration: number;
  /** Where to look: the status page, or `http.public-url`. */
  readonly url: string;
  readonly labels: Readonly<Record<string, string>>;
  /**
   * A stable key of the alert (`<check>/<output>`), the same for its trigger, reminders and resolve:
   * PagerDuty's `dedup_key`, the e-mail thread, the Matrix transaction prefix.
   */
  readonly key: string;
}

/**
 * How the delivery of one notification ended: `delivered`, `failed` (refused by the service, or
 * retries exhausted, `reason` says which) or `dropped` (the output's queue was full or stopping).
 */
export type DeliveryOutcome = "delivered" | "failed" | "dropped";

/** Told once how a notification's delivery ended. */
export type OutcomeListener = (outcome: DeliveryOutcome, reason?: string) => void;

/** Where a module hands notifications, without knowing the outputs' types. */
export interface Notifier {
  /** Whether an output of that name is declared (validation of `alerts[].output`). */
  has(output: string): boolean;
  /**
   * Enqueues `notification` for `output` (grouped with others to the same output when
   * `notifications.group-threshold` is reached) and returns at once; never throws. `onOutcome` is
   * called once when its delivery ends. An undeclared output ends as `dropped` at once.
   */
  notify(output: string, notification: Notification, onOutcome?: OutcomeListener): void;
}
