import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { configuredChecks } from "../../src/healthchecks/config.js";
import { healthchecksModule } from "../../src/healthchecks/index.js";
import { ConfigError, loadConfig, parseConfig } from "../../src/platform/config.js";
import { streamsModule } from "../../src/streams/index.js";
import { temporaryDirectory } from "../support/temporary.js";

const parse = (healthchecks: unknown) => parseConfig({ healthchecks }, {}, [healthchecksModule]);
const section = (healthchecks: unknown) => parse(healthchecks).modules.healthchecks as never;
const refusal = (healthchecks: unknown): string => {
  try {
    parse(healthchecks);
  } catch (error) {
    if (error instanceof ConfigError) return error.message;
    throw error;
  }
  throw new Error("the configuration was accepted");
};

const tcp = (name: string, fields: Record<string, unknown> = {}) => ({
  name,
  target: "127.0.0.1",
  port: 22,
  timeout: "1s",
  interval: "10s",
  ...fields,
});

describe("the healthchecks section", () => {
  it("takes history.retention: 0 from a YAML file (keep only each check's latest result)", async () => {
    const file = join(temporaryDirectory("vigie-retention-"), "vigie.yaml");
    writeFileSync(file, "healthchecks:\n  history:\n    retention: 0\n");
    const config = await loadConfig(file, {}, [healthchecksModule]);
    expect(config.modules.healthchecks).toMatchObject({ history: { retention: { text: "0", milliseconds: 0 } } });
  });

  it("has defaults for every key", () => {
    expect(parse(undefined).modules.healthchecks).toEqual({
      enabled: true,
      "min-interval": { text: "1s", milliseconds: 1_000 },
      "max-concurrency": 512,
      "allow-api-commands": "auto",
      streams: [],
      history: { retention: { text: "168h", milliseconds: 604_800_000 } },
      "status-page": { enabled: false, title: "Status", checks: [] },
      "status-pages": [],
      "default-alerts": [],
      maintenance: [],
      "http-checks": [],
      "tcp-checks": [],
      "dns-checks": [],
      "tls-checks": [],
      "command-checks": [],
      "heartbeat-checks": [],
    });
  });

  it("checks the streams, history and status-page settings", () => {
    expect(parse({ streams: ["checks", "default"], history: { retention: "0" } }).modules.healthchecks).toMatchObject({
      streams: ["checks", "default"],
      history: { retention: { milliseconds: 0 } },
    });
    expect(refusal({ streams: ["no spaces"] })).toBe(
      'invalid configuration: healthchecks.streams[0]: must be a stream name: 1 to 128 characters of A-Z a-z 0-9 . _ - (got "no spaces")',
    );
    expect(refusal({ history: { retention: "a week" } })).toMatch(
      /^invalid configuration: healthchecks.history.retention: must be a duration/,
    );
    expect(refusal({ history: { keep: "1h" } })).toMatch(
      /^invalid configuration: healthchecks.history.keep: unknown key/,
    );
    expect(
      parse({ "status-page": { enabled: true, title: "Our services", checks: ["api", "team=web"] } }).modules
        .healthchecks,
    ).toMatchObject({ "status-page": { enabled: true, title: "Our services", checks: ["api", "team=web"] } });
    expect(refusal({ "status-page": { checks: ["=web"] } })).toBe(
      'invalid configuration: healthchecks.status-page.checks[0]: must be a check name or a label selector such as team=web (got "=web")',
    );
  });

  it("checks the settings", () => {
    expect(refusal({ "min-interval": "fast" })).toBe(
      'invalid configuration: healthchecks.min-interval: must be a duration such as 500ms, 10s or 1h30m (got "fast")',
    );
    expect(refusal({ "max-concurrency": 0 })).toBe(
      "invalid configuration: healthchecks.max-concurrency: must be an integer between 1 and 1000000 (got 0)",
    );
    expect(refusal({ "allow-api-commands": "yes" })).toBe(
      'invalid configuration: healthchecks.allow-api-commands: must be auto, true or false (got "yes")',
    );
    for (const value of ["auto", true, false]) {
      expect(parse({ "allow-api-commands": value }).modules.healthchecks).toMatchObject({
        "allow-api-commands": value,
      });
    }
    expect(parse({ "tls-directory": "/etc/vigie/tls" }).modules.healthchecks).toMatchObject({
      "tls-directory": "/etc/vigie/tls",
    });
    expect(refusal({ "tls-directory": 3 })).toBe(
      "invalid configuration: healthchecks.tls-directory: must be a directory path (got 3)",
    );
    expect(refusal({ "tls-directory": "" })).toBe(
      'invalid configuration: healthchecks.tls-directory: must be a directory path (got "")',
    );
    expect(refusal({ "min-intervall": "1s" })).toMatch(
      /^invalid configuration: healthchecks\.min-intervall: unknown key/,
    );
  });

  it("never quotes an http check's path, query or body, which may hold secrets", () => {
    const http = (fields: Record<string, unknown>) => ({
      "http-checks": [
        {
          name: "site",
          target: "example.org",
          port: 443,
          "valid-status": [200],
          timeout: "5s",
          interval: "30s",
          ...fields,
        },
      ],
    });
    expect(refusal(http({ path: "access_token=s3cret" }))).toBe(
      "invalid configuration: healthchecks.http-checks[0].path: must start with / and contain only printable ASCII",
    );
    expect(refusal(http({ query: { api_key: 12345678 } }))).toBe(
      "invalid configuration: healthchecks.http-checks[0].query.api_key: must be a string",
    );
    expect(refusal(http({ body: { password: "s3cret" } }))).toBe(
      "invalid configuration: healthchecks.http-checks[0].body: must be a string",
    );
  });

  it("validates the checks of each list, naming the path", () => {
    expect(
      refusal({
        "http-checks": [
          { name: "site", target: "example.org", port: 0, "valid-status": [200], timeout: "5s", interval: "30s" },
        ],
      }),
    ).toBe("invalid configuration: healthchecks.http-checks[0].port: must be an integer between 1 and 65535 (got 0)");
    expect(refusal({ "tcp-checks": [tcp("a"), tcp("b", { target: "not valid" })] })).toBe(
      'invalid configuration: healthchecks.tcp-checks[1].target: must be a host name, an IPv4 address or an IPv6 address (got "not valid")',
    );
    expect(refusal({ "dns-checks": {} })).toBe(
      "invalid configuration: healthchecks.dns-checks: must be an array (got {})",
    );
    expect(refusal({ "tcp-checks": [tcp("a", { shouldfail: true })] })).toMatch(
      /^invalid configuration: healthchecks\.tcp-checks\[0\]\.shouldfail: unknown key/,
    );
    expect(refusal({ "tcp-checks": [tcp("a", { "one-off": true })] })).toBe(
      "invalid configuration: healthchecks.tcp-checks[0].one-off: must be false in the configuration file (got true)",
    );
  });

  it("applies min-interval of the same section to the checks", () => {
    expect(refusal({ "min-interval": "1m", "tcp-checks": [tcp("a")] })).toBe(
      'invalid configuration: healthchecks.tcp-checks[0].interval: must be at least 1m (got "10s")',
    );
    expect(
      configuredChecks(
        section({ "min-interval": "100ms", "tcp-checks": [tcp("a", { interval: "200ms", timeout: "100ms" })] }),
      ),
    ).toHaveLength(1);
    // The next parse starts afresh.
    expect(refusal({ "tcp-checks": [tcp("a", { interval: "200ms", timeout: "100ms" })] })).toBe(
      'invalid configuration: healthchecks.tcp-checks[0].interval: must be at least 1s (got "200ms")',
    );
  });

  it("lets checks name TLS files at any path, with or without tls-directory", () => {
    const tls = { name: "t", target: "localhost", port: 443, timeout: "1s", interval: "10s" };
    for (const extra of [{}, { "tls-directory": "/srv/vigie/tls" }]) {
      const [check] = configuredChecks(
        section({ ...extra, "tls-checks": [{ ...tls, key: "/etc/k.pem", cert: "../c.pem", cacert: "ca.pem" }] }),
      );
      expect(check?.definition).toMatchObject({ key: "/etc/k.pem", cert: "../c.pem", cacert: "ca.pem" });
    }
  });

  it("never quotes a header value or a URL password in its errors (docs/security.md)", () => {
    const site = { name: "site", target: "example.org", port: 443, "valid-status": [200], timeout: "5s" };
    const message = refusal({
      "http-checks": [{ ...site, interval: "30s", headers: { Authorization: "Bearer t0ken\n" } }],
    });
    expect(message).toBe(
      "invalid configuration: healthchecks.http-checks[0].headers.Authorization: must not contain line breaks or NUL",
    );
    expect(refusal({ "http-checks": [{ ...site, interval: "30s", target: "https://ann:pw@example.org" }] })).toBe(
      'invalid configuration: healthchecks.http-checks[0].target: must be a host name, an IPv4 address or an IPv6 address (got "https://ann:<redacted>@example.org")',
    );
  });

  it("refuses a name used twice, across kinds too", () => {
    expect(
      refusal({
        "tcp-checks": [tcp("same")],
        "command-checks": [{ name: "same", command: "true", timeout: "1s", interval: "1m" }],
      }),
    ).toBe(
      'invalid configuration: healthchecks.command-checks[0].name: must be unique (healthchecks.tcp-checks[0] has the same name) (got "same")',
    );
    // Names seen in one parse do not leak into the next.
    expect(configuredChecks(section({ "tcp-checks": [tcp("same")] }))).toHaveLength(1);
    expect(configuredChecks(section({ "tcp-checks": [tcp("same")] }))).toHaveLength(1);
  });

  it("lists the checks with their paths, kinds in order", () => {
    const checks = configuredChecks(
      section({
        "command-checks": [{ name: "c", command: "true", timeout: "1s", interval: "1m" }],
        "tcp-checks": [tcp("t1"), tcp("t2")],
      }),
    );
    expect(checks.map(({ definition, path }) => [definition.name, definition.kind, path])).toEqual([
      ["t1", "tcp", "healthchecks.tcp-checks[0]"],
      ["t2", "tcp", "healthchecks.tcp-checks[1]"],
      ["c", "command", "healthchecks.command-checks[0]"],
    ]);
  });

  it("makes the list of a section once, and a new one for a section parsed anew (a reload)", () => {
    const first = section({ "tcp-checks": [tcp("a")] });
    const list = configuredChecks(first);
    // The configuration's check, the catalog and the alerts read it at each start.
    expect(configuredChecks(first)).toBe(list);
    const reloaded = configuredChecks(section({ "tcp-checks": [tcp("a"), tcp("b")] }));
    expect(reloaded).not.toBe(list);
    expect(reloaded.map(({ definition }) => definition.name)).toEqual(["a", "b"]);
    expect(list.map(({ definition }) => definition.name)).toEqual(["a"]);
  });
});

