/**
 * Answers in parts over a real nats-server (src/streams/query-parts.ts): an answer larger than the
 * server's max_payload (1 MiB) goes in parts and comes back whole; a small one stays one plain
 * message; the asker gives up beyond its byte bound, at a missing part, at a late part and when
 * nobody answers.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { connect, headers, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PartsError, requestInParts, respondInParts } from "../../src/streams/query-parts.js";
import { freePort } from "../support/process.js";
import { until } from "../support/until.js";
import { NATS_SERVER } from "./harness.js";

const SKIP = NATS_SERVER === "";
if (SKIP) console.warn("skipping test/cluster/query-parts.test.ts: no nats-server binary");

/** What a request failed with (`ok` when it did not). */
async function failureOf(request: Promise<Uint8Array>): Promise<string> {
  try {
    await request;
    return "ok";
  } catch (error) {
    return error instanceof PartsError ? error.failure.kind : String(error);
  }
}

describe.skipIf(SKIP)("answers in parts over NATS", () => {
  let server: ChildProcess;
  let owner: NatsConnection;
  let asker: NatsConnection;
  const subscriptions: Subscription[] = [];

  beforeAll(async () => {
    const port = await freePort();
    server = spawn(NATS_SERVER, ["-p", String(port), "-a", "127.0.0.1"], { stdio: "ignore" });
    const open = () =>
      until(
        async () => {
          try {
            return await connect({ servers: `nats://127.0.0.1:${port}` });
          } catch {
            return undefined;
          }
        },
        "nats-server to accept connections",
        10_000,
      );
    owner = await open();
    asker = await open();
  }, 20_000);
  afterAll(async () => {
    for (const subscription of subscriptions) subscription.unsubscribe();
    await owner?.close();
    await asker?.close();
    server?.kill("SIGKILL");
  });

  /** Answers every request on `subject` with `respond`. */
  const answering = (subject: string, respond: (message: Parameters<typeof respondInParts>[1]) => void) => {
    subscriptions.push(owner.subscribe(subject, { callback: (_error, message) => respond(message) }));
    return owner.flush();
  };

  it("sends an answer beyond max_payload in parts and receives it whole", async () => {
    expect(owner.info?.max_payload).toBe(1024 * 1024);
    const answer = randomBytes(3 * 1024 * 1024 + 17);
    let messages = 0;
    await answering("large", (message) => respondInParts(owner, message, answer));
    const counted = asker.subscribe(">", {
      callback: () => {
        messages++;
      },
    });
    const received = await requestInParts(asker, "large", new Uint8Array(), {
      partTimeoutMs: 2_000,
      maxBytes: answer.length,
    });
    counted.unsubscribe();
    expect(Buffer.from(received).equals(answer)).toBe(true);
    // The request, four parts and the end.
    expect(messages).toBe(6);
  });

  it("sends a small answer as one plain message", async () => {
    const answer = Buffer.from('{"value":[]}');
    await answering("small", (message) => respondInParts(owner, message, answer));
    const received = await requestInParts(asker, "small", new Uint8Array(), { partTimeoutMs: 2_000, maxBytes: 100 });
    expect(Buffer.from(received).toString()).toBe('{"value":[]}');
  });

  it("gives up as soon as the parts exceed the byte bound", async () => {
    const answer = randomBytes(3 * 1024 * 1024);
    await answering("bounded", (message) => respondInParts(owner, message, answer));
    const request = requestInParts(asker, "bounded", new Uint8Array(), {
      partTimeoutMs: 2_000,
      maxBytes: 1024 * 1024 + 1,
    });
    expect(await failureOf(request)).toBe("too-large");
    // One plain message beyond the bound too.
    await answering("bounded-plain", (message) => respondInParts(owner, message, Buffer.alloc(1_000)));
    expect(
      await failureOf(
        requestInParts(asker, "bounded-plain", new Uint8Array(), { partTimeoutMs: 2_000, maxBytes: 999 }),
      ),
    ).toBe("too-large");
  });

  it("gives up at a missing part, at a late part, and when nobody answers", async () => {
    const part = (number: number) => {
      const partHeaders = headers();
      partHeaders.set("Vigie-Part", String(number));
      return { headers: partHeaders };
    };
    await answering("gap", (message) => {
      message.respond(Buffer.from("a"), part(0));
      message.respond(Buffer.from("c"), part(2));
    });
    const options = { partTimeoutMs: 300, maxBytes: 100 };
    expect(await failureOf(requestInParts(asker, "gap", new Uint8Array(), options))).toBe("unavailable");

    await answering("late", (message) => {
      message.respond(Buffer.from("a"), part(0));
      setTimeout(() => message.respond(Buffer.from("b"), part(1)), 1_000);
    });
    const started = performance.now();
    expect(await failureOf(requestInParts(asker, "late", new Uint8Array(), options))).toBe("unavailable");
    expect(performance.now() - started).toBeLessThan(900);

    const alone = performance.now();
    expect(
      await failureOf(requestInParts(asker, "nobody", new Uint8Array(), { ...options, partTimeoutMs: 5_000 })),
    ).toBe("unavailable");
    // NATS tells at once that nobody listens: no wait for the timeout.
    expect(performance.now() - alone).toBeLessThan(2_000);
  });
});
