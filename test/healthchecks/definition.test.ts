import { describe, expect, it } from "vitest";
import {
  type DefinitionRules,
  type Kind,
  toJson,
  validateDefinition,
  viewOf,
} from "../../src/healthchecks/definition.js";
import { REDACTED } from "../../src/healthchecks/redaction.js";
import { ValidationError } from "../../src/platform/validation.js";
import { validationError } from "../support/validation.js";

// With a tls-directory: through the API, a TLS file may only be a name under it.
const RULES: DefinitionRules = { minInterval: { text: "1s", milliseconds: 1_000 }, tlsDirectory: "/srv/vigie/tls" };
const API = { unknownKeys: "ignore" } as const;

const MINIMAL: Record<Kind, Record<string, unknown>> = {
  http: { name: "web", interval: "10s", timeout: "2s", target: "example.org", port: 443, "valid-status": [200] },
  tcp: { name: "port", interval: "10s", timeout: "2s", target: "10.0.0.1", port: 22 },
  dns: { name: "resolve", interval: "10s", domain: "example.org" },
  tls: { name: "cert", interval: "1m", timeout: "2s", target: "example.org", port: 443 },
  command: { name: "run", interval: "10s", timeout: "2s", command: "true" },
  heartbeat: { name: "backup", period: "1h" },
};

/** The error message of validating `fields` over the minimal definition of `kind`. */
function refusal(kind: Kind, fields: Record<string, unknown>, rules: DefinitionRules = RULES): string {
  return validationError(() => validateDefinition(kind, { ...MINIMAL[kind], ...fields }, rules, API)).message;
}

/** The error message of validating the minimal definition of `kind` without `field`. */
function without(kind: Kind, field: string): string {
  const definition = { ...MINIMAL[kind] };
  delete definition[field];
  return validationError(() => validateDefinition(kind, definition, RULES, API)).message;
}

const view = (kind: Kind, fields: Record<string, unknown> = {}) =>
  viewOf(validateDefinition(kind, { ...MINIMAL[kind], ...fields }, RULES, API), "api");

describe("defaults and the returned view", () => {
  it("fills in every default of http and echoes durations as given", () => {
    expect(view("http", { interval: "1m30s", timeout: "1500ms" })).toEqual({
      name: "web",
      kind: "http",
      source: "api",
      description: "",
      interval: "1m30s",
      timeout: "1500ms",
      "one-off": false,
      target: "example.org",
      port: 443,
      protocol: "http",
      path: "/",
      method: "GET",
      "valid-status": [200],
      redirect: false,
      insecure: false,
    });
  });

  it("fills in the defaults of tcp, dns, tls and command", () => {
    expect(view("tcp")).toEqual({
      ...MINIMAL.tcp,
      kind: "tcp",
      source: "api",
      description: "",
      "one-off": false,
      "should-fail": false,
    });
    expect(view("dns")).toEqual({
      ...MINIMAL.dns,
      kind: "dns",
      source: "api",
      description: "",
      timeout: "5s",
      "one-off": false,
    });
    expect(view("tls")).toEqual({
      ...MINIMAL.tls,
      kind: "tls",
      source: "api",
      description: "",
      "one-off": false,
      insecure: false,
      "expiration-delay": "0",
    });
    expect(view("command")).toEqual({
      ...MINIMAL.command,
      kind: "command",
      source: "api",
      description: "",
      "one-off": false,
      arguments: [],
    });
  });

  it("keeps every optional field as given and ignores unknown fields", () => {
    const full = {
      description: "the site",
      labels: { env: "prod", team_1: "ops" },
      protocol: "https",
      path: "/health?full=1",
      method: "POST",
      "valid-status": [200, 204],
      redirect: true,
      headers: { "X-Token": "abc" },
      query: { a: "b" },
      body: "{}",
      "body-regexp": ["ok", "^\\{"],
      host: "www.example.org",
      "server-name": "example.org",
      insecure: true,
      key: "client.key",
      cert: "clients/client.pem",
      cacert: "ca.pem",
      "source-ip": "::1",
    };
    expect(view("http", { ...full, surprise: 1, kind: "tcp", source: "configuration" })).toEqual({
      ...MINIMAL.http,
      ...full,
      // The view hides the values of secret headers (docs/security.md).
      headers: { "X-Token": REDACTED },
      kind: "http",
      source: "api",
      timeout: "2s",
      "one-off": false,
    });
    expect(view("dns", { "expected-ips": ["10.0.0.1", "::1"], timeout: "1s" })).toMatchObject({
      "expected-ips": ["10.0.0.1", "::1"],
      timeout: "1s",
    });
    expect(view("tcp", { "should-fail": true, "source-ip": "127.0.0.1" })).toMatchObject({ "should-fail": true });
    expect(view("tls", { "expiration-delay": "168h" })).toMatchObject({ "expiration-delay": "168h" });
    expect(view("command", { arguments: ["-c", "exit 0"] })).toMatchObject({ arguments: ["-c", "exit 0"] });
  });

  it("round-trips through toJson (what the database stores)", () => {
    const definition = validateDefinition("http", { ...MINIMAL.http, interval: "1.5m" }, RULES, API);
    expect(validateDefinition("http", toJson(definition), RULES, API)).toEqual(definition);
  });

  it("does not require an interval for a one-off check", () => {
    expect(view("tcp", { "one-off": true, interval: undefined })).toEqual({
      ...MINIMAL.tcp,
      interval: undefined,
      kind: "tcp",
      source: "api",
      description: "",
      "one-off": true,
      "should-fail": false,
    });
    expect(view("tcp", { "one-off": true, interval: undefined })).not.toHaveProperty("interval");
  });
});

