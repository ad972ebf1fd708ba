/**
 * The files of deploy/ that users copy: the systemd unit is accepted by `systemd-analyze verify`
 * and rated at most 2.5 by `systemd-analyze security`; the Caddyfile passes `caddy validate`; the
 * nginx server block passes `nginx -t` and, run by a real nginx in front of the real process with a
 * test certificate, serves the API over TLS and carries a WebSocket subscription both ways.
 *
 * Each tool comes from Debian (.ci/run installs them); a missing one skips its test with the reason.
 */
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { Agent, fetch } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { freePort, startVigie, stopVigie, temporaryDirectory, type VigieProcess } from "../support/process.js";
import { until } from "../support/until.js";

const DEPLOY = resolve(import.meta.dirname, "../../deploy");

/** The path of a command found on PATH or in the sbin directories, else undefined. */
function tool(name: string): string | undefined {
  for (const directory of [...(process.env.PATH ?? "").split(":"), "/usr/sbin", "/sbin"]) {
    const candidate = join(directory, name);
    if (directory !== "" && spawnSync("test", ["-x", candidate]).status === 0) return candidate;
  }
  return undefined;
}

/** Says why a test is skipped, once, and gives whether to skip it. */
function missing(command: string | undefined, name: string, what: string): boolean {
  if (command === undefined) console.warn(`skipping ${what}: ${name} is not installed (Debian package)`);
  return command === undefined;
}

const SYSTEMD_ANALYZE = tool("systemd-analyze");
const NGINX = tool("nginx");
const CADDY = tool("caddy");

describe.skipIf(missing(SYSTEMD_ANALYZE, "systemd-analyze", "the systemd unit checks"))(
  "deploy/systemd/vigie.service",
  () => {
    const unit = join(DEPLOY, "systemd/vigie.service");

    it("passes systemd-analyze verify", () => {
      const run = spawnSync(SYSTEMD_ANALYZE as string, ["verify", unit], {
        encoding: "utf8",
        cwd: temporaryDirectory(),
      });
      // verify cannot see `vigie` itself on a machine where it is not installed: only that may be said.
      // It also reads the machine's own units (carbon-cache.service from graphite-carbon, which the
      // graphite output's test installs, has warnings of its own): what it says of them is not ours.
      const complaints = `${run.stdout}${run.stderr}`
        .split("\n")
        .filter((line) => line.trim() !== "" && !/vigie\b.*(not found|No such file|is not executable)/i.test(line))
        .filter((line) => !/^\/(usr\/)?lib\/systemd\/system\/(?!vigie)[^:]+:/.test(line));
      expect(complaints).toEqual([]);
      expect(run.status).toBe(0);
    });

    it("is rated at most 2.5 by systemd-analyze security (offline)", () => {
      const output = execFileSync(SYSTEMD_ANALYZE as string, ["security", "--offline=yes", unit], {
        encoding: "utf8",
        cwd: temporaryDirectory(),
      });
      const level = /Overall exposure level for vigie\.service: ([\d.]+)/.exec(output);
      expect(level, output).not.toBeNull();
      console.info(`systemd-analyze security: exposure ${level?.[1]}`);
      expect(Number(level?.[1])).toBeLessThanOrEqual(2.5);
    });

    it("runs the service the way the docs say: dynamic user, state in /var/lib/vigie, hardened", () => {
      const text = readFileSync(unit, "utf8");
      for (const line of [
        "DynamicUser=yes",
        "StateDirectory=vigie",
        "ConfigurationDirectory=vigie",
        "WorkingDirectory=/var/lib/vigie",
        "Environment=VIGIE_DATABASE_URL=sqlite:/var/lib/vigie/vigie.db",
        "ExecStart=/usr/bin/env vigie serve --config /etc/vigie/vigie.yaml",
        "ExecReload=/bin/kill -HUP $MAINPID",
        "Restart=on-failure",
        "CapabilityBoundingSet=",
        "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX",
        "SystemCallFilter=@system-service",
      ]) {
        expect(text.split("\n"), line).toContain(line);
      }
    });
  },
);

describe.skipIf(missing(CADDY, "caddy", "the Caddyfile check"))("deploy/caddy/Caddyfile", () => {
  it("passes caddy validate", () => {
    const run = spawnSync(
      CADDY as string,
      ["validate", "--config", join(DEPLOY, "caddy/Caddyfile"), "--adapter", "caddyfile"],
      { encoding: "utf8", cwd: temporaryDirectory(), env: { ...process.env, HOME: temporaryDirectory() } },
    );
    expect(run.status, `${run.stdout}${run.stderr}`).toBe(0);
    expect(`${run.stdout}${run.stderr}`).toContain("Valid configuration");
  });
});