describe("the outputs the file's alerts name", () => {
  const check = { name: "db", target: "127.0.0.1", port: 5432, interval: "10s", timeout: "1s" };
  const parse = (raw: Record<string, unknown>) => parseConfig(raw, {}, [healthchecksModule, streamsModule]);

  it("are declared, under outputs or streams.outputs, or the configuration is refused naming the key", () => {
    const chat = { type: "http", url: "http://127.0.0.1:9/hook" };
    expect(() =>
      parse({
        outputs: { chat },
        streams: { outputs: { pager: chat } },
        healthchecks: {
          "default-alerts": [{ output: "chat" }],
          "tcp-checks": [{ ...check, alerts: [{ output: "pager" }] }],
        },
      }),
    ).not.toThrow();
    expect(() =>
      parse({
        outputs: { chat },
        healthchecks: { "tcp-checks": [{ ...check, alerts: [{ output: "chat" }, { output: "nope" }] }] },
      }),
    ).toThrow(
      new ConfigError(
        "invalid configuration: healthchecks.tcp-checks[0].alerts[1].output: must name a declared output (nope is not one)",
      ),
    );
    expect(() => parse({ healthchecks: { "default-alerts": [{ output: "chat" }] } })).toThrow(
      "invalid configuration: healthchecks.default-alerts[0].output: must name a declared output (chat is not one)",
    );
  });
});
