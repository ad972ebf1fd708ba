/**
 * Notifications to the declared outputs (docs/notifications.md): each becomes one event in its
 * output's queue, so it shares the delivery model of every output (bounded queue, retries,
 * metrics). Notifications that become due for one output within `notifications.group-wait` go as
 * one message when more than `notifications.group-threshold` of them are pending: an outage of
 * fifty checks pages once, not fifty times.
 */
import type { DeliveryOutcome, Notification, Notifier, OutcomeListener } from "../notifications.js";
import type { Settled } from "./delivery.js";
import type { Event } from "./event.js";
import type { Outputs } from "./outputs.js";

/** Notifications waiting `group-wait` for one output at most; more are dropped (a bound). */
const MAX_PENDING_PER_OUTPUT = 10_000;

/** How notifications are grouped, from the top-level `notifications` section. */
export interface GroupingSettings {
  /** More than this many pending for one output after the wait go as one message; 0 never groups. */
  readonly threshold: number;
  /** How long the first notification to an output waits for others, in milliseconds; 0 sends at once. */
  readonly waitMs: number;
}

interface Pending {
  readonly event: Event;
  readonly onOutcome: OutcomeListener | undefined;
}

/**
 * A notification as the event its output receives: the fields templates read (docs/notifications.md)
 * plus `service`, `state`, `description` and `time`, so that an `http` or `file` output carries it
 * as a stream event.
 */
export function notificationEvent(notification: Notification, nowMs: number): Event {
  return {
    service: notification.name,
    state: notification.state,
    description: notification.message,
    time: nowMs / 1000,
    status: notification.status,
    since: notification.since,
    duration: String(notification.duration),
    url: notification.url,
    labels: notification.labels,
    key: notification.key,
  };
}

/** The one event of a group: its `alerts` are the notifications' events, `count` how many. */
export function groupEvent(events: readonly Event[], nowMs: number): Event {
  const critical = events.some((event) => event.state !== "ok");
  return {
    service: `${events.length} alerts`,
    state: critical ? "critical" : "ok",
    description: `${events.length} alerts`,
    time: nowMs / 1000,
    status: critical ? "triggered" : "resolved",
    count: events.length,
    alerts: events,
  };
}

/** The platform's {@link Notifier}: enqueues notifications on the declared outputs. */
export class OutputNotifier implements Notifier {
  readonly #outputs: Outputs;
  readonly #settings: GroupingSettings;
  readonly #groups: (output: string) => boolean;
  readonly #now: () => number;
  readonly #pending = new Map<string, Pending[]>();
  readonly #timers = new Set<NodeJS.Timeout>();
  /** Events enqueued whose delivery someone waits to hear about. */
  readonly #listeners = new Map<Event, OutcomeListener>();

  /**
   * @param groups whether notifications to that output may be grouped (PagerDuty keeps one event per alert)
   * @param now a clock in milliseconds (tests)
   */
  constructor(outputs: Outputs, settings: GroupingSettings, groups: (output: string) => boolean, now = Date.now) {
    this.#outputs = outputs;
    this.#settings = settings;
    this.#groups = groups;
    this.#now = now;
  }

  has(output: string): boolean {
    return this.#outputs.has(output);
  }

  notify(output: string, notification: Notification, onOutcome?: OutcomeListener): void {
    if (!this.#outputs.has(output)) {
      onOutcome?.("dropped", `output ${output} is not declared`);
      return;
    }
    const entry: Pending = { event: notificationEvent(notification, this.#now()), onOutcome };
    if (this.#settings.waitMs === 0 || this.#settings.threshold === 0 || !this.#groups(output)) {
      this.#enqueue(output, entry.event, [entry]);
      return;
    }
    let pending = this.#pending.get(output);
    if (pending === undefined) {
      pending = [];
      this.#pending.set(output, pending);
      const timer = setTimeout(() => {
        this.#timers.delete(timer);
        this.#flush(output);
      }, this.#settings.waitMs);
      timer.unref();
      this.#timers.add(timer);
    }
    if (pending.length >= MAX_PENDING_PER_OUTPUT) {
      onOutcome?.("dropped", "too many notifications waiting to be grouped");
      return;
    }
    pending.push(entry);
  }

  /** Sends what waited for `output`: one grouped message past the threshold, else each alone. */
  #flush(output: string): void {
    const pending = this.#pending.get(output) ?? [];
    this.#pending.delete(output);
    if (pending.length > this.#settings.threshold) {
      const events = pending.map((entry) => entry.event);
      this.#enqueue(output, groupEvent(events, this.#now()), pending);
      return;
    }
    for (const entry of pending) this.#enqueue(output, entry.event, [entry]);
  }

  #enqueue(output: string, event: Event, entries: readonly Pending[]): void {
    if (!this.#outputs.offer(output, event)) {
      for (const entry of entries) entry.onOutcome?.("dropped", `the queue of output ${output} is full or stopping`);
      return;
    }
    const listening = entries.filter((entry) => entry.onOutcome !== undefined);
    if (listening.length === 0) return;
    this.#listeners.set(event, (outcome, reason) => {
      for (const entry of listening) entry.onOutcome?.(outcome, reason);
    });
  }

  /** What the outputs tell of the events they settled (wired as their `settled` option). */
  readonly settled: Settled = (batch, start, end, outcome, reason) => {
    if (this.#listeners.size === 0) return;
    for (let index = start; index < end; index++) {
      const event = batch[index];
      const listener = event === undefined ? undefined : this.#listeners.get(event);
      if (event === undefined || listener === undefined) continue;
      this.#listeners.delete(event);
      listener(outcome, reason);
    }
  };

  /**
   * Sends what waits for grouping at once (a graceful stop), so that the outputs' drain carries it.
   */
  flush(): void {
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
    for (const output of [...this.#pending.keys()]) this.#flush(output);
  }

  /** After the outputs drained: what was never settled ends as `dropped`. */
  close(): void {
    this.flush();
    const left = [...this.#listeners.values()];
    this.#listeners.clear();
    const outcome: DeliveryOutcome = "dropped";
    for (const listener of left) listener(outcome, "the server stopped before it was delivered");
  }
}