describe("common rules", () => {
  it("requires a name of 1 to 255 characters without / or control characters", () => {
    const rule = "must have 1 to 255 characters, without / or control characters";
    expect(without("http", "name")).toBe("name: is required");
    expect(refusal("http", { name: "" })).toBe(`name: ${rule}`);
    expect(refusal("http", { name: "a".repeat(256) })).toBe(`name: ${rule}`);
    expect(refusal("http", { name: "a/b" })).toBe(`name: ${rule}`);
    expect(refusal("http", { name: "a\nb" })).toBe(`name: ${rule}`);
    expect(refusal("http", { name: "a\u0085b" })).toBe(`name: ${rule}`);
    expect(refusal("http", { name: 3 })).toBe(`name: ${rule}`);
    expect(view("http", { name: "é".repeat(255) }).name).toHaveLength(255);
    expect(view("http", { name: "web site #1 (prod)" }).name).toBe("web site #1 (prod)");
  });

  it("checks description, one-off and labels", () => {
    expect(refusal("http", { description: 1 })).toBe("description: must be a string");
    expect(refusal("http", { "one-off": "yes" })).toBe("one-off: must be true or false");
    expect(refusal("http", { labels: [] })).toBe("labels: must be an object");
    expect(refusal("http", { labels: { env: 1 } })).toBe("labels.env: must be a string");
    const rule =
      "must be a label name of letters, digits and _ (not starting with a digit or __, not name, status or le)";
    expect(refusal("http", { labels: { "my-label": "x" } })).toBe(`labels.my-label: ${rule}`);
    expect(refusal("http", { labels: { "1st": "x" } })).toBe(`labels.1st: ${rule}`);
    expect(refusal("http", { labels: { __meta: "x" } })).toBe(`labels.__meta: ${rule}`);
    expect(refusal("http", { labels: { status: "x" } })).toBe(`labels.status: ${rule}`);
  });

  it("requires a positive timeout except for dns", () => {
    for (const kind of ["http", "tcp", "tls", "command"] as const)
      expect(without(kind, "timeout")).toBe("timeout: is required");
    expect(refusal("http", { timeout: "0" })).toBe("timeout: must be greater than 0");
    expect(refusal("http", { timeout: "5" })).toBe("timeout: must be a duration such as 500ms, 10s or 1h30m");
    expect(refusal("http", { timeout: 5 })).toBe("timeout: must be a duration such as 500ms, 10s or 1h30m");
    expect(refusal("dns", { timeout: "0s" })).toBe("timeout: must be greater than 0");
  });

  it("requires an interval of at least min-interval and at least the timeout", () => {
    expect(without("http", "interval")).toBe("interval: is required");
    expect(refusal("http", { interval: "500ms" })).toBe("interval: must be at least 1s");
    expect(refusal("http", { interval: "5s", timeout: "10s" })).toBe("interval: must be at least the timeout (10s)");
    expect(refusal("dns", { interval: "2s", timeout: "3s" })).toBe("interval: must be at least the timeout (3s)");
    expect(refusal("dns", { interval: "4s" })).toBe("interval: must be at least the timeout (5s)");
    expect(refusal("http", { interval: "10" })).toBe("interval: must be a duration such as 500ms, 10s or 1h30m");
    const strict = { minInterval: { text: "30s", milliseconds: 30_000 } };
    expect(refusal("http", { interval: "10s" }, strict)).toBe("interval: must be at least 30s");
    expect(view("http", { interval: "2s", timeout: "2s" }).interval).toBe("2s");
  });

  it("refuses a definition that is not an object", () => {
    expect(() => validateDefinition("http", [], RULES, API)).toThrow(new ValidationError("", "must be an object", []));
  });
});

