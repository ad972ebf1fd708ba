import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { matrixMessage, transactionId } from "../../../../src/platform/outputs/notifiers/matrix.js";
import { type Receiver, type Responder, startReceiver } from "../../../support/receiver.js";
import { temporaryDirectory } from "../../../support/temporary.js";
import {
  afterTest,
  definitionOf,
  FAST,
  grouped,
  notification,
  notifierOutputs,
  serverWithOutput,
} from "./outputs-harness.js";

const TOKEN = "syt_dmlnaWU_SecretAccessToken_0a1b2c";
const ROOM = "!ops:example.org";
const SEND_PATH = /^\/_matrix\/client\/v3\/rooms\/!ops%3Aexample\.org\/send\/m\.room\.message\/([^/]+)$/;

async function receiver(responder?: Responder): Promise<Receiver> {
  const started = await startReceiver(responder);
  afterTest(() => started.close());
  return started;
}

function matrix(homeserver: string, extra: Record<string, unknown> = {}) {
  return { type: "matrix", homeserver, "room-id": ROOM, "access-token": TOKEN, ...FAST, ...extra };
}

const definition = (extra: Record<string, unknown> = {}) => {
  const parsed = definitionOf(matrix("https://matrix.example.org", extra));
  if (parsed.type !== "matrix") throw new Error("not matrix");
  return parsed;
};

const bodyOf = (request: { body: Buffer }) => JSON.parse(request.body.toString("utf8"));

afterEach(() => {
  vi.unstubAllEnvs();
});

describe("matrix configuration", () => {
  it("refuses an alias, a broken template naming its key, and never echoes the token", () => {
    expect(() => definitionOf(matrix("https://m.example.org", { "room-id": "#ops:example.org" }))).toThrow(
      "outputs.probe.room-id: must be a room ID (!opaque:example.org), not an alias",
    );
    expect(() => definitionOf(matrix("https://m.example.org", { "html-template": "{{/x}}" }))).toThrow(
      /^outputs\.probe\.html-template: is not a valid template: /,
    );
    let message = "";
    try {
      definitionOf(matrix("https://m.example.org", { "access-token": `${TOKEN}\nX` }));
    } catch (error) {
      message = String(error);
    }
    expect(message).toContain("outputs.probe.access-token: must be a token without spaces or line breaks");
    expect(message).not.toContain(TOKEN);
    expect(definition()["batch-size"]).toBe(1);
  });

  it("reads access-token from access-token-env or access-token-file", () => {
    vi.stubEnv("VIGIE_TEST_MATRIX_TOKEN", TOKEN);
    const { "access-token": _, ...rest } = matrix("https://m.example.org");
    expect(definitionOf({ ...rest, "access-token-env": "VIGIE_TEST_MATRIX_TOKEN" })).toMatchObject({
      "access-token": TOKEN,
    });
    const file = join(temporaryDirectory(), "token");
    writeFileSync(file, `${TOKEN}\n`);
    expect(definitionOf({ ...rest, "access-token-file": file })).toMatchObject({ "access-token": TOKEN });
  });
});

describe("matrix messages", () => {
  it("body from template, formatted_body from html-template with its variables HTML-escaped", () => {
    const message = matrixMessage(notification("triggered"), definition(), "");
    expect(JSON.parse(message.body)).toEqual({
      msgtype: "m.text",
      body: 'api <prod> is critical (triggered): HTTP 503 & "slow"\nhttps://vigie.example.org/status',
      format: "org.matrix.custom.html",
      formatted_body:
        "<p><strong>api &lt;prod&gt;</strong> is critical (triggered): HTTP 503 &amp; &quot;slow&quot;</p>" +
        '<p><a href="https://vigie.example.org/status">https://vigie.example.org/status</a></p>',
    });
  });

  it("a grouped notification lists its alerts; custom templates render the documented variables", () => {
    const group = JSON.parse(matrixMessage(grouped(), definition(), "").body);
    expect(group.body).toBe(
      '2 alerts:\n- api <prod> is critical (triggered): HTTP 503 & "slow"\n- db is critical (triggered): HTTP 503 & "slow"\n\nhttps://vigie.example.org/status',
    );
    expect(group.formatted_body).toContain("<p><strong>2 alerts</strong></p><ul><li><strong>api &lt;prod&gt;</strong>");
    const custom = definition({
      template: "{{name}}|{{state}}|{{status}}|{{message}}|{{since}}|{{duration}}|{{url}}|{{labels.team}}|{{key}}",
      "html-template": "<b>{{name}}</b> {{{message}}}",
    });
    const rendered = JSON.parse(matrixMessage(notification("reminder"), custom, "").body);
    expect(rendered.body).toBe(
      'api <prod>|critical|reminder|HTTP 503 & "slow"|2023-11-14T22:13:20.000Z|100|https://vigie.example.org/status|web|api/pager',
    );
    expect(rendered.formatted_body).toBe('<b>api &lt;prod&gt;</b> HTTP 503 & "slow"');
  });

  it("a stream event renders too, with the public URL", () => {
    const event = { host: "web-1", service: "cpu", state: "critical", description: "load 9", time: 1_700_000_000 };
    expect(JSON.parse(matrixMessage(event, definition(), "https://vigie.example.org/").body).body).toBe(
      "cpu is critical (triggered): load 9\nhttps://vigie.example.org/",
    );
  });

  it("gives each message its own transaction ID, prefixed by a digest of the alert's key", () => {
    const first = transactionId("api/pager");
    const second = transactionId("api/pager");
    expect(first).not.toBe(second);
    expect(first.split(".").slice(0, 2)).toEqual(second.split(".").slice(0, 2));
    expect(first).toMatch(/^vigie\.[0-9a-f]{16}\.[0-9a-f-]{36}$/);
  });
});

