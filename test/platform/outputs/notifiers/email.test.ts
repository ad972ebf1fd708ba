/**
 * The `email` output against a real SMTP server (aiosmtpd, test/support/smtp.ts): the message as
 * received (headers, text and HTML parts), threading, 5xx refusals not retried, 4xx retried.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { emailMessage, smtpOutcome, threadId } from "../../../../src/platform/outputs/notifiers/email.js";
import { type SmtpServer, smtpUnavailable, startSmtpServer } from "../../../support/smtp.js";
import { temporaryDirectory } from "../../../support/temporary.js";
import { definitionOf, FAST, grouped, notification, notifierOutputs, serverWithOutput } from "./outputs-harness.js";

const PASSWORD = "s3cret-SMTP-pa55";

/** A received part's text with the CRLF line ends of SMTP as LF. */
const lines = (text: string | null | undefined) => (text ?? "").replace(/\r\n/g, "\n");

function email(smtpUrl: string, extra: Record<string, unknown> = {}) {
  return {
    type: "email",
    "smtp-url": smtpUrl,
    from: "Vigie <vigie@alerts.example.org>",
    to: ["ops@example.org", "oncall@example.org"],
    ...FAST,
    ...extra,
  };
}

const definition = (extra: Record<string, unknown> = {}) => {
  const parsed = definitionOf(email("smtp://127.0.0.1:2525", extra));
  if (parsed.type !== "email") throw new Error("not email");
  return parsed;
};

afterEach(() => {
  vi.unstubAllEnvs();
});

describe("email configuration", () => {
  it("defaults: one message per batch, certificates checked", () => {
    expect(definition()).toMatchObject({ "batch-size": 1, "tls-insecure": false });
  });

  it("refuses a URL that is not smtp:// or smtps:// without echoing it", () => {
    let message = "";
    try {
      definitionOf(email(`https://user:${PASSWORD}@mail.example.org`));
    } catch (error) {
      message = String(error);
    }
    expect(message).toContain("outputs.probe.smtp-url: must be an smtp:// or smtps:// URL with a host");
    expect(message).not.toContain(PASSWORD);
    expect(() => definitionOf(email("smtp://h", { to: [] }))).toThrow("outputs.probe.to: ");
    expect(() => definitionOf(email("smtp://h", { from: "vigie\r\nBcc: x@example.org" }))).toThrow(
      "outputs.probe.from: must be an e-mail address",
    );
  });

  it("refuses a broken template naming its key", () => {
    expect(() => definitionOf(email("smtp://h", { template: "{{#alerts}}{{name}}" }))).toThrow(
      /^outputs\.probe\.template: is not a valid template: /,
    );
    expect(() => definitionOf(email("smtp://h", { "title-template": "{{name" }))).toThrow(
      /^outputs\.probe\.title-template: is not a valid template: /,
    );
  });

  it("reads smtp-url from smtp-url-env or smtp-url-file", () => {
    const url = `smtp://vigie:${PASSWORD}@mail.example.org:587`;
    vi.stubEnv("VIGIE_TEST_SMTP_URL", url);
    const { "smtp-url": _, ...rest } = email("smtp://h");
    expect(definitionOf({ ...rest, "smtp-url-env": "VIGIE_TEST_SMTP_URL" })).toMatchObject({ "smtp-url": url });
    const file = join(temporaryDirectory(), "smtp-url");
    writeFileSync(file, `${url}\n`);
    expect(definitionOf({ ...rest, "smtp-url-file": file })).toMatchObject({ "smtp-url": url });
  });
});