describe("rules of each kind", () => {
  it("checks target and port (http, tcp, tls)", () => {
    for (const kind of ["http", "tcp", "tls"] as const) {
      expect(without(kind, "target")).toBe("target: is required");
      expect(without(kind, "port")).toBe("port: is required");
      expect(refusal(kind, { target: "not a host" })).toBe(
        "target: must be a host name, an IPv4 address or an IPv6 address",
      );
      expect(refusal(kind, { target: "[::1]" })).toBe(
        "target: must be a host name, an IPv4 address or an IPv6 address",
      );
      expect(refusal(kind, { port: 0 })).toBe("port: must be an integer between 1 and 65535");
      expect(refusal(kind, { port: 65536 })).toBe("port: must be an integer between 1 and 65535");
      expect(refusal(kind, { port: "80" })).toBe("port: must be an integer between 1 and 65535");
      expect(refusal(kind, { "source-ip": "localhost" })).toBe("source-ip: must be an IPv4 or IPv6 address");
      for (const target of ["localhost", "a-b.example.org.", "10.0.0.1", "2001:db8::1"]) {
        expect(view(kind, { target }).target).toBe(target);
      }
    }
  });

  it("checks the http fields", () => {
    expect(without("http", "valid-status")).toBe("valid-status: is required");
    expect(refusal("http", { "valid-status": [] })).toBe("valid-status: must not be empty");
    expect(refusal("http", { "valid-status": [200, 99] })).toBe(
      "valid-status[1]: must be an integer between 100 and 599",
    );
    expect(refusal("http", { "valid-status": [600] })).toBe("valid-status[0]: must be an integer between 100 and 599");
    expect(refusal("http", { protocol: "ftp" })).toBe("protocol: must be one of http, https");
    expect(refusal("http", { method: "get" })).toBe(
      "method: must be one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS",
    );
    expect(refusal("http", { path: "health" })).toBe("path: must start with / and contain only printable ASCII");
    expect(refusal("http", { path: "/a b" })).toBe("path: must start with / and contain only printable ASCII");
    expect(refusal("http", { redirect: "no" })).toBe("redirect: must be true or false");
    expect(refusal("http", { headers: { "Bad Name": "x" } })).toBe("headers.Bad Name: must be a valid header name");
    expect(refusal("http", { headers: { "X-A": "a\r\nb" } })).toBe("headers.X-A: must not contain line breaks or NUL");
    expect(refusal("http", { query: { a: 1 } })).toBe("query.a: must be a string");
    expect(refusal("http", { body: {} })).toBe("body: must be a string");
    expect(refusal("http", { "body-regexp": "ok" })).toBe("body-regexp: must be an array");
    expect(refusal("http", { "body-regexp": ["ok", "("] })).toBe(
      "body-regexp[1]: must be a regular expression in RE2 syntax, which runs in linear time (no backreferences or lookaround): missing closing ): `(`",
    );
    expect(refusal("http", { host: "" })).toBe("host: must not be empty");
    expect(refusal("http", { "server-name": "" })).toBe("server-name: must not be empty");
    expect(refusal("http", { insecure: 1 })).toBe("insecure: must be true or false");
  });

  it("requires key and cert together (http, tls)", () => {
    for (const kind of ["http", "tls"] as const) {
      // File names relative to the tls-directory through the API (see "TLS files" below).
      expect(refusal(kind, { key: "k.pem" })).toBe("cert: is required with key");
      expect(refusal(kind, { cert: "c.pem" })).toBe("key: is required with cert");
      expect(refusal(kind, { cacert: "" })).toBe("cacert: must be a non-empty file path");
      expect(view(kind, { key: "k.pem", cert: "c.pem", cacert: "ca.pem" })).toMatchObject({
        key: "k.pem",
        cert: "c.pem",
        cacert: "ca.pem",
      });
    }
  });

  it("checks the tcp, dns, tls and command fields", () => {
    expect(refusal("tcp", { "should-fail": "true" })).toBe("should-fail: must be true or false");
    expect(without("dns", "domain")).toBe("domain: is required");
    expect(refusal("dns", { domain: "bad domain" })).toBe("domain: must be a domain name");
    expect(refusal("dns", { "expected-ips": ["10.0.0.1", "10.0.0"] })).toBe(
      "expected-ips[1]: must be an IPv4 or IPv6 address",
    );
    expect(refusal("tls", { "expiration-delay": "7d" })).toBe(
      "expiration-delay: must be a duration such as 500ms, 10s or 1h30m",
    );
    expect(without("command", "command")).toBe("command: is required");
    expect(refusal("command", { command: "" })).toBe("command: must not be empty");
    expect(refusal("command", { arguments: "-c" })).toBe("arguments: must be an array");
    expect(refusal("command", { arguments: ["-c", 1] })).toBe("arguments[1]: must be a string");
  });
});