describe.skipIf(missing(NGINX, "nginx", "the nginx tests"))(
  "deploy/nginx/vigie.conf in front of the real process",
  () => {
    const directory = temporaryDirectory();
    let vigie: VigieProcess | undefined;
    let nginx: ReturnType<typeof spawn> | undefined;
    let nginxPort = 0;
    const insecure = new Agent({ connect: { rejectUnauthorized: false } });

    /** The example with a test certificate, ports of this test and the process as the upstream. */
    function localConfig(vigiePort: number, httpPort: number): string {
      const example = readFileSync(join(DEPLOY, "nginx/vigie.conf"), "utf8");
      const server = example
        .replace("/etc/ssl/certs/vigie.example.org.pem", join(directory, "cert.pem"))
        .replace("/etc/ssl/private/vigie.example.org.key", join(directory, "key.pem"))
        .replace("server 127.0.0.1:8080;", `server 127.0.0.1:${vigiePort};`)
        .replaceAll("listen 443 ssl http2;", `listen 127.0.0.1:${nginxPort} ssl http2;`)
        .replaceAll("listen [::]:443 ssl http2;", "")
        .replaceAll("listen 80;", `listen 127.0.0.1:${httpPort};`)
        .replaceAll("listen [::]:80;", "");
      writeFileSync(join(directory, "vigie.conf"), server);
      const temp = (name: string) => `${name} ${join(directory, name.replace("_path", ""))};`;
      return [
        "daemon off;",
        `pid ${join(directory, "nginx.pid")};`,
        "error_log stderr warn;",
        // The master runs as root in CI; its workers must read the test's 0700 directory.
        process.getuid?.() === 0 ? "user root;" : "",
        "events {}",
        "http {",
        "  access_log off;",
        ...["client_body_temp_path", "proxy_temp_path", "fastcgi_temp_path", "uwsgi_temp_path", "scgi_temp_path"].map(
          (name) => `  ${temp(name)}`,
        ),
        `  include ${join(directory, "vigie.conf")};`,
        "}",
      ].join("\n");
    }

    beforeAll(async () => {
      execFileSync("openssl", [
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "1",
        "-subj",
        "/CN=vigie.example.org",
        "-keyout",
        join(directory, "key.pem"),
        "-out",
        join(directory, "cert.pem"),
      ]);
      const vigiePort = await freePort();
      nginxPort = await freePort();
      const configFile = join(directory, "vigie.yaml");
      writeFileSync(
        configFile,
        [
          "http:",
          "  host: 127.0.0.1",
          `  port: ${vigiePort}`,
          "  public-url: https://vigie.example.org",
          "  trust-proxy: true",
          "database:",
          `  url: sqlite:${join(directory, "vigie.db")}`,
        ].join("\n"),
      );
      vigie = await startVigie({ configFile, port: vigiePort, cwd: directory });
      writeFileSync(join(directory, "nginx.conf"), localConfig(vigiePort, await freePort()));
      const test = spawnSync(NGINX as string, ["-t", "-p", directory, "-c", join(directory, "nginx.conf")], {
        encoding: "utf8",
      });
      expect(test.status, test.stderr).toBe(0);
      nginx = spawn(NGINX as string, ["-p", directory, "-c", join(directory, "nginx.conf")], { stdio: "inherit" });
      await until(
        async () =>
          (await fetch(`https://127.0.0.1:${nginxPort}/healthz`, { dispatcher: insecure }).catch(() => undefined))?.ok
            ? true
            : undefined,
        "nginx to proxy /healthz",
        10_000,
      );
    }, 60_000);

    afterAll(async () => {
      nginx?.kill("SIGQUIT");
      await stopVigie(vigie);
      await insecure.close();
    });

    const api = async (method: string, path: string, body?: unknown) => {
      const response = await fetch(`https://127.0.0.1:${nginxPort}${path}`, {
        method,
        headers: body === undefined ? {} : { "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
        dispatcher: insecure,
      });
      return { status: response.status, body: await response.json() };
    };

    it("passes nginx -t and serves the API over TLS", async () => {
      expect(await api("GET", "/healthz")).toMatchObject({ status: 200 });
    });

    it("carries a WebSocket subscription through the upgrade", async () => {
      const stream = "{:actions {:action :publish :params [:alerts]}}";
      expect(
        await api("POST", "/api/v1/stream/alerts", { config: Buffer.from(stream, "utf8").toString("base64") }),
      ).toEqual({ status: 201, body: { message: "stream added" } });
      const socket = new WebSocket(`wss://127.0.0.1:${nginxPort}/api/v1/channel/alerts`, { rejectUnauthorized: false });
      const received = new Promise<unknown>((done) => socket.once("message", (data) => done(JSON.parse(String(data)))));
      await new Promise<void>((opened, failed) => {
        socket.once("open", () => opened());
        socket.once("error", failed);
      });
      const event = { host: "web1", service: "disk", state: "critical", time: 1_700_000_000 };
      expect(await api("PUT", "/api/v1/stream/alerts", { event })).toEqual({ status: 200, body: { message: "ok" } });
      expect(await received).toMatchObject(event);
      socket.close();
    });

    it("carries a stream tap through the upgrade", async () => {
      const stream = "{:actions {:action :sdo}}";
      expect(
        await api("POST", "/api/v1/stream/tapped", { config: Buffer.from(stream, "utf8").toString("base64") }),
      ).toEqual({ status: 201, body: { message: "stream added" } });
      const socket = new WebSocket(`wss://127.0.0.1:${nginxPort}/api/v1/stream/tapped/tap`, {
        rejectUnauthorized: false,
      });
      const received = new Promise<unknown>((done) => socket.once("message", (data) => done(JSON.parse(String(data)))));
      await new Promise<void>((opened, failed) => {
        socket.once("open", () => opened());
        socket.once("error", failed);
      });
      const event = { host: "web1", service: "cpu", metric: 3, time: 1_700_000_000 };
      expect(await api("PUT", "/api/v1/stream/tapped", { event })).toEqual({ status: 200, body: { message: "ok" } });
      expect(await received).toEqual(event);
      socket.close();
    });
  },
);
