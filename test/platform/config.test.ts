import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig, parseConfig } from "../../src/platform/config.js";
import { defineModule } from "../../src/platform/module.js";
import { boolean, secret, string, withDefault } from "../../src/platform/validation.js";
import { temporaryDirectory } from "../support/temporary.js";

const sample = defineModule({
  name: "sample",
  configShape: {
    greeting: withDefault(string({ min: 1 }), "hello"),
    loud: withDefault(boolean(), false),
    nested: withDefault(secret(string({ min: 4 })), "abcd"),
  },
  environment: { VIGIE_SAMPLE_GREETING: "greeting" },
  migrations: {},
  plugin: async () => {},
});

function message(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error("expected a ConfigError");
}

describe("parseConfig", () => {
  it("gives a default for every key", () => {
    const config = parseConfig(undefined, {}, [sample]);
    expect(config.http).toEqual({
      host: "127.0.0.1",
      port: 8080,
      "public-url": "http://127.0.0.1:8080",
      "allowed-hosts": [],
      "allowed-origins": [],
      "trust-proxy": false,
      "body-limit": 1_048_576,
    });
    expect(config["log-level"]).toBe("info");
    expect(config.database).toEqual({ url: "sqlite:./data/vigie.db" });
    expect(config.security).toEqual({ "require-token": false });
    expect(config.modules.sample).toEqual({ enabled: true, greeting: "hello", loud: false, nested: "abcd" });
  });

  it("reads every platform key", () => {
    const config = parseConfig(
      {
        http: {
          host: "0.0.0.0",
          port: 9000,
          "public-url": "https://Vigie.Example.org:443/ops/",
          "allowed-hosts": ["vigie.internal.", "*.Example.net", "10.0.0.5"],
          "allowed-origins": ["https://Dashboard.example.org/", "http://127.0.0.1:3000", "https://*.example.com"],
          "trust-proxy": true,
          "body-limit": "64KiB",
        },
        "log-level": "debug",
        database: { url: "postgres://u:p@db:5432/vigie" },
        security: { "require-token": true },
        sample: { enabled: false, greeting: "hi" },
      },
      {},
      [sample],
    );
    expect(config.http).toEqual({
      host: "0.0.0.0",
      port: 9000,
      "public-url": "https://vigie.example.org/ops",
      "allowed-hosts": ["vigie.internal", "*.example.net", "10.0.0.5"],
      "allowed-origins": ["https://dashboard.example.org", "http://127.0.0.1:3000", "https://*.example.com"],
      "trust-proxy": true,
      "body-limit": 65_536,
    });
    expect(config["log-level"]).toBe("debug");
    expect(config.database.url).toBe("postgres://u:p@db:5432/vigie");
    expect(config.security["require-token"]).toBe(true);
    expect(config.modules.sample).toMatchObject({ enabled: false, greeting: "hi" });
  });

  it("names the key, the rule and the value of an invalid entry", () => {
    expect(message(() => parseConfig({ http: { port: "abc" } }, {}, []))).toBe(
      'invalid configuration: http.port: must be an integer between 1 and 65535 (got "abc")',
    );
    expect(message(() => parseConfig({ "log-level": "loud" }, {}, []))).toBe(
      'invalid configuration: log-level: must be one of trace, debug, info, warn, error (got "loud")',
    );
    expect(message(() => parseConfig({ http: { "body-limit": "1MB" } }, {}, []))).toBe(
      'invalid configuration: http.body-limit: must be a size such as 65536, 64KiB or 1MiB (got "1MB")',
    );
    expect(message(() => parseConfig({ sample: { loud: "yes" } }, {}, [sample]))).toBe(
      'invalid configuration: sample.loud: must be true or false (got "yes")',
    );
    expect(message(() => parseConfig({ http: { "public-url": "ftp://example.org" } }, {}, []))).toBe(
      'invalid configuration: http.public-url: must be an http or https URL such as https://vigie.example.org, without user, query or fragment (got "ftp://example.org")',
    );
    expect(message(() => parseConfig({ http: { "allowed-hosts": ["a b"] } }, {}, []))).toBe(
      'invalid configuration: http.allowed-hosts[0]: must be a host name such as vigie.example.org, *.example.org, or an IP address (got "a b")',
    );
    expect(message(() => parseConfig({ http: { "allowed-origins": ["https://a.org/path"] } }, {}, []))).toBe(
      'invalid configuration: http.allowed-origins[0]: must be an origin scheme://host[:port] such as https://dashboard.example.org, or https://*.example.org for its subdomains (http or https, no path) (got "https://a.org/path")',
    );
    expect(message(() => parseConfig({ http: 5 }, {}, []))).toBe(
      "invalid configuration: http: must be an object (got 5)",
    );
    expect(message(() => parseConfig(["a"], {}, []))).toBe(
      "invalid configuration: the document must be a YAML mapping",
    );
  });

  it("refuses unknown keys at every level", () => {
    expect(message(() => parseConfig({ htp: {} }, {}, [sample]))).toBe(
      "invalid configuration: htp: unknown key (known keys: http, log-level, database, security, cluster, outputs, notifications, drain-timeout, sample)",
    );
    expect(message(() => parseConfig({ http: { prot: 1 } }, {}, []))).toMatch(
      /^invalid configuration: http\.prot: unknown key \(known keys: host, port, public-url, allowed-hosts, allowed-origins, trust-proxy, body-limit\)$/,
    );
    expect(message(() => parseConfig({ sample: { gretting: "x" } }, {}, [sample]))).toMatch(
      /^invalid configuration: sample\.gretting: unknown key/,
    );
  });

  it("never prints secrets or database URLs in errors", () => {
    const database = message(() => parseConfig({ database: { url: "mysql://root:hunter2@db" } }, {}, []));
    expect(database).toBe(
      "invalid configuration: database.url: must be sqlite:<file>, sqlite::memory: or postgres://user:password@host:port/database",
    );
    expect(message(() => parseConfig({ sample: { nested: "abc" } }, {}, [sample]))).not.toContain('abc"');
  });

  it("lets the environment override the database URL and module keys", () => {
    const config = parseConfig(
      { database: { url: "sqlite:./a.db" }, sample: { greeting: "file" } },
      { VIGIE_DATABASE_URL: "sqlite::memory:", VIGIE_SAMPLE_GREETING: "env" },
      [sample],
    );
    expect(config.database.url).toBe("sqlite::memory:");
    expect(config.modules.sample?.greeting).toBe("env");
    // An empty variable is treated as unset.
    expect(parseConfig({}, { VIGIE_DATABASE_URL: "" }, []).database.url).toBe("sqlite:./data/vigie.db");
    // An invalid value from the environment is reported under its key.
    expect(message(() => parseConfig({}, { VIGIE_DATABASE_URL: "nope" }, []))).toMatch(
      /^invalid configuration: database\.url: must be/,
    );
  });

  it("lets the environment set the address, public URL and token requirement, typed as in the file", () => {
    const config = parseConfig(
      { http: { host: "127.0.0.1", port: 9000 }, security: { "require-token": false } },
      {
        VIGIE_HTTP_HOST: "0.0.0.0",
        VIGIE_HTTP_PORT: "8081",
        VIGIE_PUBLIC_URL: "https://vigie.example.org",
        VIGIE_REQUIRE_TOKEN: "true",
      },
      [],
    );
    expect(config.http.host).toBe("0.0.0.0");
    expect(config.http.port).toBe(8081);
    expect(config.http["public-url"]).toBe("https://vigie.example.org");
    expect(config.security["require-token"]).toBe(true);
    expect(parseConfig({}, { VIGIE_REQUIRE_TOKEN: "false" }, []).security["require-token"]).toBe(false);
    // Anything else is refused with the key's own rule.
    expect(message(() => parseConfig({}, { VIGIE_REQUIRE_TOKEN: "yes" }, []))).toBe(
      'invalid configuration: security.require-token: must be true or false (got "yes")',
    );
    expect(message(() => parseConfig({}, { VIGIE_HTTP_PORT: "80a" }, []))).toMatch(
      /^invalid configuration: http\.port: must be an integer between 1 and 65535 \(got "80a"\)/,
    );
    expect(message(() => parseConfig({}, { VIGIE_HTTP_PORT: "0" }, []))).toMatch(/^invalid configuration: http\.port:/);
  });

  it("does not modify the raw tree it is given", () => {
    const raw = { database: { url: "sqlite:./a.db" } };
    parseConfig(raw, { VIGIE_DATABASE_URL: "sqlite::memory:" }, []);
    expect(raw.database.url).toBe("sqlite:./a.db");
  });
});