describe("configuration-file definitions", () => {
  it("refuse unknown keys and name their path", () => {
    expect(() =>
      validateDefinition(
        "tcp",
        { ...MINIMAL.tcp, shouldfail: true },
        RULES,
        { unknownKeys: "reject" },
        "healthchecks.tcp-checks[0]",
      ),
    ).toThrow(/^healthchecks\.tcp-checks\[0\]\.shouldfail: unknown key \(known keys: name, description/);
    expect(() =>
      validateDefinition(
        "tcp",
        { ...MINIMAL.tcp, port: 0 },
        RULES,
        { unknownKeys: "reject" },
        "healthchecks.tcp-checks[1]",
      ),
    ).toThrow(new ValidationError("healthchecks.tcp-checks[1].port", "must be an integer between 1 and 65535", 0));
  });
});

describe("TLS files (no file paths from the network)", () => {
  const NO_DIRECTORY = { minInterval: RULES.minInterval };
  const nameRule =
    "must be a file name relative to healthchecks.tls-directory, not an absolute path and without .. segments";

  it("through the API, are names relative to the tls-directory: no absolute path, no .. segment", () => {
    for (const kind of ["http", "tls"] as const) {
      for (const field of ["key", "cert", "cacert"] as const) {
        const other = field === "key" ? { cert: "c.pem" } : field === "cert" ? { key: "k.pem" } : {};
        for (const bad of [
          "/etc/passwd",
          "/dev/zero",
          "../x",
          "a/../../x",
          "sub/..",
          "..\\x",
          "C:\\certs\\a.pem",
          "\\\\server\\share\\a.pem",
          "a\u0000b",
          "a\nb",
        ]) {
          expect(refusal(kind, { ...other, [field]: bad })).toBe(`${field}: ${nameRule}`);
        }
        for (const good of ["a.pem", "clients/web.pem", "./a.pem", "a..b.pem", "..a.pem"]) {
          expect(view(kind, { ...other, [field]: good })[field]).toBe(good);
        }
      }
    }
  });

  it("through the API, are refused without a configured tls-directory", () => {
    const rule = "cannot be set through the API: healthchecks.tls-directory is not configured";
    expect(refusal("tls", { cacert: "ca.pem" }, NO_DIRECTORY)).toBe(`cacert: ${rule}`);
    expect(refusal("http", { key: "k.pem", cert: "c.pem" }, NO_DIRECTORY)).toBe(`key: ${rule}`);
    // The default of the option is the API's rule.
    expect(
      validationError(() =>
        validateDefinition("tls", { ...MINIMAL.tls, cacert: "/etc/ssl/ca.pem" }, RULES, { unknownKeys: "reject" }),
      ).message,
    ).toBe(`cacert: ${nameRule}`);
  });

  it("in the configuration file, may be any path, with or without a tls-directory", () => {
    const fields = { key: "/etc/vigie/client.key", cert: "../client.pem", cacert: "/etc/ssl/ca.pem" };
    for (const rules of [RULES, NO_DIRECTORY]) {
      const definition = validateDefinition("http", { ...MINIMAL.http, ...fields }, rules, {
        unknownKeys: "reject",
        tlsFiles: "paths",
      });
      expect(definition).toMatchObject(fields);
    }
  });
});

describe("secrets in views and errors (docs/security.md)", () => {
  it("redacts secret header values and URL passwords in the view, not in toJson (what is stored)", () => {
    const fields = {
      headers: { Authorization: "Bearer t0ken", "X-Env": "prod", Referer: "https://ann:pw@example.org/" },
      description: "see https://ann:pw@example.org/x",
      body: '{"url":"postgres://app:pw@db:5432/x"}',
      query: { next: "https://bob:s3cret@example.org/" },
      path: "/proxy?to=https://u:p@internal/",
      labels: { source: "https://ann:pw@git.example.org/repo" },
    };
    expect(view("http", fields)).toMatchObject({
      headers: { Authorization: REDACTED, "X-Env": "prod", Referer: `https://ann:${REDACTED}@example.org/` },
      description: `see https://ann:${REDACTED}@example.org/x`,
      body: `{"url":"postgres://app:${REDACTED}@db:5432/x"}`,
      query: { next: `https://bob:${REDACTED}@example.org/` },
      path: `/proxy?to=https://u:${REDACTED}@internal/`,
      labels: { source: `https://ann:${REDACTED}@git.example.org/repo` },
    });
    expect(view("command", { arguments: ["--url", "https://ann:pw@example.org"] }).arguments).toEqual([
      "--url",
      `https://ann:${REDACTED}@example.org`,
    ]);
    const definition = validateDefinition("http", { ...MINIMAL.http, ...fields }, RULES, API);
    expect(toJson(definition)).toMatchObject(fields);
  });

  it("never quotes a header value or a URL password in a validation error", () => {
    const headerError = validationError(() =>
      validateDefinition("http", { ...MINIMAL.http, headers: { Authorization: "Bearer t0ken\n" } }, RULES, {
        unknownKeys: "reject",
      }),
    );
    expect(headerError.message).toBe("headers.Authorization: must not contain line breaks or NUL");
    expect(headerError.hasValue).toBe(false);
    const notAnObject = validationError(() =>
      validateDefinition("http", { ...MINIMAL.http, headers: "Authorization: Bearer t0ken" }, RULES, API),
    );
    expect(notAnObject.hasValue).toBe(false);
    const target = validationError(() =>
      validateDefinition("http", { ...MINIMAL.http, target: "https://ann:pw@example.org" }, RULES, API),
    );
    expect(target.value).toBe(`https://ann:${REDACTED}@example.org`);
    const pattern = validationError(() =>
      validateDefinition("http", { ...MINIMAL.http, "body-regexp": ["(https://ann:pw@example.org"] }, RULES, API),
    );
    expect(JSON.stringify([pattern.message, pattern.value])).not.toContain("pw@");
    const whole = validationError(() =>
      validateDefinition("http", [{ headers: { "X-Api-Key": "k3y" }, body: "https://a:pw@b" }], RULES, API),
    );
    expect(JSON.stringify(whole.value)).not.toMatch(/k3y|pw@/);
  });
});
