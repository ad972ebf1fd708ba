import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { createServer as createTcpServer, type Socket } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type HttpDefinition, validateDefinition } from "../../src/healthchecks/definition.js";
import { HttpExecutor, MAX_CONNECTIONS_PER_ORIGIN, requestPath, serverName } from "../../src/healthchecks/http.js";
import { type Certificates, generateCertificates, OPENSSL_MISSING } from "./certificates.js";
import { closedPort, type Listening, listen, silentTcpServer } from "./local-servers.js";

const RULES = { minInterval: { text: "1s", milliseconds: 1_000 } };

function http(fields: Record<string, unknown>): HttpDefinition {
  return validateDefinition(
    "http",
    { name: "web", interval: "10s", timeout: "5s", target: "127.0.0.1", "valid-status": [200], ...fields },
    RULES,
    // As in the configuration file, which may name TLS files at any path.
    { unknownKeys: "ignore", tlsFiles: "paths" },
  );
}

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage["headers"];
  body: string;
  remoteAddress: string;
}

function routes(seen: Seen[]) {
  return (request: IncomingMessage, response: ServerResponse) => {
    let body = "";
    request.on("data", (chunk) => {
      body += chunk;
    });
    request.on("end", () => {
      seen.push({
        method: request.method ?? "",
        url: request.url ?? "",
        headers: request.headers,
        body,
        remoteAddress: request.socket.remoteAddress ?? "",
      });
      const url = new URL(request.url ?? "/", "http://local");
      switch (url.pathname) {
        case "/ok":
          response.end("hello world");
          return;
        case "/boom":
          response.writeHead(500);
          response.end(`<b>boom</b> & 'single' "double"`);
          return;
        case "/large":
          response.writeHead(503);
          response.end("é".repeat(400) + "x".repeat(5_000));
          return;
        case "/moved":
          response.writeHead(302, { location: "/ok" });
          response.end("moved");
          return;
        case "/loop": {
          const hop = Number(url.searchParams.get("hop") ?? "0");
          response.writeHead(302, { location: `/loop?hop=${hop + 1}` });
          response.end();
          return;
        }
        case "/silent":
          return; // never answers
        case "/partial":
          response.writeHead(200, { "content-length": "100" });
          response.write("the beginning");
          return; // never ends
        default:
          response.writeHead(404);
          response.end("not found");
      }
    });
  };
}

describe("requestPath", () => {
  it("merges query into the path, query values winning", () => {
    expect(requestPath({ path: "/a" })).toBe("/a");
    expect(requestPath({ path: "/a", query: { x: "1", y: "a b" } })).toBe("/a?x=1&y=a+b");
    expect(requestPath({ path: "/a?x=0&z=2", query: { x: "1" } })).toBe("/a?x=1&z=2");
  });
});

describe("serverName", () => {
  it("defaults to the target, which a host override does not replace", () => {
    expect(serverName({ target: "example.org" })).toBeUndefined();
    expect(serverName({ target: "example.org", host: "www.example.org" })).toBe("example.org");
    expect(serverName({ target: "10.0.0.1", host: "www.example.org" })).toBeUndefined();
    expect(serverName({ target: "example.org", host: "www.example.org", "server-name": "api.example.org" })).toBe(
      "api.example.org",
    );
  });
});

