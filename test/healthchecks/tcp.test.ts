import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TcpDefinition, validateDefinition } from "../../src/healthchecks/definition.js";
import { runTcp } from "../../src/healthchecks/tcp.js";
import { closedPort, type Listening, silentTcpServer } from "./local-servers.js";

const RULES = { minInterval: { text: "1s", milliseconds: 1_000 } };

function tcp(fields: Record<string, unknown>): TcpDefinition {
  return validateDefinition(
    "tcp",
    { name: "port", interval: "10s", timeout: "2s", target: "127.0.0.1", ...fields },
    RULES,
    {
      unknownKeys: "ignore",
    },
  );
}

describe("tcp executor", () => {
  let server: Listening;
  beforeAll(async () => {
    server = await silentTcpServer();
  });
  afterAll(() => server.close());

  it("succeeds when a connection opens", async () => {
    expect(await runTcp(tcp({ port: server.port }))).toEqual({ success: true, message: "success" });
    expect(await runTcp(tcp({ port: server.port, target: "localhost", "source-ip": "127.0.0.2" }))).toEqual({
      success: true,
      message: "success",
    });
  });

  it("fails with the socket error on a closed port", async () => {
    const port = await closedPort();
    expect(await runTcp(tcp({ port }))).toEqual({
      success: false,
      message: `TCP connection failed on 127.0.0.1:${port}: connect ECONNREFUSED 127.0.0.1:${port}`,
    });
  });

  it("inverts the verdict with should-fail", async () => {
    const port = await closedPort();
    expect(await runTcp(tcp({ port, "should-fail": true }))).toEqual({ success: true, message: "success" });
    expect(await runTcp(tcp({ port: server.port, "should-fail": true }))).toEqual({
      success: false,
      message: `TCP connection succeeded on 127.0.0.1:${server.port} but a failure was expected`,
    });
  });

  it("writes IPv6 endpoints in brackets", async () => {
    const port = await closedPort();
    const outcome = await runTcp(tcp({ target: "::1", port }));
    expect(outcome.success).toBe(false);
    expect(outcome.message).toMatch(new RegExp(`^TCP connection failed on \\[::1\\]:${port}: `));
  });

  it("is abandoned when the module stops", async () => {
    const stop = new AbortController();
    stop.abort();
    expect(await runTcp(tcp({ port: server.port }), stop.signal)).toEqual({
      success: false,
      message: `TCP connection failed on 127.0.0.1:${server.port}: the healthchecks module is stopping`,
    });
  });
});
