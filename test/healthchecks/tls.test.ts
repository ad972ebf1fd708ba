import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { createServer } from "node:tls";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TlsDefinition, validateDefinition } from "../../src/healthchecks/definition.js";
import { runTls } from "../../src/healthchecks/tls.js";
import { type Certificates, generateCertificates, OPENSSL_MISSING } from "./certificates.js";
import { closedPort, type Listening, listen, silentTcpServer } from "./local-servers.js";

const RULES = { minInterval: { text: "1s", milliseconds: 1_000 } };

function tls(fields: Record<string, unknown>): TlsDefinition {
  return validateDefinition(
    "tls",
    { name: "cert", interval: "10s", timeout: "5s", target: "localhost", ...fields },
    RULES,
    {
      unknownKeys: "ignore",
      // As in the configuration file: TLS files at any path (platform.md §8).
      tlsFiles: "paths",
    },
  );
}

if (OPENSSL_MISSING !== undefined) console.warn(OPENSSL_MISSING);

describe.skipIf(OPENSSL_MISSING !== undefined)("tls executor against local TLS servers", () => {
  let certificates: Certificates;
  let valid: Listening;
  let expiring: Listening;
  let mutual: Listening;
  let silent: Listening;
  beforeAll(async () => {
    certificates = generateCertificates();
    const key = certificates.read(certificates.serverKey);
    const ca = certificates.read(certificates.caCert);
    const serve = (options: Parameters<typeof createServer>[0]) =>
      listen(createServer(options, (socket) => socket.end()));
    valid = await serve({ key, cert: certificates.read(certificates.serverCert) });
    // The chain the server presents: the one-day leaf and the CA.
    expiring = await serve({ key, cert: Buffer.concat([certificates.read(certificates.shortCert), ca]) });
    mutual = await serve({
      key,
      cert: certificates.read(certificates.serverCert),
      ca,
      requestCert: true,
      rejectUnauthorized: true,
    });
    silent = await silentTcpServer();
  });
  afterAll(async () => {
    for (const server of [valid, expiring, mutual, silent]) await server?.close();
  });

  it("succeeds when the chain and the name verify", async () => {
    expect(await runTls(tls({ port: valid.port, cacert: certificates.caCert }))).toEqual({
      success: true,
      message: "success",
    });
    // An IP target is verified against the certificate's IP address.
    expect(await runTls(tls({ port: valid.port, target: "127.0.0.1", cacert: certificates.caCert }))).toEqual({
      success: true,
      message: "success",
    });
  });

  it("fails the handshake on an unknown CA or a wrong name, unless insecure", async () => {
    const unknown = await runTls(tls({ port: valid.port, cacert: certificates.otherCaCert }));
    expect(unknown.success).toBe(false);
    expect(unknown.message).toMatch(new RegExp(`^TLS handshake failed on localhost:${valid.port}: .+`));
    const system = await runTls(tls({ port: valid.port }));
    expect(system.success).toBe(false);
    const wrongName = await runTls(
      tls({ port: valid.port, cacert: certificates.caCert, "server-name": "wrong.example" }),
    );
    expect(wrongName.success).toBe(false);
    expect(wrongName.message).toContain("wrong.example");
    expect(await runTls(tls({ port: valid.port, insecure: true, "server-name": "wrong.example" }))).toEqual({
      success: true,
      message: "success",
    });
  });

  it("fails when the earliest certificate of the chain expires within expiration-delay", async () => {
    const soon = await runTls(tls({ port: expiring.port, cacert: certificates.caCert, "expiration-delay": "48h" }));
    expect(soon.success).toBe(false);
    const match = /^the certificate for localhost:(\d+) expires at (.+)$/.exec(soon.message);
    expect(match?.[1]).toBe(String(expiring.port));
    const expiry = Date.parse(match?.[2] ?? "");
    // RFC 3339 as toISOString writes it, about one day from now.
    expect(match?.[2]).toBe(new Date(expiry).toISOString());
    expect(expiry - Date.now()).toBeGreaterThan(22 * 3_600_000);
    expect(expiry - Date.now()).toBeLessThan(26 * 3_600_000);
    expect(await runTls(tls({ port: expiring.port, cacert: certificates.caCert, "expiration-delay": "1h" }))).toEqual({
      success: true,
      message: "success",
    });
    // 0 turns the check off.
    expect(await runTls(tls({ port: expiring.port, cacert: certificates.caCert }))).toEqual({
      success: true,
      message: "success",
    });
    // The 30-day leaf is not within 48 hours.
    expect(await runTls(tls({ port: valid.port, cacert: certificates.caCert, "expiration-delay": "48h" }))).toEqual({
      success: true,
      message: "success",
    });
  });

  it("presents the client certificate to a server that requires one", async () => {
    expect(
      await runTls(
        tls({
          port: mutual.port,
          cacert: certificates.caCert,
          key: certificates.clientKey,
          cert: certificates.clientCert,
        }),
      ),
    ).toEqual({ success: true, message: "success" });
  });

  it("refuses a FIFO, a device or a file over 1 MiB at once instead of reading it without bound", async () => {
    // Before the 1 MiB bound (platform.md §8) a FIFO nobody writes to blocked the read until the
    // timeout; now it is refused at once, whatever the timeout.
    const fifo = join(certificates.directory, "tls-ca.fifo");
    execFileSync("mkfifo", [fifo]);
    const started = Date.now();
    expect(await runTls(tls({ port: valid.port, cacert: fifo, timeout: "5s" }))).toEqual({
      success: false,
      message: `TLS handshake failed on localhost:${valid.port}: cannot read cacert ${fifo}: not a regular file`,
    });
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(await runTls(tls({ port: valid.port, cacert: "/dev/zero" }))).toEqual({
      success: false,
      message: `TLS handshake failed on localhost:${valid.port}: cannot read cacert /dev/zero: not a regular file`,
    });
    const large = join(certificates.directory, "large-ca.pem");
    writeFileSync(large, Buffer.concat([certificates.read(certificates.caCert), Buffer.alloc(1024 * 1024)]));
    expect(await runTls(tls({ port: valid.port, cacert: large }))).toEqual({
      success: false,
      message: `TLS handshake failed on localhost:${valid.port}: cannot read cacert ${large}: larger than 1 MiB`,
    });
  });

  it("reports unreadable files, refused connections and timeouts", async () => {
    expect(await runTls(tls({ port: valid.port, cacert: "/nonexistent/ca.pem" }))).toEqual({
      success: false,
      message: `TLS handshake failed on localhost:${valid.port}: cannot read cacert /nonexistent/ca.pem: ENOENT`,
    });
    const port = await closedPort();
    expect(await runTls(tls({ port, target: "127.0.0.1" }))).toEqual({
      success: false,
      message: `TLS handshake failed on 127.0.0.1:${port}: connect ECONNREFUSED 127.0.0.1:${port}`,
    });
    expect(await runTls(tls({ port: silent.port, timeout: "300ms" }))).toEqual({
      success: false,
      message: `TLS handshake failed on localhost:${silent.port}: timeout after 300ms`,
    });
  });
});
