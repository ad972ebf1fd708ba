import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { outputsSection } from "../../../../src/platform/outputs/config.js";
import {
  cutHtml,
  readTelegramAnswer,
  TELEGRAM_API_URL,
  telegramMessage,
} from "../../../../src/platform/outputs/notifiers/telegram.js";
import { DEFAULT_TEXT, DEFAULT_TITLE } from "../../../../src/platform/outputs/notifiers/template.js";
import {
  groupOf,
  type NotifierHarness,
  notificationOf,
  notifierHarness,
  streamingServer,
} from "../../../support/notifiers.js";
import { type Receiver, type Responder, startReceiver } from "../../../support/receiver.js";
import { temporaryDirectory } from "../../../support/temporary.js";

const TOKEN = "123456:s3cr3tT0k3n-AAbb_cc";
const OK_ANSWER = { status: 200, body: '{"ok":true,"result":{"message_id":1}}' };

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  vi.unstubAllEnvs();
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function receiver(responder: Responder = () => OK_ANSWER): Promise<Receiver> {
  const started = await startReceiver(responder);
  cleanups.push(() => started.close());
  return started;
}

function harness(definition: Record<string, unknown>): NotifierHarness {
  const started = notifierHarness({ phone: { type: "telegram", "chat-id": -1001234, ...definition } });
  cleanups.push(() => started.close());
  return started;
}

const json = (request: { body: Buffer } | undefined) => JSON.parse(request?.body.toString("utf8") ?? "null");
const templates = { text: DEFAULT_TEXT, title: DEFAULT_TITLE };
const sleep = (milliseconds: number) => new Promise((resolve) => setTimeout(resolve, milliseconds));

