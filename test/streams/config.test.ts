import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError, parseConfig } from "../../src/platform/config.js";
import { sectionOf } from "../../src/platform/module.js";
import { streamsModule } from "../../src/streams/index.js";
import { startTestServer } from "../support/server.js";
import { temporaryDirectory } from "../support/temporary.js";

const parse = (streams: Record<string, unknown>, platform: Record<string, unknown> = {}) =>
  parseConfig({ ...platform, streams }, {}, [streamsModule]);

function refusal(streams: Record<string, unknown>, platform: Record<string, unknown> = {}): string {
  try {
    parse(streams, platform);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error("expected a ConfigError");
}

const section = (streams: Record<string, unknown>) => {
  const parsed = sectionOf(parse(streams), streamsModule);
  if (parsed === undefined) throw new Error("no streams section");
  return parsed;
};

describe("streams.outputs", () => {
  it("fills in the common defaults and the batch size of each type", () => {
    const directory = temporaryDirectory();
    const { outputs } = section({
      outputs: {
        hook: { type: "http", url: "https://example.org/hook" },
        archive: { type: "file", path: join(directory, "events.jsonl") },
        tsdb: { type: "prometheus-remote-write", url: "http://127.0.0.1:9090/api/v1/write" },
        alerts: { type: "alertmanager", url: "http://127.0.0.1:9093" },
      },
    });
    expect(outputs.hook).toMatchObject({
      type: "http",
      format: "json",
      headers: {},
      "queue-size": 10_000,
      "batch-size": 100,
      "flush-interval": { milliseconds: 1000 },
      timeout: { milliseconds: 10_000 },
      "max-retry-time": { milliseconds: 300_000 },
      durable: false,
    });
    expect(outputs.archive).toMatchObject({ type: "file", "batch-size": 1000, "date-suffix": false });
    expect(outputs.tsdb).toMatchObject({ type: "prometheus-remote-write", "batch-size": 1000 });
    expect(outputs.alerts).toMatchObject({ type: "alertmanager", "batch-size": 64, labels: ["host"] });
  });

  it("keeps the keys given", () => {
    const { outputs } = section({
      outputs: {
        chat: {
          type: "http",
          url: "https://chat.example.org/hooks/abc",
          format: "slack",
          headers: { "X-Team": "ops" },
          "queue-size": 5,
          "batch-size": 2,
          "flush-interval": "250ms",
          timeout: "2s",
          "max-retry-time": "1m",
          durable: true,
        },
      },
    });
    expect(outputs.chat).toMatchObject({
      format: "slack",
      headers: { "X-Team": "ops" },
      "queue-size": 5,
      "batch-size": 2,
      "flush-interval": { milliseconds: 250 },
      timeout: { milliseconds: 2000 },
      "max-retry-time": { milliseconds: 60_000 },
      durable: true,
    });
  });

  it("refuses a wrong type, URL, format or key, naming the key", () => {
    expect(refusal({ outputs: { hook: { type: "smtp", url: "https://example.org" } } })).toBe(
      'invalid configuration: streams.outputs.hook.type: must be one of http, file, prometheus-remote-write, alertmanager, loki, elasticsearch, influxdb, graphite, email, slack, discord, telegram, ntfy, matrix, pagerduty, webhook (got "smtp")',
    );
    expect(refusal({ outputs: { hook: { url: "https://example.org" } } })).toMatch(
      /^invalid configuration: streams.outputs.hook.type: must be one of/,
    );
    expect(refusal({ outputs: { hook: { type: "http", url: "ftp://example.org/x" } } })).toBe(
      "invalid configuration: streams.outputs.hook.url: must be an http or https URL",
    );
    expect(refusal({ outputs: { hook: { type: "http" } } })).toBe(
      "invalid configuration: streams.outputs.hook.url: is required",
    );
    expect(refusal({ outputs: { hook: { type: "http", url: "https://example.org", format: "xml" } } })).toBe(
      'invalid configuration: streams.outputs.hook.format: must be one of json, ndjson, slack, text (got "xml")',
    );
    expect(refusal({ outputs: { hook: { type: "http", url: "https://example.org", path: "/tmp/x" } } })).toMatch(
      /^invalid configuration: streams.outputs.hook.path: unknown key/,
    );
    expect(refusal({ outputs: { hook: { type: "http", url: "https://example.org", "batch-size": 0 } } })).toMatch(
      /^invalid configuration: streams.outputs.hook.batch-size: must be an integer between 1 and 100000/,
    );
    expect(refusal({ outputs: { hook: { type: "http", url: "https://example.org", timeout: "soon" } } })).toMatch(
      /^invalid configuration: streams.outputs.hook.timeout: must be a duration/,
    );
    expect(refusal({ outputs: { "bad name": { type: "http", url: "https://example.org" } } })).toMatch(
      /^invalid configuration: streams.outputs.bad name: the name must be 1 to 128 characters/,
    );
    expect(refusal({ outputs: { hook: { type: "http", url: "https://example.org", durable: "yes" } } })).toBe(
      'invalid configuration: streams.outputs.hook.durable: must be true or false (got "yes")',
    );
    expect(refusal({ outputs: { hook: { type: "alertmanager", url: "http://a", labels: "host" } } })).toMatch(
      /^invalid configuration: streams.outputs.hook.labels: must be an array/,
    );
  });

  it("never echoes an output, a URL or a header value, which may carry a secret", () => {
    expect(refusal({ outputs: { hook: "http://user:hunter2@example.org/hook" } })).toBe(
      "invalid configuration: streams.outputs.hook: must be a map with a type",
    );
    expect(
      refusal({ outputs: { hook: { type: "http", url: "https://example.org", headers: "Authorization: hunter2" } } }),
    ).toBe("invalid configuration: streams.outputs.hook.headers: must be a map of header names to string values");
    expect(refusal({ outputs: "hook: http://user:hunter2@example.org" })).toBe(
      "invalid configuration: streams.outputs: must be a map from name to definition",
    );
    const url = refusal({ outputs: { hook: { type: "http", url: "mailto:user:hunter2@example.org" } } });
    expect(url).not.toContain("hunter2");
    const header = refusal({
      outputs: { hook: { type: "http", url: "https://example.org", headers: { Authorization: ["Bearer hunter2"] } } },
    });
    expect(header).toBe(
      "invalid configuration: streams.outputs.hook.headers.Authorization: must be a string without line breaks",
    );
    const injected = refusal({
      outputs: { hook: { type: "http", url: "https://example.org", headers: { "X-Token": "hunter2\r\nX-Evil: 1" } } },
    });
    expect(injected).not.toContain("hunter2");
    expect(refusal({ outputs: { hook: { type: "http", url: "https://example.org", headers: { "a b": "x" } } } })).toBe(
      "invalid configuration: streams.outputs.hook.headers.a b: is not a valid header name",
    );
  });

  it("parses a file output whose directory does not exist, and refuses to start with it", async () => {
    const directory = temporaryDirectory();
    const missing = join(directory, "missing", "events.jsonl");
    // stream test and config check may run where the server's directories do not exist.
    expect(section({ outputs: { archive: { type: "file", path: missing } } }).outputs.archive).toMatchObject({
      path: missing,
    });
    await expect(
      startTestServer({
        modules: [streamsModule],
        config: { streams: { outputs: { archive: { type: "file", path: missing } } } },
      }),
    ).rejects.toThrow(
      new ConfigError(
        `invalid configuration: streams.outputs.archive.path: must be in an existing directory (${join(directory, "missing")} is not one) (got ${JSON.stringify(missing)})`,
      ),
    );
  });
});

describe("top-level outputs", () => {
  it("are refused under the same name in streams.outputs", () => {
    expect(() =>
      parseConfig(
        {
          outputs: { chat: { type: "http", url: "http://127.0.0.1:9/a" } },
          streams: { outputs: { chat: { type: "http", url: "http://127.0.0.1:9/b" } } },
        },
        {},
        [streamsModule],
      ),
    ).toThrow("invalid configuration: streams.outputs.chat: is also declared under outputs; declare it once");
  });

  it("are reachable from a stream's output action, beside streams.outputs, and checked at start-up", async () => {
    const directory = temporaryDirectory();
    const server = await startTestServer({
      modules: [streamsModule],
      config: {
        outputs: { archive: { type: "file", path: join(directory, "top.jsonl") } },
        streams: { outputs: { own: { type: "file", path: join(directory, "own.jsonl") } } },
      },
    });
    try {
      const stream =
        "{:actions {:action :sdo :children [{:action :output :params [:archive]} {:action :output :params [:own]}]}}";
      const created = await server.app.inject({
        method: "POST",
        url: "/api/v1/stream/both",
        payload: { config: Buffer.from(stream).toString("base64") },
      });
      expect(created.json()).toEqual({ message: "stream added" });
      const missing = await server.app.inject({
        method: "POST",
        url: "/api/v1/stream/other",
        payload: { config: Buffer.from("{:actions {:action :output :params [:nope]}}").toString("base64") },
      });
      expect(missing.json()).toEqual({
        error: "invalid stream config: actions: output nope is not declared (outputs or streams.outputs)",
      });
    } finally {
      await server.close();
    }
    const missingDirectory = join(directory, "missing", "x.jsonl");
    await expect(
      startTestServer({
        modules: [streamsModule],
        config: { outputs: { lost: { type: "file", path: missingDirectory } } },
      }),
    ).rejects.toThrow("invalid configuration: outputs.lost.path: must be in an existing directory");
  });
});

describe("streams.async-queues", () => {
  it("defaults the size to 10 000 and refuses other keys", () => {
    expect(section({ "async-queues": { slow: {}, big: { size: 5 } } })["async-queues"]).toEqual({
      slow: { size: 10_000 },
      big: { size: 5 },
    });
    expect(refusal({ "async-queues": { slow: { size: 0 } } })).toMatch(
      /^invalid configuration: streams.async-queues.slow.size: must be an integer between 1 and/,
    );
    expect(refusal({ "async-queues": { slow: { length: 3 } } })).toMatch(
      /^invalid configuration: streams.async-queues.slow.length: unknown key/,
    );
  });
});

describe("streams.riemann", () => {
  it("is off by default, on 127.0.0.1:5555 with 16 MiB frames and the bounds of its connections", () => {
    expect(section({}).riemann).toEqual({
      enabled: false,
      host: "127.0.0.1",
      port: 5555,
      "max-connections": 1000,
      "max-connections-per-address": 50,
      "max-frame-size": 16 * 1024 * 1024,
      "max-buffered-bytes": 256 * 1024 * 1024,
      "handshake-timeout": { text: "10s", milliseconds: 10_000 },
      "frame-timeout": { text: "30s", milliseconds: 30_000 },
    });
    // A query answers at most streams.max-query-results events unless the input sets its own.
    expect(section({}).riemann["max-query-results"]).toBeUndefined();
    expect(section({})["max-query-results"]).toBe(10_000);
    expect(section({ riemann: { "max-query-results": 50 } }).riemann["max-query-results"]).toBe(50);
    expect(section({})["drain-timeout"]).toMatchObject({ milliseconds: 5000 });
  });

  it("takes its bounds, timeouts between 1 ms and 1 h", () => {
    expect(
      section({
        riemann: {
          "max-connections-per-address": 5,
          "max-buffered-bytes": "64MiB",
          "handshake-timeout": "500ms",
          "frame-timeout": "1m",
        },
      }).riemann,
    ).toMatchObject({
      "max-connections-per-address": 5,
      "max-buffered-bytes": 64 * 1024 * 1024,
      "handshake-timeout": { milliseconds: 500 },
      "frame-timeout": { milliseconds: 60_000 },
    });
    expect(refusal({ riemann: { "max-connections-per-address": 0 } })).toMatch(
      /^invalid configuration: streams.riemann.max-connections-per-address: must be an integer between 1 and/,
    );
    expect(refusal({ riemann: { "handshake-timeout": "0s" } })).toMatch(
      /^invalid configuration: streams.riemann.handshake-timeout: must be at least 1ms/,
    );
    expect(refusal({ riemann: { "frame-timeout": "2h" } })).toMatch(
      /^invalid configuration: streams.riemann.frame-timeout: must be at most 1h/,
    );
    expect(refusal({ riemann: { "max-buffered-bytes": "lots" } })).toMatch(
      /^invalid configuration: streams.riemann.max-buffered-bytes: /,
    );
  });

  it("needs both halves of TLS, and TLS for client certificates", () => {
    expect(refusal({ riemann: { "tls-cert": "cert.pem" } })).toBe(
      "invalid configuration: streams.riemann.tls-key: is required when tls-cert is set (TLS needs both)",
    );
    expect(refusal({ riemann: { "tls-key": "key.pem" } })).toBe(
      "invalid configuration: streams.riemann.tls-cert: is required when tls-key is set (TLS needs both)",
    );
    expect(refusal({ riemann: { "tls-ca": "ca.pem" } })).toBe(
      "invalid configuration: streams.riemann.tls-cert: is required with tls-ca (client certificates need TLS)",
    );
  });

  it("refuses an enabled input without client certificates when tokens are required", () => {
    expect(refusal({ riemann: { enabled: true } }, { security: { "require-token": true } })).toMatch(
      /^invalid configuration: streams.riemann.tls-ca: is required when security.require-token is true/,
    );
    // Disabled, or with client certificates, it is fine.
    expect(() => parse({ riemann: { enabled: false } }, { security: { "require-token": true } })).not.toThrow();
    expect(() =>
      parse(
        { riemann: { enabled: true, "tls-cert": "c.pem", "tls-key": "k.pem", "tls-ca": "ca.pem" } },
        { security: { "require-token": true } },
      ),
    ).not.toThrow();
  });
});

describe("streams.riemann.udp-port and streams.graphite", () => {
  it("are off by default; Graphite on 127.0.0.1:2003 with its bounds", () => {
    expect(section({}).riemann["udp-port"]).toBeUndefined();
    expect(section({ riemann: { "udp-port": 5555 } }).riemann["udp-port"]).toBe(5555);
    expect(section({}).graphite).toEqual({
      enabled: false,
      host: "127.0.0.1",
      port: 2003,
      "max-connections": 1000,
      "max-line-length": 4096,
    });
    expect(
      section({
        graphite: { enabled: true, stream: "g", "host-pattern": "^servers\\.([^.]+)\\.", "max-line-length": "1KiB" },
      }).graphite,
    ).toMatchObject({ stream: "g", "host-pattern": "^servers\\.([^.]+)\\.", "max-line-length": 1024 });
  });

  it("refuse a host-pattern without a capture group or not linear, a bad stream name, unknown keys", () => {
    expect(refusal({ graphite: { "host-pattern": "^servers\\." } })).toMatch(
      /^invalid configuration: streams.graphite.host-pattern: needs a capture group: the host/,
    );
    expect(refusal({ graphite: { "host-pattern": "(a)\\1" } })).toMatch(
      /^invalid configuration: streams.graphite.host-pattern: must be a regular expression in RE2 syntax/,
    );
    expect(refusal({ graphite: { stream: "a b" } })).toMatch(/^invalid configuration: streams.graphite.stream: /);
    expect(refusal({ graphite: { hosts: "x" } })).toMatch(/^invalid configuration: streams.graphite.hosts: /);
    expect(refusal({ riemann: { "udp-port": 70000 } })).toMatch(/^invalid configuration: streams.riemann.udp-port: /);
  });

  it("are refused when tokens are required: neither protocol carries one", () => {
    const tokens = { security: { "require-token": true } };
    expect(refusal({ riemann: { "udp-port": 5555 } }, tokens)).toBe(
      "invalid configuration: streams.riemann.udp-port: cannot be set when security.require-token is true: a UDP datagram carries no token",
    );
    expect(refusal({ graphite: { enabled: true } }, tokens)).toBe(
      "invalid configuration: streams.graphite.enabled: cannot be true when security.require-token is true: Graphite's plaintext protocol carries no token",
    );
    expect(() => parse({ graphite: { enabled: false, port: 2004 } }, tokens)).not.toThrow();
  });
});

describe("streams.max-subscriptions-per-client", () => {
  it("is left to the hub's default when absent, and a positive integer when given", () => {
    expect(section({})["max-subscriptions-per-client"]).toBeUndefined();
    expect(section({ "max-subscriptions-per-client": 5 })["max-subscriptions-per-client"]).toBe(5);
    expect(refusal({ "max-subscriptions-per-client": 0 })).toContain("streams.max-subscriptions-per-client");
    expect(refusal({ "max-subscriptions-per-client": "many" })).toContain("streams.max-subscriptions-per-client");
  });
});

describe("the bounds of events, answers and subscription matching", () => {
  it("default to 1 000 fields and tags, 64 KiB strings, 1 MiB events, 10 000 events and 16 MiB per answer, 20 ms of matching", () => {
    const defaults = section({});
    expect({
      fields: defaults["max-event-fields"],
      tags: defaults["max-event-tags"],
      string: defaults["max-event-string"],
      size: defaults["max-event-size"],
      results: defaults["max-query-results"],
      bytes: defaults["max-query-bytes"],
      match: defaults["publish-match-budget"].milliseconds,
    }).toEqual({
      fields: 1000,
      tags: 1000,
      string: 65_536,
      size: 1_048_576,
      results: 10_000,
      bytes: 16_777_216,
      match: 20,
    });
  });

  it("take sizes with units, and refuse what is not a bound", () => {
    expect(section({ "max-event-string": "1MiB", "max-event-size": "4MiB" })["max-event-size"]).toBe(4 * 1024 * 1024);
    expect(refusal({ "max-event-fields": 0 })).toMatch(/^invalid configuration: streams\.max-event-fields: /);
    expect(refusal({ "max-query-bytes": "lots" })).toMatch(/^invalid configuration: streams\.max-query-bytes: /);
    expect(refusal({ "publish-match-budget": "0ms" })).toMatch(
      /^invalid configuration: streams\.publish-match-budget: /,
    );
  });
});