describe("http executor against a local HTTP server", () => {
  const seen: Seen[] = [];
  let server: Listening;
  let silent: Listening;
  const executor = new HttpExecutor();
  beforeAll(async () => {
    server = await listen(createServer(routes(seen)));
    silent = await silentTcpServer();
  });
  afterAll(async () => {
    await executor.close();
    await server.close();
    await silent.close();
  });
  const last = () => seen[seen.length - 1] as Seen;

  it("succeeds on a valid status and sends the vigie User-Agent", async () => {
    expect(await executor.run(http({ port: server.port, path: "/ok" }))).toEqual({ success: true, message: "success" });
    expect(last().headers["user-agent"]).toBe("vigie-healthcheck");
    expect(last().method).toBe("GET");
  });

  it("quotes the first 1000 bytes of the body, HTML-escaped, on an invalid status", async () => {
    expect(await executor.run(http({ port: server.port, path: "/boom" }))).toEqual({
      success: false,
      message: `HTTP request failed: status 500. Body: '&lt;b&gt;boom&lt;/b&gt; &amp; &#39;single&#39; &quot;double&quot;'`,
    });
    const large = await executor.run(http({ port: server.port, path: "/large" }));
    // 400 two-byte characters then 200 one-byte ones make the first 1000 bytes.
    expect(large.message).toBe(`HTTP request failed: status 503. Body: '${"é".repeat(400)}${"x".repeat(200)}'`);
  });

  it("accepts any status of valid-status", async () => {
    expect((await executor.run(http({ port: server.port, path: "/boom", "valid-status": [200, 500] }))).success).toBe(
      true,
    );
  });

  it("sends the method, headers, merged query, body and Host override", async () => {
    const outcome = await executor.run(
      http({
        port: server.port,
        path: "/ok?from=path&x=0",
        method: "POST",
        headers: { "X-Token": "abc", "Content-Type": "text/plain" },
        query: { x: "1" },
        body: "payload",
        host: "example.test",
      }),
    );
    expect(outcome.success).toBe(true);
    expect(last()).toMatchObject({
      method: "POST",
      url: "/ok?from=path&x=1",
      body: "payload",
      headers: { "x-token": "abc", "content-type": "text/plain", host: "example.test" },
    });
    await executor.run(http({ port: server.port, path: "/ok", method: "HEAD" }));
    expect(last().method).toBe("HEAD");
    await executor.run(http({ port: server.port, path: "/ok", headers: { "User-Agent": "mine" } }));
    expect(last().headers["user-agent"]).toBe("mine");
  });

  it("binds source-ip", async () => {
    expect((await executor.run(http({ port: server.port, path: "/ok", "source-ip": "127.0.0.2" }))).success).toBe(true);
    expect(last().remoteAddress).toBe("127.0.0.2");
  });

  it("requires every body-regexp to match", async () => {
    const ok = await executor.run(http({ port: server.port, path: "/ok", "body-regexp": ["hello", "wor.d$"] }));
    expect(ok.success).toBe(true);
    expect(await executor.run(http({ port: server.port, path: "/ok", "body-regexp": ["hello", "^world"] }))).toEqual({
      success: false,
      message: "body does not match regexp ^world",
    });
  });

  it("judges a 3xx against valid-status without redirect, follows it with redirect", async () => {
    expect(await executor.run(http({ port: server.port, path: "/moved" }))).toEqual({
      success: false,
      message: "HTTP request failed: status 302. Body: 'moved'",
    });
    expect((await executor.run(http({ port: server.port, path: "/moved", "valid-status": [302] }))).success).toBe(true);
    expect((await executor.run(http({ port: server.port, path: "/moved", redirect: true }))).success).toBe(true);
    expect(last().url).toBe("/ok");
  });

  it("gives up after 10 redirects", async () => {
    const before = seen.length;
    expect(await executor.run(http({ port: server.port, path: "/loop", redirect: true }))).toEqual({
      success: false,
      message: "HTTP request failed: more than 10 redirects",
    });
    expect(seen.length - before).toBe(11);
  });

  it("reports a refused connection", async () => {
    const port = await closedPort();
    expect(await executor.run(http({ port, path: "/" }))).toEqual({
      success: false,
      message: `HTTP request failed: connect ECONNREFUSED 127.0.0.1:${port}`,
    });
  });

  it("bounds waiting for the headers and reading the body by the timeout", async () => {
    const started = Date.now();
    expect(await executor.run(http({ port: silent.port, timeout: "300ms" }))).toEqual({
      success: false,
      message: "HTTP request failed: timeout after 300ms",
    });
    expect(await executor.run(http({ port: server.port, path: "/silent", timeout: "0.3s" }))).toEqual({
      success: false,
      message: "HTTP request failed: timeout after 0.3s",
    });
    expect(
      await executor.run(http({ port: server.port, path: "/partial", timeout: "300ms", "body-regexp": ["end"] })),
    ).toEqual({ success: false, message: "HTTP request failed: timeout after 300ms" });
    expect(await executor.run(http({ port: server.port, path: "/partial", timeout: "300ms" }))).toEqual({
      success: false,
      message: "HTTP request failed: timeout after 300ms",
    });
    // Four timeouts of 300 ms: far below what an unbounded wait would take.
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it("closes the connection of a request stuck in its headers or its body at the check's timeout", async () => {
    // undici's own header and body timers are off: the check's timeout alone must free the socket.
    const open = new Set<Socket>();
    const stuck = createTcpServer((socket) => {
      open.add(socket);
      socket.on("error", () => {});
      socket.on("close", () => open.delete(socket));
      socket.once("data", (request) => {
        if (request.toString("latin1").startsWith("GET /body ")) {
          socket.write("HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nthe beginning");
        }
      });
    });
    const listening = await listen(stuck);
    const own = new HttpExecutor();
    try {
      for (const path of ["/headers", "/body"]) {
        expect(await own.run(http({ port: listening.port, path, timeout: "300ms" }))).toEqual({
          success: false,
          message: "HTTP request failed: timeout after 300ms",
        });
        const deadline = Date.now() + 2_000;
        while (open.size > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
        expect(open.size).toBe(0);
      }
    } finally {
      await own.close();
      await listening.close();
    }
  });

  it("bounds the connection phase by the timeout (a TLS handshake that never completes)", async () => {
    const started = Date.now();
    // undici counts the handshake as part of connecting; its own connect timeout is 10 s by default.
    expect(await executor.run(http({ port: silent.port, protocol: "https", timeout: "300ms" }))).toEqual({
      success: false,
      message: "HTTP request failed: timeout after 300ms",
    });
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("abandons the request when the module stops", async () => {
    const stop = new AbortController();
    const pending = executor.run(
      http({ port: server.port, path: "/silent", timeout: "30s", interval: "1m" }),
      stop.signal,
    );
    setTimeout(() => stop.abort(), 50);
    expect(await pending).toEqual({
      success: false,
      message: "HTTP request failed: the healthchecks module is stopping",
    });
  });

  it("abandons every request still in flight when the module stops, not those that ended", async () => {
    const stop = new AbortController();
    const silent = () =>
      executor.run(http({ port: server.port, path: "/silent", timeout: "30s", interval: "1m" }), stop.signal);
    const first = silent();
    // Ends between two that wait: it leaves the middle of the executor's list of exchanges in flight.
    const ended = executor.run(http({ port: server.port, path: "/ok", timeout: "30s", interval: "1m" }), stop.signal);
    const last = [silent(), silent()];
    expect(await ended).toEqual({ success: true, message: "success" });
    setTimeout(() => stop.abort(), 50);
    const stopping = { success: false, message: "HTTP request failed: the healthchecks module is stopping" };
    expect(await Promise.all([first, ...last])).toEqual([stopping, stopping, stopping]);
  });
});

describe("http executor connection pools", () => {
  /** The remote address of each connection the server accepted. */
  const connections: string[] = [];
  let server: Listening;
  const executor = new HttpExecutor();
  beforeAll(async () => {
    const plain = createServer((_request, response) => response.end("ok"));
    // No idle timeout and so no `Keep-Alive: timeout=` hint, as nginx: the client decides.
    plain.keepAliveTimeout = 0;
    plain.on("connection", (socket) => connections.push(socket.remoteAddress ?? ""));
    server = await listen(plain);
  });
  afterAll(async () => {
    await executor.close();
    await server.close();
  });

  it("shares one keep-alive pool between the checks of one origin", async () => {
    // 300 different checks of one origin (names, paths, timeouts, valid statuses), 100 at a time.
    const checks = Array.from({ length: 300 }, (_, index) =>
      http({
        name: `c${index}`,
        port: server.port,
        path: `/${index}`,
        timeout: index % 2 === 0 ? "5s" : "2s",
        "valid-status": index % 3 === 0 ? [200] : [200, 204],
      }),
    );
    for (let start = 0; start < checks.length; start += 100) {
      const outcomes = await Promise.all(checks.slice(start, start + 100).map((check) => executor.run(check)));
      expect(outcomes.every((outcome) => outcome.success)).toBe(true);
    }
    const opened = connections.length;
    expect(opened).toBeGreaterThan(0);
    expect(opened).toBeLessThanOrEqual(MAX_CONNECTIONS_PER_ORIGIN);
    // One after the other: the kept connections serve them all.
    for (const check of checks.slice(0, 50)) expect((await executor.run(check)).success).toBe(true);
    expect(connections.length).toBe(opened);
    // Idle for longer than undici's default keep-alive (4 s): the connections are still there.
    await new Promise((resolve) => setTimeout(resolve, 4_500));
    for (const check of checks.slice(0, 10)) expect((await executor.run(check)).success).toBe(true);
    expect(connections.length).toBe(opened);
  }, 15_000);

  it("sends the request once more when the server closes a kept connection as it goes out", async () => {
    // When `kill` is set, the server closes a kept connection as a request arrives on it, once.
    let kill = true;
    const closing = createServer((request, response) => {
      const socket = request.socket as typeof request.socket & { served?: number };
      socket.served = (socket.served ?? 0) + 1;
      if (kill && socket.served >= 2) {
        kill = false;
        socket.destroy();
      } else {
        response.end("ok");
      }
    });
    closing.keepAliveTimeout = 60_000;
    const target = await listen(closing);
    try {
      const get = http({ name: "get", port: target.port });
      for (let run = 0; run < 4; run++) expect(await executor.run(get)).toEqual({ success: true, message: "success" });
      expect(kill).toBe(false);
      // A POST is not idempotent: it is not sent twice.
      kill = true;
      const post = http({ name: "post", port: target.port, method: "POST", body: "x" });
      expect(await executor.run(post)).toEqual({ success: false, message: "HTTP request failed: other side closed" });
      expect((await executor.run(post)).success).toBe(true);
    } finally {
      await target.close();
    }
  });

  it("gives checks of another source-ip a pool of their own", async () => {
    connections.length = 0;
    const plain = http({ name: "plain", port: server.port });
    const bound = http({ name: "bound", port: server.port, "source-ip": "127.0.0.2" });
    for (const check of [bound, plain, bound, plain, bound]) expect((await executor.run(check)).success).toBe(true);
    // The source-ip pool opened one connection; the other origin's pool had one left open already.
    expect(connections).toEqual(["127.0.0.2"]);
  });
});

describe.skipIf(OPENSSL_MISSING !== undefined)("http executor against local HTTPS servers", () => {
  let certificates: Certificates;
  let open: Listening;
  let mutual: Listening;
  const executor = new HttpExecutor();
  const seen: Seen[] = [];
  beforeAll(async () => {
    certificates = generateCertificates();
    const key = certificates.read(certificates.serverKey);
    const cert = certificates.read(certificates.serverCert);
    open = await listen(createHttpsServer({ key, cert }, routes(seen)));
    mutual = await listen(
      createHttpsServer(
        { key, cert, ca: certificates.read(certificates.caCert), requestCert: true, rejectUnauthorized: true },
        routes(seen),
      ),
    );
  });
  afterAll(async () => {
    await executor.close();
    await open?.close();
    await mutual?.close();
  });
  const https = (fields: Record<string, unknown>) => http({ protocol: "https", path: "/ok", ...fields });
  const last = () => seen[seen.length - 1] as Seen;

  it("verifies the chain with cacert and the name against the target", async () => {
    expect(await executor.run(https({ port: open.port, target: "localhost", cacert: certificates.caCert }))).toEqual({
      success: true,
      message: "success",
    });
    expect((await executor.run(https({ port: open.port, cacert: certificates.caCert }))).success).toBe(true);
  });

  it("fails on an unknown CA unless insecure", async () => {
    const unknown = await executor.run(https({ port: open.port, target: "localhost" }));
    expect(unknown.success).toBe(false);
    expect(unknown.message).toMatch(/^HTTP request failed: .*(certificate|verify)/);
    const other = await executor.run(https({ port: open.port, target: "localhost", cacert: certificates.otherCaCert }));
    expect(other.success).toBe(false);
    expect((await executor.run(https({ port: open.port, target: "localhost", insecure: true }))).success).toBe(true);
  });

  it("verifies server-name instead of the target when given", async () => {
    const wrong = await executor.run(
      https({ port: open.port, target: "localhost", cacert: certificates.caCert, "server-name": "wrong.example" }),
    );
    expect(wrong.success).toBe(false);
    expect(wrong.message).toContain("wrong.example");
    expect(
      (await executor.run(https({ port: open.port, cacert: certificates.caCert, "server-name": "localhost" }))).success,
    ).toBe(true);
  });

  it("verifies the target, not the host override, when server-name is not given", async () => {
    const base = { port: open.port, cacert: certificates.caCert };
    // The certificate names localhost: the Host header does not take the target's place.
    expect(await executor.run(https({ ...base, target: "localhost", host: "wrong.example" }))).toEqual({
      success: true,
      message: "success",
    });
    expect(last().headers.host).toBe("wrong.example");
    const named = await executor.run(
      https({ ...base, target: "localhost", host: "localhost", "server-name": "wrong.example" }),
    );
    expect(named.success).toBe(false);
    expect(named.message).toContain("wrong.example");
    // An IP target is no TLS name: the host override is verified then.
    expect((await executor.run(https({ ...base, target: "127.0.0.1", host: "localhost" }))).success).toBe(true);
    const virtualHost = await executor.run(https({ ...base, target: "127.0.0.1", host: "wrong.example" }));
    expect(virtualHost.success).toBe(false);
    expect(virtualHost.message).toContain("wrong.example");
  });

  it("refuses a FIFO, a device or a file over 1 MiB at once instead of reading it without bound", async () => {
    // Before the 1 MiB bound (docs/security.md) a FIFO nobody writes to blocked the read until the
    // timeout; now it is refused at once, whatever the timeout.
    const fifo = join(certificates.directory, "http-ca.fifo");
    execFileSync("mkfifo", [fifo]);
    const started = Date.now();
    expect(await executor.run(https({ port: open.port, target: "localhost", cacert: fifo, timeout: "5s" }))).toEqual({
      success: false,
      message: `HTTP request failed: cannot read cacert ${fifo}: not a regular file`,
    });
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(await executor.run(https({ port: open.port, target: "localhost", cacert: "/dev/zero" }))).toEqual({
      success: false,
      message: "HTTP request failed: cannot read cacert /dev/zero: not a regular file",
    });
    const large = join(certificates.directory, "large-ca.pem");
    writeFileSync(large, Buffer.concat([certificates.read(certificates.caCert), Buffer.alloc(1024 * 1024)]));
    expect(await executor.run(https({ port: open.port, target: "localhost", cacert: large }))).toEqual({
      success: false,
      message: `HTTP request failed: cannot read cacert ${large}: larger than 1 MiB`,
    });
  });

  it("presents the client certificate (key and cert) to a server that requires one", async () => {
    const withCertificate = https({
      port: mutual.port,
      target: "localhost",
      cacert: certificates.caCert,
      key: certificates.clientKey,
      cert: certificates.clientCert,
    });
    expect(await executor.run(withCertificate)).toEqual({ success: true, message: "success" });
    const without = await executor.run(https({ port: mutual.port, target: "localhost", cacert: certificates.caCert }));
    expect(without.success).toBe(false);
    expect(without.message).toMatch(/^HTTP request failed: /);
  });

  it("reports a client certificate file that cannot be read", async () => {
    expect(
      await executor.run(
        https({
          port: mutual.port,
          key: certificates.clientKey,
          cert: "/nonexistent/client.pem",
          cacert: certificates.caCert,
        }),
      ),
    ).toEqual({ success: false, message: "HTTP request failed: cannot read cert /nonexistent/client.pem: ENOENT" });
  });
});

if (OPENSSL_MISSING !== undefined) console.warn(OPENSSL_MISSING);
