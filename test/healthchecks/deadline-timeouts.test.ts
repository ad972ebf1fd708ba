/**
 * The timeout bounds a whole run, tcp connection and dns lookup included. A connection that
 * neither opens nor fails, or a resolver that never answers, cannot be produced reliably on every
 * machine, so these tests replace `net.connect` and `dns.lookup` with ones that hang.
 */
import { EventEmitter } from "node:events";
import { afterEach, describe, expect, it, vi } from "vitest";
import { type Kind, validateDefinition } from "../../src/healthchecks/definition.js";
import { runDns } from "../../src/healthchecks/dns.js";
import { runTcp } from "../../src/healthchecks/tcp.js";

const hang = vi.hoisted(() => ({ connect: false, lookup: false, sockets: [] as Array<{ destroyed: boolean }> }));

vi.mock("node:net", async (importOriginal) => {
  const actual = await importOriginal<typeof import("node:net")>();
  return {
    ...actual,
    connect: (...args: Parameters<typeof actual.connect>) => {
      if (!hang.connect) return actual.connect(...args);
      // A socket whose connection attempt never ends (a SYN dropped by a firewall).
      const socket = Object.assign(new EventEmitter(), {
        destroyed: false,
        destroy() {
          socket.destroyed = true;
          return socket;
        },
      });
      hang.sockets.push(socket);
      return socket;
    },
  };
});

vi.mock("node:dns/promises", async (importOriginal) => {
  const actual = await importOriginal<typeof import("node:dns/promises")>();
  return {
    ...actual,
    lookup: (...args: Parameters<typeof actual.lookup>) =>
      hang.lookup ? new Promise(() => {}) : actual.lookup(...args),
  };
});

afterEach(() => {
  hang.connect = false;
  hang.lookup = false;
  hang.sockets.length = 0;
});

const RULES = { minInterval: { text: "1s", milliseconds: 1_000 } };
const define = (kind: Kind, fields: Record<string, unknown>) =>
  validateDefinition(kind, { name: "bounded", interval: "10s", ...fields }, RULES, { unknownKeys: "ignore" }) as never;

describe("the timeout bounds", () => {
  it("a tcp connection that never opens, and gives up the socket", async () => {
    hang.connect = true;
    const started = Date.now();
    expect(await runTcp(define("tcp", { target: "10.0.0.1", port: 22, timeout: "200ms" }))).toEqual({
      success: false,
      message: "TCP connection failed on 10.0.0.1:22: timeout after 200ms",
    });
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(hang.sockets).toHaveLength(1);
    expect(hang.sockets[0]?.destroyed).toBe(true);
    // With should-fail, a connection that does not open in time is the expected failure.
    expect(
      await runTcp(define("tcp", { target: "10.0.0.1", port: 22, timeout: "200ms", "should-fail": true })),
    ).toEqual({ success: true, message: "success" });
  });

  it("a dns lookup that never answers", async () => {
    hang.lookup = true;
    const started = Date.now();
    expect(await runDns(define("dns", { domain: "slow.example", timeout: "200ms" }))).toEqual({
      success: false,
      message: "DNS lookup failed for slow.example: timeout after 200ms",
    });
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});
