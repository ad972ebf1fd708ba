/**
 * The platform mailer's queues, with a stand-in for SMTP: one message at a time in order, retries
 * of transient failures until `max-retry-time`, no retry of refusals, a bounded queue, unknown
 * outputs dropped, a drain on close, and logs that never name a recipient.
 */
import pino from "pino";
import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../../src/platform/config.js";
import type { Mail, MailOutcome } from "../../../src/platform/mailer.js";
import type { AttemptResult } from "../../../src/platform/outputs/delivery.js";
import { SmtpMailer } from "../../../src/platform/outputs/mail-queue.js";
import { outputMetrics } from "../../../src/platform/outputs/metrics.js";

function definitions(settings: Record<string, unknown> = {}) {
  return parseConfig(
    {
      outputs: {
        mail: {
          type: "email",
          "smtp-url": "smtp://127.0.0.1:9",
          from: "vigie@example.org",
          to: ["ops@example.org"],
          ...settings,
        },
        hook: { type: "webhook", url: "http://127.0.0.1:9/" },
      },
    },
    {},
    [],
  ).outputs;
}

function harness(results: AttemptResult[], settings: Record<string, unknown> = {}) {
  const logs: string[] = [];
  const logger = pino({ level: "debug" }, { write: (line: string) => logs.push(line) });
  const sent: Mail[] = [];
  const registry = new Registry();
  const mailer = new SmtpMailer(definitions(settings), logger, {
    metrics: outputMetrics(registry, () => []),
    attemptOf: () => ({
      attempt: async (mail) => {
        sent.push(mail);
        return results.shift() ?? { kind: "sent" };
      },
      close: () => {},
    }),
  });
  const outcomes: Array<[MailOutcome, string | undefined]> = [];
  const send = (subject: string) =>
    new Promise<void>((resolve) => {
      const queued = mailer.send({ output: "mail", to: ["ann@example.org"], subject, text: "t" }, (outcome, reason) => {
        outcomes.push([outcome, reason]);
        resolve();
      });
      if (!queued) resolve();
    });
  /** The value of the series `name` (a histogram's `_count` too) with these labels, 0 when absent. */
  const metric = async (name: string, labels: Record<string, string>) => {
    const family = registry.getSingleMetric(name.replace(/_count$/, ""));
    const found = (await family?.get())?.values.find(
      (value) =>
        ((value as { metricName?: string }).metricName ?? name) === name &&
        Object.entries(labels).every(([key, wanted]) => value.labels[key] === wanted),
    );
    return found?.value ?? 0;
  };
  return { mailer, sent, outcomes, logs, send, metric };
}

const mail = (output: string): Mail => ({ output, to: ["a@example.org"], subject: "s", text: "t" });

describe("SmtpMailer", () => {
  it("sends only through email outputs; others and unknown ones are dropped at once", () => {
    const { mailer } = harness([]);
    expect(mailer.canSend("mail")).toBe(true);
    expect(mailer.canSend("hook")).toBe(false);
    const outcomes: string[] = [];
    expect(mailer.send(mail("hook"), (outcome) => outcomes.push(outcome))).toBe(false);
    expect(mailer.send(mail("nothing"), (outcome) => outcomes.push(outcome))).toBe(false);
    expect(outcomes).toEqual(["dropped", "dropped"]);
  });

  it("retries transient failures, then delivers, in order", async () => {
    const { send, sent, outcomes } = harness([{ kind: "retry", reason: "SMTP 451 busy" }]);
    await Promise.all([send("one"), send("two")]);
    expect(sent.map((item) => item.subject)).toEqual(["one", "one", "two"]);
    expect(outcomes).toEqual([
      ["delivered", undefined],
      ["delivered", undefined],
    ]);
  });

  it("does not retry a refusal, and logs it without the recipient, even in the server's reply", async () => {
    const reason = "SMTP 550 5.1.1 <ann@example.org>: unknown";
    const { send, sent, outcomes, logs } = harness([{ kind: "rejected", reason, answer: "" }]);
    await send("one");
    expect(sent).toHaveLength(1);
    // The server's reply names the recipient: replaced before it is logged or reported.
    expect(outcomes).toEqual([["failed", "SMTP 550 5.1.1 <<address>>: unknown"]]);
    expect(logs.join("")).toContain("SMTP 550 5.1.1");
    expect(logs.join("")).not.toContain("ann@example.org");
  });

  it("gives up after max-retry-time", async () => {
    const failures = Array.from({ length: 50 }, () => ({ kind: "retry" as const, reason: "down" }));
    const { send, outcomes } = harness(failures, { "max-retry-time": "300ms" });
    await send("one");
    expect(outcomes[0]?.[0]).toBe("failed");
    expect(outcomes[0]?.[1]).toMatch(/^retries exhausted: down/);
  });

  it("holds at most queue-size messages and drops the rest on close", async () => {
    const failures = Array.from({ length: 1000 }, () => ({ kind: "retry" as const, reason: "down" }));
    const { mailer, outcomes } = harness(failures, { "queue-size": 2 });
    const results = [1, 2, 3].map(() => mailer.send(mail("mail"), (outcome) => outcomes.push([outcome, undefined])));
    expect(results).toEqual([true, true, false]);
    expect(mailer.queued("mail")).toBe(2);
    await mailer.close(50);
    expect(outcomes.map(([outcome]) => outcome).sort()).toEqual(["dropped", "dropped", "dropped"]);
    expect(mailer.send(mail("mail"))).toBe(false);
  });

  it("counts each message as one event of its output: outcome, attempts' durations, retries", async () => {
    const failures: AttemptResult[] = [
      { kind: "retry", reason: "SMTP 451 busy" },
      { kind: "sent" },
      { kind: "rejected", reason: "SMTP 550 no", answer: "" },
    ];
    const { mailer, send, metric } = harness(failures, { "queue-size": 2 });
    const events = (outcome: string) => metric("stream_output_events_total", { output: "mail", outcome });
    await Promise.all([send("retried then sent"), send("refused")]);
    expect(await events("sent")).toBe(1);
    expect(await events("dropped-rejected")).toBe(1);
    expect(await metric("stream_output_retries_total", { output: "mail" })).toBe(1);
    // Three attempts in all, each observed once.
    expect(await metric("stream_output_request_duration_seconds_count", { output: "mail" })).toBe(3);
    mailer.close(0);
    expect(mailer.send(mail("mail"))).toBe(false);
    expect(await events("dropped-queue-full")).toBe(1);
  });

  it("counts messages left at a drain, and those out of retry time, as retries exhausted", async () => {
    const failures = Array.from({ length: 1000 }, () => ({ kind: "retry" as const, reason: "down" }));
    const { mailer, metric, send } = harness(failures, { "max-retry-time": "200ms" });
    await send("out of time");
    const exhausted = () =>
      metric("stream_output_events_total", { output: "mail", outcome: "dropped-retries-exhausted" });
    expect(await exhausted()).toBe(1);
    for (let i = 0; i < 3; i++) mailer.send(mail("mail"));
    await mailer.close(20);
    expect(await exhausted()).toBe(4);
  });
});