describe("telegram output", () => {
  it("POSTs sendMessage under the API URL's path: chat_id, HTML text escaped, parse_mode HTML", async () => {
    const api = await receiver();
    const { outputs, settled } = harness({ token: TOKEN, "api-url": `${api.url}/telegram/` });
    outputs.offer("phone", notificationOf());
    await api.acceptedAtLeast(1);
    const [request] = api.requests;
    expect(request?.method).toBe("POST");
    expect(request?.url).toBe(`/telegram/bot${TOKEN}/sendMessage`);
    expect(request?.headers["content-type"]).toBe("application/json");
    expect(json(request)).toEqual({
      chat_id: "-1001234",
      text: "<b>api &lt;prod&gt; is critical (triggered)</b>\napi &lt;prod&gt; is critical (triggered): HTTP 503 &amp; &quot;slow&quot;\nhttps://status.example.org/status",
      parse_mode: "HTML",
      link_preview_options: { is_disabled: true },
    });
    expect(await settled("phone", "sent", 1)).toBe(1);
  });

  it("does not retry ok: false and logs Telegram's description, never the token", async () => {
    const api = await receiver(() => ({
      status: 400,
      body: '{"ok":false,"error_code":400,"description":"Bad Request: chat not found"}',
    }));
    const { outputs, settled, logs, rawLogs } = harness({ token: TOKEN, "api-url": api.url });
    outputs.offer("phone", notificationOf());
    expect(await settled("phone", "dropped-rejected", 1)).toBe(1);
    await sleep(300);
    expect(api.requests).toHaveLength(1);
    expect(logs.find((line) => line.level === 40)).toMatchObject({
      reason: "HTTP 400: Bad Request: chat not found",
    });
    expect(rawLogs.join("")).not.toContain("s3cr3t");
  });

  it("retries a 503 and delivers the message once; never logs the token on network errors", async () => {
    const api = await receiver((_, index) => (index === 0 ? { status: 503 } : index === 1 ? "drop" : OK_ANSWER));
    const { outputs, settled, rawLogs } = harness({ token: TOKEN, "api-url": api.url });
    outputs.offer("phone", notificationOf());
    await api.acceptedAtLeast(1);
    expect(await settled("phone", "sent", 1)).toBe(1);
    await sleep(200);
    expect(api.requests).toHaveLength(3);
    expect(api.accepted).toHaveLength(1);
    expect(rawLogs.join("")).not.toContain("s3cr3t");
  });

  it("reads ok: false in a 2xx answer as a refusal, and a 429's parameters.retry_after as the wait", () => {
    expect(
      readTelegramAnswer({ status: 200, text: '{"ok":false,"description":"Forbidden"}', retryAfterMs: undefined }),
    ).toMatchObject({ kind: "rejected", reason: "ok: false: Forbidden" });
    expect(readTelegramAnswer({ status: 200, text: '{"ok":true}', retryAfterMs: undefined })).toEqual({ kind: "sent" });
    expect(
      readTelegramAnswer({
        status: 429,
        text: '{"ok":false,"error_code":429,"description":"Too Many Requests: retry after 3","parameters":{"retry_after":3}}',
        retryAfterMs: undefined,
      }),
    ).toEqual({ kind: "retry", reason: "HTTP 429: Too Many Requests: retry after 3", retryAfterMs: 3000 });
  });

  it("renders a group and a stream event; cuts a long text without breaking its HTML", () => {
    const group = telegramMessage(groupOf([{ name: "db" }, { name: "<web>" }]), "@ops", templates, "");
    expect(group.text).toBe(
      "<b>2 alerts: db triggered; &lt;web&gt; triggered;</b>\n2 alerts:\n- db is critical (triggered): HTTP 503 &amp; &quot;slow&quot;\n- &lt;web&gt; is critical (triggered): HTTP 503 &amp; &quot;slow&quot;\n\nhttps://status.example.org/status",
    );
    const stream = telegramMessage({ service: "cpu", state: "ok" }, "1", templates, "https://vigie.example.org");
    expect(stream.text).toBe("<b>cpu is ok (resolved)</b>\ncpu is ok (resolved)\nhttps://vigie.example.org");
    const long = telegramMessage(notificationOf({ message: "&".repeat(5000) }), "1", templates, "");
    expect(long.text.length).toBeLessThanOrEqual(4096);
    expect(long.text).toMatch(/&amp;…$/);
    expect(cutHtml("<b>abcdef</b>", 8)).toBe("<b>…</b>");
    expect(cutHtml("<i>ab&amp;cd</i>", 12)).toBe("<i>ab…</i>");
    expect(cutHtml("short", 10)).toBe("short");
  });

  it("takes the token from an environment variable or a file; defaults the API URL; refuses bad values", async () => {
    vi.stubEnv("VIGIE_TEST_TELEGRAM_TOKEN", TOKEN);
    const file = join(temporaryDirectory(), "telegram-token");
    writeFileSync(file, `${TOKEN}\n`);
    const parse = (definition: Record<string, unknown>) =>
      outputsSection({ phone: { type: "telegram", "chat-id": "@ops", ...definition } }, "outputs").phone;
    expect(parse({ "token-env": "VIGIE_TEST_TELEGRAM_TOKEN" })).toMatchObject({
      token: TOKEN,
      "api-url": TELEGRAM_API_URL,
      "batch-size": 1,
    });
    expect(parse({ "token-file": file })).toMatchObject({ token: TOKEN });
    expect(() => parse({ token: "abc/../x" })).toThrow(
      /^outputs\.phone\.token: must be a bot token \(<digits>:<letters, digits, _ and ->\)$/,
    );
    expect(() => parse({ token: TOKEN, "title-template": "{{#a}}" })).toThrow(
      /^outputs\.phone\.title-template: is not a valid template/,
    );
    expect(() => parse({ token: TOKEN, "chat-id": "ops channel" })).toThrow(
      /^outputs\.phone\.chat-id: must be a chat id \(an integer\) or @channelusername$/,
    );
    const api = await receiver();
    harness({ "token-file": file, "api-url": api.url }).outputs.offer("phone", notificationOf());
    await api.acceptedAtLeast(1);
    expect(api.requests[0]?.url).toBe(`/bot${TOKEN}/sendMessage`);
  });

  it("delivers what a stream sends to it through output!, on a real server", async () => {
    const api = await receiver();
    const { server, push } = await streamingServer(
      { phone: { type: "telegram", token: TOKEN, "chat-id": 42, "api-url": api.url } },
      "phone",
    );
    cleanups.push(() => server.close());
    expect(await push([{ host: "web-1", service: "cpu", state: "critical", description: "load > 9" }])).toBe(200);
    await api.acceptedAtLeast(1);
    const body = json(api.requests[0]);
    expect(body).toMatchObject({ chat_id: "42", parse_mode: "HTML" });
    expect(body.text).toMatch(/^<b>cpu is critical \(triggered\)<\/b>\ncpu is critical \(triggered\): load &gt; 9/);
  });
});