describe("email messages", () => {
  it("threads an alert: the trigger starts it, its reminders and resolve answer it", () => {
    const root = threadId("api/pager", "2023-11-14T22:13:20.000Z", "alerts.example.org");
    expect(root).toMatch(/^<vigie\.[0-9a-f]{40}@alerts\.example\.org>$/);
    const trigger = emailMessage(notification("triggered"), definition(), "");
    expect(trigger.messageId).toBe(root);
    expect(trigger.inReplyTo).toBeUndefined();
    for (const status of ["reminder", "resolved"] as const) {
      const answer = emailMessage(notification(status), definition(), "");
      expect(answer.messageId).not.toBe(root);
      expect(answer.messageId).toMatch(/@alerts\.example\.org>$/);
      expect(answer.inReplyTo).toBe(root);
      expect(answer.references).toEqual([root]);
    }
    // The next time the alert triggers, it starts a new thread.
    const again = emailMessage(notification("triggered", { since: "2023-11-15T08:00:00.000Z" }), definition(), "");
    expect(again.messageId).not.toBe(root);
  });

  it("a grouped notification or a stream event stands alone", () => {
    const group = emailMessage(grouped(), definition(), "");
    expect(group.inReplyTo).toBeUndefined();
    expect(group.subject).toBe("2 alerts: api <prod> triggered; db triggered;");
    const event = emailMessage(
      { host: "web-1", service: "cpu", state: "critical", time: 1 },
      definition(),
      "https://v/",
    );
    expect(event.inReplyTo).toBeUndefined();
    expect(event.text).toBe("cpu is critical (triggered)\nhttps://v/");
  });

  it("classifies SMTP replies: 5xx refused, 4xx and network errors retried", () => {
    const refused = Object.assign(new Error("x"), { code: "EENVELOPE", responseCode: 550, response: "550 5.1.1 no" });
    expect(smtpOutcome(refused)).toEqual({ kind: "rejected", reason: "SMTP 550 5.1.1 no", answer: "550 5.1.1 no" });
    const busy = Object.assign(new Error("x"), { code: "EENVELOPE", responseCode: 451, response: "451 4.3.2 later" });
    expect(smtpOutcome(busy)).toEqual({ kind: "retry", reason: "SMTP 451 4.3.2 later" });
    const down = Object.assign(new Error(`connect ECONNREFUSED with ${PASSWORD}`), { code: "ESOCKET" });
    expect(smtpOutcome(down)).toEqual({ kind: "retry", reason: "Error ESOCKET" });
    expect(smtpOutcome(Object.assign(new Error("login"), { code: "EAUTH" }))).toMatchObject({ kind: "rejected" });
  });
});

const unavailable = smtpUnavailable();
if (unavailable !== undefined) console.log(`skipping the SMTP delivery tests: ${unavailable}`);