describe("matrix delivery", () => {
  it("PUTs m.room.message with the token as a bearer, one transaction per message", async () => {
    const target = await receiver(() => ({ status: 200, body: '{"event_id":"$abc"}' }));
    const { outputs, reaches } = notifierOutputs({ room: matrix(`${target.url}/base`) });
    outputs.offer("room", notification("triggered"));
    outputs.offer("room", notification("resolved"));
    await target.acceptedAtLeast(2);
    const [first, second] = target.requests;
    expect(first?.method).toBe("PUT");
    expect(first?.url.startsWith("/base/")).toBe(true);
    const transactions = target.requests.map((request) => SEND_PATH.exec(request.url.slice(5))?.[1]);
    expect(transactions.every((txn) => txn !== undefined)).toBe(true);
    expect(transactions[0]).not.toBe(transactions[1]);
    expect(first?.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(first?.headers["content-type"]).toBe("application/json");
    expect(bodyOf(second ?? { body: Buffer.from("{}") })).toMatchObject({
      msgtype: "m.text",
      format: "org.matrix.custom.html",
    });
    await reaches("room", "sent", 2);
  });

  it("retries a 503 with the same transaction ID, and delivers once", async () => {
    const target = await receiver((_request, index) => (index === 0 ? { status: 503 } : { status: 200 }));
    const { outputs, reaches } = notifierOutputs({ room: matrix(target.url) });
    outputs.offer("room", notification("triggered"));
    await reaches("room", "sent", 1);
    expect(target.requests).toHaveLength(2);
    expect(target.requests[0]?.url).toBe(target.requests[1]?.url);
    expect(target.requests[0]?.url).toMatch(SEND_PATH);
    expect(target.accepted).toHaveLength(1);
  });

  it("does not retry a 403, and logs the homeserver's reason, never the token", async () => {
    const target = await receiver(() => ({
      status: 403,
      body: '{"errcode":"M_FORBIDDEN","error":"User @vigie:example.org not in room"}',
    }));
    const { outputs, reaches, logs, rawLogs } = notifierOutputs({ room: matrix(target.url) });
    outputs.offer("room", notification("triggered"));
    await reaches("room", "dropped-rejected", 1);
    expect(target.requests).toHaveLength(1);
    expect(logs.find((entry) => entry.level === 40)?.reason).toBe(
      "HTTP 403: M_FORBIDDEN: User @vigie:example.org not in room",
    );
    expect(rawLogs.join("")).not.toContain(TOKEN);
  });
});

describe("matrix through a server", () => {
  it("a stream's output! reaches the room", async () => {
    const target = await receiver(() => ({ status: 200, body: '{"event_id":"$1"}' }));
    const { push } = await serverWithOutput("room", { room: matrix(target.url) });
    await push({ host: "web-1", service: "cpu", state: "critical", description: "load <9>", time: 1_700_000_000 });
    await target.acceptedAtLeast(1);
    const [request] = target.requests;
    expect(request?.method).toBe("PUT");
    expect(request?.url).toMatch(SEND_PATH);
    expect(request?.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(bodyOf(request ?? { body: Buffer.from("{}") })).toMatchObject({
      body: "cpu is critical (triggered): load <9>\nhttp://127.0.0.1:8080",
      formatted_body:
        '<p><strong>cpu</strong> is critical (triggered): load &lt;9&gt;</p><p><a href="http://127.0.0.1:8080">http://127.0.0.1:8080</a></p>',
    });
  });
});
