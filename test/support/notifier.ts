/**
 * A fake of the platform's Notifier for alert tests: declared outputs by name, every notification
 * recorded, the outcome of each delivery chosen by the test (delivered at once by default).
 */

import type { AnyModule } from "../../src/platform/module.js";
import type { DeliveryOutcome, Notification, Notifier, OutcomeListener } from "../../src/platform/notifications.js";

/** One notification handed to the fake. */
export interface SentNotification {
  readonly output: string;
  readonly notification: Notification;
}

/** A Notifier that records what it is handed. */
export class FakeNotifier implements Notifier {
  readonly sent: SentNotification[] = [];
  readonly outputs: Set<string>;
  /** How each delivery ends: a fixed outcome and reason, or `pending` to end them with {@link settle}. */
  outcome: { outcome: DeliveryOutcome; reason?: string } | "pending" = { outcome: "delivered" };
  readonly #pending: OutcomeListener[] = [];

  constructor(outputs: Iterable<string> = []) {
    this.outputs = new Set(outputs);
  }

  has(output: string): boolean {
    return this.outputs.has(output);
  }

  notify(output: string, notification: Notification, onOutcome?: OutcomeListener): void {
    this.sent.push({ output, notification });
    if (!this.outputs.has(output)) {
      onOutcome?.("dropped", "no such output");
      return;
    }
    if (this.outcome === "pending") {
      if (onOutcome !== undefined) this.#pending.push(onOutcome);
      return;
    }
    onOutcome?.(this.outcome.outcome, this.outcome.reason);
  }

  /** Ends every pending delivery with `outcome`. */
  settle(outcome: DeliveryOutcome, reason?: string): void {
    for (const listener of this.#pending.splice(0)) listener(outcome, reason);
  }

  /** The notifications of one check (and output), as `status` strings in order. */
  statuses(check: string, output?: string): string[] {
    return this.sent
      .filter((sent) => sent.notification.name === check && (output === undefined || sent.output === output))
      .map((sent) => sent.notification.status);
  }
}

/**
 * `modules` with `notifier` in place of the platform's in the context of each, for servers built
 * by tests (test/support/server.ts).
 */
export function withNotifier(modules: readonly AnyModule[], notifier: Notifier): AnyModule[] {
  return modules.map((module) => ({
    ...module,
    plugin: async (app, options) =>
      module.plugin.call(app, app, { ...options, context: { ...options.context, notifier } }),
  }));
}

/**
 * The configuration's `outputs` for the names `notifier` knows: declared (as the configuration
 * file's alerts must name declared outputs), never contacted (the fake takes every notification).
 */
export function declaredOutputs(notifier: FakeNotifier): Record<string, { type: "http"; url: string }> {
  const outputs: Record<string, { type: "http"; url: string }> = {};
  for (const name of notifier.outputs) outputs[name] = { type: "http", url: "http://127.0.0.1:9/never-contacted" };
  return outputs;
}