describe("loadConfig", () => {
  const directory = temporaryDirectory("vigie-config-");

  it("reads the file named by --config, else VIGIE_CONFIG, else uses defaults", async () => {
    const file = join(directory, "a.yaml");
    writeFileSync(file, "http:\n  port: 9999\n");
    expect((await loadConfig(file, {}, [])).http.port).toBe(9999);
    expect((await loadConfig(undefined, { VIGIE_CONFIG: file }, [])).http.port).toBe(9999);
    expect((await loadConfig(undefined, {}, [])).http.port).toBe(8080);
    expect((await loadConfig(file, {}, [])).file).toBe(file);
  });

  it("accepts an empty file", async () => {
    const file = join(directory, "empty.yaml");
    writeFileSync(file, "");
    expect((await loadConfig(file, {}, [])).http.port).toBe(8080);
  });

  it("reports a missing file and invalid YAML as configuration errors", async () => {
    await expect(loadConfig(join(directory, "missing.yaml"), {}, [])).rejects.toThrow(
      /^invalid configuration: cannot read .*missing\.yaml: ENOENT$/,
    );
    const file = join(directory, "bad.yaml");
    writeFileSync(file, "http: [\n");
    await expect(loadConfig(file, {}, [])).rejects.toBeInstanceOf(ConfigError);
    const duplicate = join(directory, "duplicate.yaml");
    writeFileSync(duplicate, "http:\n  port: 1\n  port: 2\n");
    await expect(loadConfig(duplicate, {}, [])).rejects.toThrow(
      /is not valid YAML: duplicated mapping key at line 3, column 3$/,
    );
  });

  it("reads YAML 1.2's core schema: no timestamps, yes is a string", async () => {
    const file = join(directory, "core.yaml");
    writeFileSync(file, "http:\n  host: 2026-01-01\n  port: 0x1F90\n");
    const config = await loadConfig(file, {}, []);
    expect(config.http.host).toBe("2026-01-01");
    expect(config.http.port).toBe(8080);
  });

  it("keeps aliases but refuses nested aliases that expand exponentially", async () => {
    const shared = join(directory, "alias.yaml");
    writeFileSync(shared, "http:\n  host: &h 127.0.0.2\n  allowed-hosts: [*h]\n");
    expect((await loadConfig(shared, {}, [])).http["allowed-hosts"]).toEqual(["127.0.0.2"]);
    const lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"];
    for (let level = 1; level < 8; level++) {
      lines.push(
        `a${level}: &a${level} [${Array(10)
          .fill(`*a${level - 1}`)
          .join(", ")}]`,
      );
    }
    const laughs = join(directory, "laughs.yaml");
    writeFileSync(laughs, lines.join("\n"));
    await expect(loadConfig(laughs, {}, [])).rejects.toThrow(/is not valid YAML: its aliases expand too much$/);
  });
});
