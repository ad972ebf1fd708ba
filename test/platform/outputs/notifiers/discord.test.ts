import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { outputsSection } from "../../../../src/platform/outputs/config.js";
import {
  CRITICAL_COLOR,
  DISCORD_ESCAPE,
  discordMessage,
  OK_COLOR,
  readDiscordAnswer,
} from "../../../../src/platform/outputs/notifiers/discord.js";
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

const SECRET_PATH = "/api/webhooks/1234/s3cr3tD1sc0rdT0k3n";

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  vi.unstubAllEnvs();
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function receiver(responder?: Responder): Promise<Receiver> {
  const started = await startReceiver(responder);
  cleanups.push(() => started.close());
  return started;
}

function harness(definition: Record<string, unknown>): NotifierHarness {
  const started = notifierHarness({ chat: { type: "discord", ...definition } });
  cleanups.push(() => started.close());
  return started;
}

const json = (request: { body: Buffer } | undefined) => JSON.parse(request?.body.toString("utf8") ?? "null");
const templates = { text: DEFAULT_TEXT, title: DEFAULT_TITLE };
const sleep = (milliseconds: number) => new Promise((resolve) => setTimeout(resolve, milliseconds));

describe("discord output", () => {
  it("POSTs the webhook JSON: the title as content, one embed coloured by state, no mentions", async () => {
    const hook = await receiver(() => ({ status: 204 }));
    const { outputs, settled } = harness({ "webhook-url": `${hook.url}${SECRET_PATH}` });
    outputs.offer("chat", notificationOf());
    await hook.acceptedAtLeast(1);
    const [request] = hook.requests;
    expect(request?.method).toBe("POST");
    expect(request?.url).toBe(SECRET_PATH);
    expect(request?.headers["content-type"]).toBe("application/json");
    expect(json(request)).toEqual({
      content: "api \\<prod\\> is critical (triggered)",
      embeds: [
        {
          description: 'api \\<prod\\> is critical (triggered): HTTP 503 & "slow"\nhttps://status.example.org/status',
          color: CRITICAL_COLOR,
          fields: [
            { name: "State", value: "critical", inline: true },
            { name: "Status", value: "triggered", inline: true },
            { name: "Duration", value: "0 s", inline: true },
            { name: "team", value: "web", inline: true },
          ],
          timestamp: "2024-05-01T10:00:00.000Z",
          url: "https://status.example.org/status",
        },
      ],
      allowed_mentions: { parse: [] },
    });
    expect(await settled("chat", "sent", 1)).toBe(1);
  });

  it("does not retry a refusal and logs Discord's message, never the webhook URL", async () => {
    const hook = await receiver(() => ({ status: 404, body: '{"message": "Unknown Webhook", "code": 10015}' }));
    const { outputs, settled, logs, rawLogs } = harness({ "webhook-url": `${hook.url}${SECRET_PATH}` });
    outputs.offer("chat", notificationOf());
    expect(await settled("chat", "dropped-rejected", 1)).toBe(1);
    await sleep(300);
    expect(hook.requests).toHaveLength(1);
    expect(logs.find((line) => line.level === 40)).toMatchObject({ reason: "HTTP 404: Unknown Webhook" });
    expect(rawLogs.join("")).not.toContain("s3cr3t");
  });

  it("retries a 503 and delivers the message once", async () => {
    const hook = await receiver((_, index) => (index === 0 ? { status: 503 } : { status: 204 }));
    const { outputs, settled } = harness({ "webhook-url": `${hook.url}${SECRET_PATH}` });
    outputs.offer("chat", notificationOf());
    await hook.acceptedAtLeast(1);
    expect(await settled("chat", "sent", 1)).toBe(1);
    await sleep(200);
    expect(hook.requests).toHaveLength(2);
    expect(hook.accepted).toHaveLength(1);
  });

  it("waits a 429's retry_after (seconds) when no Retry-After header came", () => {
    const limited = {
      status: 429,
      text: '{"message": "You are being rate limited.", "retry_after": 0.25, "global": false}',
    };
    expect(readDiscordAnswer({ ...limited, retryAfterMs: undefined })).toEqual({
      kind: "retry",
      reason: "HTTP 429: You are being rate limited.",
      retryAfterMs: 250,
    });
    expect(readDiscordAnswer({ ...limited, retryAfterMs: 2000 })).toMatchObject({ retryAfterMs: 2000 });
    expect(readDiscordAnswer({ status: 400, text: "<html>", retryAfterMs: undefined })).toEqual({
      kind: "rejected",
      reason: "HTTP 400",
      answer: "<html>",
    });
  });

  it("renders a group green once every alert is ok, and a stream event", () => {
    const group = discordMessage(
      groupOf([
        { name: "db", state: "ok", status: "resolved" },
        { name: "web", state: "ok", status: "resolved" },
      ]),
      templates,
      "",
    );
    expect(group.content).toBe("2 alerts: db resolved; web resolved;");
    expect(group.embeds[0].color).toBe(OK_COLOR);
    expect(group.embeds[0].description).toBe(
      '2 alerts:\n- db is ok (resolved): HTTP 503 & "slow"\n- web is ok (resolved): HTTP 503 & "slow"\n\nhttps://status.example.org/status',
    );
    expect(group.embeds[0].fields.slice(0, 2)).toEqual([
      { name: "Alerts", value: "2", inline: true },
      { name: "State", value: "ok", inline: true },
    ]);
    const stream = discordMessage({ service: "disk_usage", state: "warning", time: 1714557600 }, templates, "");
    expect(stream.content).toBe("disk\\_usage is warning (triggered)");
    expect(stream.embeds[0]).toMatchObject({ color: CRITICAL_COLOR, timestamp: "2024-05-01T10:00:00.000Z" });
    expect(stream.embeds[0]).not.toHaveProperty("url");
  });

  it("escapes markdown but leaves a whole URL as it is", () => {
    expect(DISCORD_ESCAPE("*bold* _it_ `code` ~~s~~ > [x](y) # -")).toBe(
      "\\*bold\\* \\_it\\_ \\`code\\` \\~\\~s\\~\\~ \\> \\[x\\]\\(y\\) \\# \\-",
    );
    expect(DISCORD_ESCAPE("https://status.example.org/my_page")).toBe("https://status.example.org/my_page");
  });

  it("takes the webhook URL from an environment variable or a file, and refuses a broken template", async () => {
    const hook = await receiver(() => ({ status: 204 }));
    vi.stubEnv("VIGIE_TEST_DISCORD_URL", `${hook.url}/from-env`);
    const file = join(temporaryDirectory(), "discord-url");
    writeFileSync(file, `${hook.url}/from-file\n`);
    harness({ "webhook-url-env": "VIGIE_TEST_DISCORD_URL" }).outputs.offer("chat", notificationOf());
    await hook.acceptedAtLeast(1);
    harness({ "webhook-url-file": file }).outputs.offer("chat", notificationOf());
    await hook.acceptedAtLeast(2);
    expect(hook.requests.map((request) => request.url)).toEqual(["/from-env", "/from-file"]);
    expect(() =>
      outputsSection({ chat: { type: "discord", "webhook-url": "https://a.example", template: "{{/x}}" } }, "outputs"),
    ).toThrow(/^outputs\.chat\.template: is not a valid template/);
    expect(() =>
      outputsSection({ chat: { type: "discord", "webhook-url-env": "VIGIE_TEST_UNSET" } }, "outputs"),
    ).toThrow("outputs.chat.webhook-url-env: names the environment variable VIGIE_TEST_UNSET, which is not set");
  });

  it("delivers what a stream sends to it through output!, on a real server", async () => {
    const hook = await receiver(() => ({ status: 204 }));
    const { server, push } = await streamingServer(
      { chat: { type: "discord", "webhook-url": `${hook.url}${SECRET_PATH}` } },
      "chat",
    );
    cleanups.push(() => server.close());
    expect(await push([{ host: "web-1", service: "cpu", state: "ok", description: "load 0.1" }])).toBe(200);
    await hook.acceptedAtLeast(1);
    const body = json(hook.requests[0]);
    expect(body.content).toBe("cpu is ok (resolved)");
    expect(body.embeds[0].color).toBe(OK_COLOR);
    expect(body.embeds[0].description).toMatch(/^cpu is ok \(resolved\): load 0\.1/);
  });
});