describe.skipIf(unavailable !== undefined)("email delivery to a real SMTP server", () => {
  let server: SmtpServer;
  beforeAll(async () => {
    server = await startSmtpServer();
  });
  afterAll(async () => {
    await server?.stop();
  });

  it("sends the trigger, a reminder and the resolve as one thread, with text and HTML parts", async () => {
    const before = server.messages().length;
    const { outputs, reaches } = notifierOutputs({ mail: email(server.url) });
    outputs.offer("mail", notification("triggered"));
    outputs.offer("mail", notification("reminder"));
    outputs.offer("mail", notification("resolved"));
    await reaches("mail", "sent", 3);
    const [trigger, reminder, resolve] = (await server.received(before + 3)).slice(before);
    expect(trigger?.mail_from).toBe("vigie@alerts.example.org");
    expect(trigger?.rcpt_tos).toEqual(["ops@example.org", "oncall@example.org"]);
    expect(trigger?.headers.from).toBe("Vigie <vigie@alerts.example.org>");
    expect(trigger?.headers.to).toBe("ops@example.org, oncall@example.org");
    expect(trigger?.headers.subject).toBe("api <prod> is critical (triggered)");
    expect(trigger?.content_type).toBe("multipart/alternative");
    expect(lines(trigger?.text).trimEnd()).toBe(
      'api <prod> is critical (triggered): HTTP 503 & "slow"\nhttps://vigie.example.org/status',
    );
    expect(trigger?.html).toContain(
      "<p><strong>api &lt;prod&gt;</strong> is critical (triggered): HTTP 503 &amp; &quot;slow&quot;</p>",
    );
    const root = threadId("api/pager", "2023-11-14T22:13:20.000Z", "alerts.example.org");
    expect(trigger?.headers["message-id"]).toBe(root);
    expect(trigger?.headers["in-reply-to"]).toBeUndefined();
    for (const answer of [reminder, resolve]) {
      expect(answer?.headers["in-reply-to"]).toBe(root);
      expect(answer?.headers.references).toBe(root);
      expect(answer?.headers["message-id"]).not.toBe(root);
    }
    expect(resolve?.headers.subject).toBe("api <prod> is ok (resolved)");
  });

  it("renders a grouped notification as one message listing its alerts", async () => {
    const before = server.messages().length;
    const { outputs, reaches } = notifierOutputs({ mail: email(server.url) });
    outputs.offer("mail", grouped());
    await reaches("mail", "sent", 1);
    const [message] = (await server.received(before + 1)).slice(before);
    expect(lines(message?.text)).toContain(
      '2 alerts:\n- api <prod> is critical (triggered): HTTP 503 & "slow"\n- db is critical',
    );
    expect(message?.html).toContain("<li><strong>db</strong> is critical (triggered)");
  });

  it("does not retry a 5xx reply, and logs the server's reply, never the password", async () => {
    const url = server.url.replace("smtp://", `smtp://vigie:${PASSWORD}@`);
    const { outputs, reaches, count, logs, rawLogs, registry } = notifierOutputs({
      mail: email(url, { to: ["refused@example.org"] }),
    });
    outputs.offer("mail", notification("triggered"));
    await reaches("mail", "dropped-rejected", 1);
    expect(await count("mail", "sent")).toBe(0);
    expect(await registry.metrics()).not.toMatch(/stream_output_retries_total\{output="mail"\} [1-9]/);
    expect(logs.find((entry) => entry.level === 40)?.reason).toBe(
      "SMTP 550 5.1.1 <refused@example.org>: Recipient address rejected: User unknown",
    );
    expect(rawLogs.join("")).not.toContain(PASSWORD);
  });

  it("retries a 4xx reply and delivers once", async () => {
    const before = server.messages().length;
    const { outputs, reaches, registry } = notifierOutputs({ mail: email(server.url, { to: ["busy@example.org"] }) });
    outputs.offer("mail", notification("triggered"));
    await reaches("mail", "sent", 1);
    expect(await registry.metrics()).toContain('stream_output_retries_total{output="mail"} 1');
    expect((await server.received(before + 1)).slice(before)).toHaveLength(1);
  });

  it("delivers what a stream's output! sends through a server, smtp-url from smtp-url-env", async () => {
    vi.stubEnv("VIGIE_TEST_SMTP_URL", server.url.replace("smtp://", `smtp://vigie:${PASSWORD}@`));
    const before = server.messages().length;
    const { "smtp-url": _, ...rest } = email(server.url);
    const { push } = await serverWithOutput("mail", { mail: { ...rest, "smtp-url-env": "VIGIE_TEST_SMTP_URL" } });
    await push({ host: "web-1", service: "cpu", state: "critical", description: "load 9", time: 1_700_000_000 });
    const [message] = (await server.received(before + 1)).slice(before);
    expect(message?.headers.subject).toBe("cpu is critical (triggered)");
    expect(lines(message?.text)).toBe("cpu is critical (triggered): load 9\nhttp://127.0.0.1:8080");
    expect(message?.headers["in-reply-to"]).toBeUndefined();
  });

  it("retries while the server is unreachable, logging no password", async () => {
    const { outputs, reaches, rawLogs } = notifierOutputs({
      mail: email(`smtp://vigie:${PASSWORD}@127.0.0.1:1`, { "max-retry-time": "300ms" }),
    });
    outputs.offer("mail", notification("triggered"));
    await reaches("mail", "dropped-retries-exhausted", 1);
    expect(rawLogs.join("")).toContain("ESOCKET");
    expect(rawLogs.join("")).not.toContain(PASSWORD);
  });
});
