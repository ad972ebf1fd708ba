/**
 * Every route of every module, with what the fuzzing sends it: path segments, query strings and
 * bodies around a valid request, so that the fuzz reaches past the first check of each route.
 */

import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import fc from "fast-check";
import protobuf from "protobufjs";
import { compressSync } from "snappy";
import {
  anyPayload,
  base64Edn,
  jsonPayload,
  mutated,
  type Payload,
  percentEncoded,
  segment,
  weirdString,
  wrongValue,
} from "./arbitraries.js";

/** What the routes need to know of the server under test (read when requests are generated). */
export interface FuzzContext {
  /** A registry token of an active admin. */
  readonly adminToken: string;
  /** The comments admin token. */
  readonly commentsToken: string;
  /** A loopback port nothing listens on: the only target the fuzzed healthchecks may reach. */
  readonly closedPort: number;
}

/** One request to send. */
export interface FuzzRequest {
  readonly path: string;
  readonly payload: Payload;
  readonly headers: Record<string, string>;
  /**
   * Sent as a WebSocket upgrade (RFC 6455 §4.1) over a real connection rather than through
   * `inject()`, so that the route's upgrade path answers it; the payload is left out.
   */
  readonly upgrade?: boolean;
}

/** A route and the requests the fuzz sends it. */
export interface FuzzRoute {
  readonly method: "GET" | "POST" | "PUT" | "DELETE" | "OPTIONS";
  /** The route pattern, as Fastify registered it. */
  readonly url: string;
  readonly requests: fc.Arbitrary<FuzzRequest>;
  /** The one 5xx a route may answer: the 500 of a failed one-off healthcheck (docs/healthchecks.md). */
  readonly allowsFailedOneOff?: boolean;
  /** Errors in Cargo's format, `{"errors": [{"detail": "<sentence>"}]}` (docs/cargo.md). */
  readonly cargoErrors?: boolean;
  /**
   * A web page, whose "not found" and sign-in answers (404, 401, 403) are pages too (the registry's
   * pages, docs/cargo.md); its other errors are Vigie's.
   */
  readonly htmlErrors?: boolean;
  /** Errors in plain text, for curl (the heartbeat ping routes, docs/healthchecks.md). */
  readonly plainTextErrors?: boolean;
  /** A share of the default number of runs, for routes whose every request is slow (Argon2). */
  readonly runs?: number;
}

const proto = (file: string) => protobuf.loadSync(fileURLToPath(new URL(`../../proto/${file}`, import.meta.url)));
const WriteRequest = proto("remote-write.proto").lookupType("prometheus.WriteRequest");

/** `name=value&...` with fuzzed names and values, or the given plausible pairs. */
function queryString(names: readonly string[], values: fc.Arbitrary<string>): fc.Arbitrary<string> {
  return fc
    .array(fc.tuple(fc.oneof(fc.constantFrom(...names, "x"), segment()), values), { maxLength: 3 })
    .map((pairs) => (pairs.length === 0 ? "" : `?${pairs.map(([name, value]) => `${name}=${value}`).join("&")}`));
}

function authorization(context: FuzzContext): fc.Arbitrary<Record<string, string>> {
  // Read when a request is generated: the admin token exists only once the server runs.
  const values = () => [
    `Bearer ${context.adminToken}`,
    context.adminToken,
    `Bearer ${context.commentsToken}`,
    `Bearer vigie_${"A".repeat(43)}`,
    "Bearer",
    "Basic Zm9vOmJhcg==",
    `Bearer ${"x".repeat(5000)}`,
  ];
  return fc.oneof(
    fc.constant({}),
    fc.integer({ min: 0, max: 6 }).map((index) => ({ authorization: values()[index] as string })),
  );
}

/** Rarely, an `Origin` of another site (the answer must then be a 403, or the route's CORS). */
const origin: fc.Arbitrary<Record<string, string>> = fc.oneof(
  { weight: 9, arbitrary: fc.constant({}) },
  {
    weight: 1,
    arbitrary: fc.constantFrom("http://evil.example", "null", "http://localhost").map((value) => ({ origin: value })),
  },
);

/**
 * Builds the requests of a route: its pattern's parameters filled with `params` (or fuzzed
 * segments), a query string, a payload, and headers.
 */
function requests(
  context: FuzzContext,
  url: string,
  options: {
    params?: Readonly<Record<string, readonly string[]>>;
    query?: fc.Arbitrary<string>;
    payload?: fc.Arbitrary<Payload>;
    /** Whether some requests are WebSocket upgrades (the subscription route). */
    upgrade?: boolean;
  } = {},
): fc.Arbitrary<FuzzRequest> {
  const names = [...url.matchAll(/:([a-z]+)/g)].map((match) => match[1] as string);
  return fc
    .record({
      values: fc.tuple(...names.map((name) => segment(options.params?.[name] ?? []))),
      query: options.query ?? fc.oneof({ weight: 4, arbitrary: fc.constant("") }, queryString([], segment())),
      payload: options.payload ?? anyPayload,
      authorization: authorization(context),
      origin,
      upgrade: options.upgrade === true ? fc.boolean() : fc.constant(false),
    })
    .map(({ values, query, payload, authorization, origin, upgrade }) => {
      let path = url;
      names.forEach((name, index) => {
        path = path.replace(`:${name}`, values[index] as string);
      });
      return { path: `${path}${query}`, payload, headers: { ...authorization, ...origin }, upgrade };
    });
}

/**
 * The Cargo registry's routes (docs/cargo.md): the sparse index, browsing, Cargo's web API with
 * its own error format, and the mirror (whose upstream is a closed port). Publish bodies are frames of fuzzed lengths, metadata and bytes.
 */
function cargoRoutes(
  context: FuzzContext,
  route: (method: FuzzRoute["method"], url: string, options?: Parameters<typeof requests>[2]) => FuzzRoute,
): FuzzRoute[] {
  const crate = { name: ["fuzz-crate", "Fuzz_Crate", "nope", "a"], version: ["0.1.0", "1.0.0+b", "01.0.0", "x"] };
  const metadata = mutated({ name: "fuzz-crate", vers: "0.1.0", deps: [], features: {}, description: "fuzz" });
  const u32 = (value: number) => {
    const bytes = Buffer.alloc(4);
    bytes.writeUInt32LE(value >>> 0);
    return bytes;
  };
  const frame: fc.Arbitrary<Payload> = fc
    .tuple(metadata, fc.uint8Array({ maxLength: 300 }), fc.integer({ min: -8, max: 8 }), fc.boolean())
    .map(([json, crateBytes, skew, headerType]) => {
      const text = Buffer.from(JSON.stringify(json) ?? "null");
      const body = Buffer.concat([u32(text.length + skew), text, u32(crateBytes.length - skew), crateBytes]);
      const headers: Record<string, string> = headerType ? { "content-type": "application/octet-stream" } : {};
      return { body, headers };
    });
  const owners = jsonPayload(mutated({ users: ["root", "fuzz-user"] }));
  const cargo = (method: FuzzRoute["method"], url: string, options: Parameters<typeof requests>[2] = {}) => ({
    ...route(method, url, options),
    cargoErrors: true,
  });
  return [
    route("GET", "/api/v1/cargo/index/config.json"),
    {
      method: "GET",
      url: "/api/v1/cargo/index/*",
      requests: requests(context, "/api/v1/cargo/index/:first/:second/:name", {
        params: { first: ["1", "2", "3", "fu"], second: ["a", "zz", "cr"], name: crate.name },
      }),
    },
    route("GET", "/api/v1/registry/crates", { query: queryString(["page", "per_page"], segment(["1", "0", "101"])) }),
    route("GET", "/api/v1/registry/crates/:name", { params: crate }),
    route("GET", "/me"),
    // The web pages: ?q and ?page on the list, any name on a crate page (404 is a page).
    route("GET", "/registry", { query: queryString(["q", "page"], segment(["fuzz", "1", "0", "x".repeat(1001)])) }),
    { ...route("GET", "/registry/:name", { params: crate }), htmlErrors: true },
    route("GET", "/registry/registry.js"),
    cargo("PUT", "/api/v1/crates/new", { payload: fc.oneof(frame, anyPayload) }),
    cargo("DELETE", "/api/v1/crates/:name/:version/yank", { params: crate }),
    cargo("PUT", "/api/v1/crates/:name/:version/unyank", { params: crate }),
    cargo("GET", "/api/v1/crates/:name/owners", { params: crate }),
    cargo("PUT", "/api/v1/crates/:name/owners", { params: crate, payload: owners }),
    cargo("DELETE", "/api/v1/crates/:name/owners", { params: crate, payload: owners }),
    cargo("GET", "/api/v1/crates", { query: queryString(["q", "per_page"], segment(["fuzz", "10", "0"])) }),
    cargo("GET", "/api/v1/crates/:name/:version/download", { params: crate }),
    route("GET", "/api/v1/mirror/index/config.json"),
    {
      method: "GET",
      url: "/api/v1/mirror/index/*",
      requests: requests(context, "/api/v1/mirror/index/:first/:second/:name", {
        params: { first: ["1", "2", "3", "fu", ".."], second: ["a", "zz", "cr", "%2e%2e"], name: crate.name },
      }),
    },
    route("GET", "/api/v1/mirror/download/:name/:version", { params: crate }),
  ];
}

/** Healthcheck fields that reach the network or decide how long a run waits: kept harmless. */
function safeHealthcheckFields(context: FuzzContext): Record<string, fc.Arbitrary<unknown>> {
  const invalid = fc.oneof(
    wrongValue.filter((value) => typeof value !== "string"),
    fc.constantFrom("", "a b", "x".repeat(300), "-bad-", "évil.example", "300.1.1.1"),
  );
  return {
    target: fc.oneof(fc.constantFrom("127.0.0.1", "::1", "localhost"), invalid),
    domain: fc.oneof(fc.constant("localhost"), invalid),
    port: fc.oneof(
      fc.constant(context.closedPort),
      wrongValue.filter((value) => typeof value !== "number"),
    ),
    timeout: fc.oneof(fc.constantFrom("100ms", "1s", "0", "-1s", "1.5.2s", "10"), wrongValue),
    // Command checks are refused (allow-api-commands: false); keep their command harmless anyway.
    command: fc.constantFrom("/nonexistent/vigie-fuzz", ""),
    alerts: fc.oneof(
      fc.constant([]),
      fc.array(mutated({ output: "fuzz-output", "failure-threshold": 2, repeat: "1h" }), { maxLength: 3 }),
      wrongValue,
    ),
    "depends-on": fc.oneof(fc.constantFrom([], ["fuzz-check"], ["nowhere"], ["a", "a"]), wrongValue),
    // Heartbeat checks.
    period: fc.oneof(fc.constantFrom("1h", "1ms", "0", "-1s"), wrongValue),
    schedule: fc.oneof(fc.constantFrom("30 2 * * *", "61 * * * *", "@daily", "* * * *", "0 0 30 2 *"), wrongValue),
    timezone: fc.oneof(fc.constantFrom("UTC", "Europe/Paris", "Mars/Olympus"), wrongValue),
    grace: fc.oneof(fc.constantFrom("1h", "1ms"), wrongValue),
    "max-duration": fc.oneof(fc.constantFrom("1h", "0s"), wrongValue),
    key: fc.oneof(
      fc.constantFrom(FUZZ_HEARTBEAT_KEY, "short", "x".repeat(200), "bad key with spaces 0000"),
      wrongValue,
    ),
  };
}

function healthcheckSkeletons(context: FuzzContext): Record<string, Record<string, unknown>> {
  const common = { name: "fuzz-check", timeout: "1s", interval: "10s", labels: { team: "fuzz" } };
  return {
    http: {
      ...common,
      target: "127.0.0.1",
      port: context.closedPort,
      "valid-status": [200],
      headers: { Authorization: "Bearer secret" },
      "body-regexp": ["ok"],
      query: { a: "1" },
      "one-off": false,
    },
    "http-with-files": {
      ...common,
      target: "127.0.0.1",
      port: context.closedPort,
      protocol: "https",
      "valid-status": [200],
      key: "client.key",
      cert: "client.pem",
      cacert: "ca.pem",
    },
    tcp: { ...common, target: "127.0.0.1", port: context.closedPort, "should-fail": true },
    // Alerts (docs/alerts.md): the fuzz server declares no output, so only `alerts: []` passes.
    "tcp-with-alerts": {
      ...common,
      target: "127.0.0.1",
      port: context.closedPort,
      alerts: [{ output: "fuzz-output", "failure-threshold": 1, repeat: "1h", description: "fuzz" }],
      "depends-on": ["fuzz-check"],
    },
    dns: { ...common, domain: "localhost", "expected-ips": ["127.0.0.1"] },
    tls: { ...common, target: "127.0.0.1", port: context.closedPort, "expiration-delay": "1h", insecure: true },
    command: { ...common, command: "/nonexistent/vigie-fuzz", arguments: ["--x"] },
    heartbeat: {
      name: "fuzz-heartbeat",
      period: "1h",
      grace: "10m",
      key: FUZZ_HEARTBEAT_KEY,
      labels: { team: "fuzz" },
    },
    "heartbeat-schedule": { name: "fuzz-heartbeat", schedule: "30 2 * * *", timezone: "Europe/Paris" },
  };
}

/** The ping key of the heartbeat the fuzz server has (docs/healthchecks.md, "Heartbeat checks"). */
export const FUZZ_HEARTBEAT_KEY = "fuzz-heartbeat-key-0000000";

/** The event, batch and remote-write payloads of the streams routes. */
const event = fc.oneof(
  fc.record({
    host: weirdString,
    service: fc.constant("cpu"),
    metric: fc.oneof(fc.double(), wrongValue),
    time: fc.oneof(fc.double(), wrongValue),
  }),
  fc.jsonValue({ maxDepth: 3 }),
);

const remoteWrite: fc.Arbitrary<Payload> = fc
  .oneof(
    fc.uint8Array({ maxLength: 300 }).map((bytes) => Buffer.from(bytes)),
    fc.uint8Array({ maxLength: 300 }).map((bytes) => Buffer.from(compressSync(Buffer.from(bytes)))),
    fc
      .array(
        fc.record({
          labels: fc.array(fc.record({ name: fc.string({ maxLength: 10 }), value: weirdString }), { maxLength: 4 }),
          samples: fc.array(fc.record({ value: fc.double(), timestamp: fc.integer() }), { maxLength: 3 }),
        }),
        { maxLength: 3 },
      )
      .map((timeseries) =>
        Buffer.from(compressSync(Buffer.from(WriteRequest.encode(WriteRequest.fromObject({ timeseries })).finish()))),
      ),
  )
  .chain((body) =>
    fc.constantFrom<Payload>(
      { body, headers: { "content-type": "application/x-protobuf", "content-encoding": "snappy" } },
      { body, headers: { "content-type": "application/x-protobuf;proto=io.prometheus.write.v2.Request" } },
      { body, headers: { "content-type": "application/json" } },
    ),
  );

const otlpSkeleton = {
  resourceSpans: [
    {
      resource: { attributes: [{ key: "service.name", value: { stringValue: "api" } }] },
      scopeSpans: [
        {
          scope: { name: "lib" },
          spans: [
            {
              traceId: "5b8efff798038103d269b633813fc60c",
              spanId: "eee19b7ec3c1b174",
              name: "GET /",
              kind: 2,
              startTimeUnixNano: "1700000000000000000",
              endTimeUnixNano: "1700000000250000000",
              attributes: [{ key: "n", value: { intValue: "5" } }],
              status: { code: 2 },
            },
          ],
        },
      ],
    },
  ],
};

const otlpMetricsSkeleton = {
  resourceMetrics: [
    {
      resource: { attributes: [{ key: "host.name", value: { stringValue: "web-1" } }] },
      scopeMetrics: [
        {
          scope: { name: "lib" },
          metrics: [
            { name: "queue", gauge: { dataPoints: [{ timeUnixNano: "1700000000000000000", asInt: "5" }] } },
            {
              name: "latency",
              histogram: { dataPoints: [{ count: "2", sum: 1.5, explicitBounds: [1], bucketCounts: ["1", "1"] }] },
            },
            { name: "rpc", summary: { dataPoints: [{ count: "1", quantileValues: [{ quantile: 0.5, value: 2 }] }] } },
          ],
        },
      ],
    },
  ],
};

const otlpLogsSkeleton = {
  resourceLogs: [
    {
      resource: { attributes: [{ key: "service.name", value: { stringValue: "api" } }] },
      scopeLogs: [
        {
          scope: { name: "lib" },
          logRecords: [
            {
              timeUnixNano: "1700000000000000000",
              severityNumber: 17,
              body: { stringValue: "failed" },
              attributes: [{ key: "n", value: { intValue: "5" } }],
            },
          ],
        },
      ],
    },
  ],
};

/** OTLP/HTTP bodies: a mutated OTLP/JSON request, random protobuf, gzip of random bytes, bad gzip. */
const otlpPayload = (skeleton: Record<string, unknown>): fc.Arbitrary<Payload> =>
  fc.oneof(
    jsonPayload(mutated(skeleton)),
    fc.uint8Array({ maxLength: 300 }).map((bytes) => ({
      body: Buffer.from(bytes),
      headers: { "content-type": "application/x-protobuf" },
    })),
    fc.uint8Array({ maxLength: 300 }).map((bytes) => ({
      body: gzipSync(Buffer.from(bytes)),
      headers: { "content-type": "application/json", "content-encoding": "gzip" },
    })),
    fc.constant({
      body: Buffer.from("not gzip"),
      headers: { "content-type": "application/json", "content-encoding": "gzip" },
    }),
  );

/** Line protocol bodies: lines built from the protocol's pieces (escapes, types), random text, gzip. */
const lineProtocol: fc.Arbitrary<Payload> = fc
  .oneof(
    fc
      .array(
        fc
          .tuple(
            fc.constantFrom("cpu", "my\\ m", "m\\,x", "", "#c", "a=b"),
            fc.constantFrom("", ",host=h", ",t\\ k=v\\=1", ",k=", ",=v"),
            fc.constantFrom(" ", "  ", ""),
            fc.constantFrom(
              "f=1",
              "f=1i",
              "f=-9i",
              "f=18446744073709551616u",
              'f="s\\"q"',
              "f=T",
              "f=",
              "f=nan",
              "a=1,b=2",
            ),
            fc.constantFrom("", " 1700000000000000000", " -1", " 1.5", " x", " 99999999999999999999999"),
          )
          .map((parts) => parts.join("")),
        { maxLength: 5 },
      )
      .map((lines) => Buffer.from(lines.join("\n"))),
    fc.string({ maxLength: 200 }).map((text) => Buffer.from(text)),
    fc.uint8Array({ maxLength: 200 }).map((bytes) => Buffer.from(bytes)),
  )
  .chain((body) =>
    fc.constantFrom<Payload>(
      { body, headers: { "content-type": "text/plain; charset=utf-8" } },
      { body: gzipSync(body), headers: { "content-type": "text/plain", "content-encoding": "gzip" } },
      { body, headers: { "content-type": "application/json", "content-encoding": "deflate" } },
      { body, headers: {} },
    ),
  );

/** The query of the line protocol routes: the stream, the precision, and stray parameters. */
const influxQuery = queryString(
  ["db", "bucket", "precision", "org"],
  fc.oneof(fc.constantFrom("ns", "s", "h", "constructor", "__proto__", "fuzzed", "default", "nope"), segment()),
);

/**
 * Values of the history route's `since`, `until` and `limit`: RFC 3339 times (valid ones, some
 * with offsets, and broken ones), integers around the bounds and huge, and fuzzed segments.
 */
/** An incident id of the right shape (it may or may not exist when the request comes). */
const FUZZ_INCIDENT = "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9";

const historyValue: fc.Arbitrary<string> = fc.oneof(
  fc
    .date({ min: new Date(-62_000_000_000_000), max: new Date(253_000_000_000_000), noInvalidDate: true })
    .chain((date) =>
      fc.constantFrom(
        date.toISOString(),
        date.toISOString().replace("Z", "+01:00"),
        date.toISOString().replace("Z", "-23:59"),
        date.toISOString().replace("Z", " 05:30"),
        date.toISOString().slice(0, 10),
        date.toISOString().replace(/\.\d+Z$/, ".123456789Z"),
      ),
    )
    .map(encodeURIComponent),
  fc.constantFrom("2026-02-30T00:00:00Z", "2026-01-01T24:00:00Z", "9999-12-31T23:59:60Z", "0000-01-01T00:00:00Z"),
  fc.oneof(fc.integer({ min: -2, max: 10_002 }), fc.integer()).map(String),
  fc.constantFrom("1e3", "0x10", "1.0", "", "99999999999999999999999"),
  segment(),
);

/** Every route of every module (test/fuzz/routes.test.ts checks that none is missing). */
export function fuzzRoutes(context: FuzzContext): FuzzRoute[] {
  const route = (
    method: FuzzRoute["method"],
    url: string,
    options: Parameters<typeof requests>[2] = {},
    extra: Partial<FuzzRoute> = {},
  ): FuzzRoute => ({ method, url, requests: requests(context, url, options), ...extra });

  const comment = {
    website: ["blog", "open-site"],
    article: ["post", "hello-world"],
    id: ["6f1c0e8e-2b1a-4c3d-9e8f-0a1b2c3d4e5f"],
  };
  const commentBody = mutated({
    author: "Ann",
    "author-website": "ann.example.org",
    content: "Nice post!",
    answer: "10",
    timestamp: 1_767_225_600_000,
    signature: "0".repeat(64),
  });
  const safe = safeHealthcheckFields(context);
  const skeletons = healthcheckSkeletons(context);
  const definition = (kind: string) => mutated(skeletons[kind] as Record<string, unknown>, safe);
  const oneOffOrNot = (kind: string) =>
    fc.tuple(definition(kind), fc.boolean()).map(([value, oneOff]) => (oneOff ? { ...value, "one-off": true } : value));
  const bulk = mutated(
    {
      "http-checks": [skeletons.http],
      "tcp-checks": [skeletons.tcp],
      "dns-checks": [skeletons.dns],
      "tls-checks": [skeletons.tls],
    },
    {
      "http-checks": fc.array(definition("http"), { maxLength: 2 }),
      "tcp-checks": fc.array(definition("tcp"), { maxLength: 2 }),
      "dns-checks": fc.array(definition("dns"), { maxLength: 2 }),
      "tls-checks": fc.array(definition("tls"), { maxLength: 2 }),
      "command-checks": fc.array(definition("command"), { maxLength: 1 }),
      "heartbeat-checks": fc.array(definition("heartbeat"), { maxLength: 2 }),
    },
  );
  const streamNames = { name: ["fuzz", "default", "nowhere"] };
  const pingRequests = {
    params: {
      key: [FUZZ_HEARTBEAT_KEY, "unknown-key-000000000000"],
      signal: ["start", "fail", "log", "0", "255", "256"],
    },
    query: queryString(["rid"], segment(["0b6a4c4e-7b8f-4d2a-9f51-0d1f0f7a1b01", "not-a-uuid"])),
  };
  const query = queryString(
    ["query"],
    base64Edn.map((value) => percentEncoded(String(value))),
  );

  return [
    route("GET", "/metrics"),
    route("GET", "/"),
    route("GET", "/healthz"),
    route("GET", "/health"),
    route("GET", "/openapi.json"),

    route(
      "POST",
      "/api/v1/registry/user",
      {
        payload: jsonPayload(
          mutated({ name: "fuzz-user", description: "", password: "a-long-password", role: "tech", active: true }),
        ),
      },
      { runs: 0.25 },
    ),
    route("GET", "/api/v1/registry/user"),
    route(
      "POST",
      "/api/v1/registry/user/:name",
      {
        params: { name: ["fuzz-user", "root"] },
        payload: jsonPayload(mutated({ description: "x", password: "another-long-one", role: "tech", active: true })),
      },
      { runs: 0.25 },
    ),
    route("DELETE", "/api/v1/registry/user/:name", { params: { name: ["fuzz-user", "nobody"] } }),
    route(
      "POST",
      "/api/v1/registry/token",
      {
        payload: jsonPayload(
          mutated({
            name: "fuzz token",
            user: "fuzz-user",
            password: "wrong-password",
            validity: 1,
            scopes: ["publish-new", "yank"],
            crates: ["fuzz-*", "serde"],
          }),
        ),
      },
      { runs: 0.25 },
    ),
    route("GET", "/api/v1/registry/token", { query: queryString(["user"], segment(["root", "fuzz-user"])) }),
    ...cargoRoutes(context, route),
    route("DELETE", "/api/v1/registry/token/:name", {
      params: { name: ["fuzz token", "laptop"] },
      query: queryString(["user"], segment(["root", "fuzz-user"])),
    }),

    route("GET", "/api/v1/challenge/:website/:article", { params: comment }),
    route("OPTIONS", "/api/v1/challenge/:website/:article", { params: comment }),
    route("GET", "/api/v1/comment/:website/:article", {
      params: comment,
      query: queryString(["limit", "before"], fc.oneof(fc.integer().map(String), segment())),
    }),
    route("OPTIONS", "/api/v1/comment/:website/:article", { params: comment }),
    route("GET", "/api/v1/count/:website", {
      params: comment,
      query: fc.oneof(
        queryString(["article"], segment(["post", "hello-world", "__proto__"])),
        // Around the bound of 100 articles per call.
        fc
          .integer({ min: 99, max: 102 })
          .map((count) => `?${Array.from({ length: count }, (_, index) => `article=a${index}`).join("&")}`),
      ),
    }),
    route("OPTIONS", "/api/v1/count/:website", { params: comment }),
    route("POST", "/api/v1/comment/:website/:article", { params: comment, payload: jsonPayload(commentBody) }),
    route("GET", "/api/admin/website"),
    route("GET", "/api/admin/comment/:website", {
      params: comment,
      query: queryString(
        ["approved", "limit", "before"],
        fc.oneof(fc.constantFrom("true", "false"), fc.integer().map(String), segment()),
      ),
    }),
    route("GET", "/api/admin/comment/:website/:article", { params: comment }),
    route("DELETE", "/api/admin/comment/:website/:article", { params: comment }),
    route("GET", "/api/admin/comment/:website/:article/:id", { params: comment }),
    route("POST", "/api/admin/comment/:website/:article/:id", { params: comment }),
    route("DELETE", "/api/admin/comment/:website/:article/:id", { params: comment }),
    route("GET", "/api/admin/event/:website", { params: comment }),
    route("DELETE", "/api/admin/event/:website", { params: comment }),
    // The widget and the moderation page (docs/comments.md): files without parameters.
    route("GET", "/comments/widget.js"),
    route("GET", "/comments/admin"),
    route("GET", "/comments/admin.js"),
    route("GET", "/comments/admin.css"),
    // The pages of e-mailed links (docs/comments.md): signed tokens in the query, form bodies.
    ...["/comments/mail/moderate", "/comments/mail/unsubscribe"].flatMap((url) => {
      const token = segment(["eyJhIjoxfQ.abc", "x".repeat(201), "a.b.c", "", "%00"]);
      const query = queryString(["token"], token);
      const form: fc.Arbitrary<Payload> = fc.oneof(
        fc.constant({
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: "List-Unsubscribe=One-Click",
        }),
        fc.constant({ headers: { "content-type": "multipart/form-data; boundary=x" }, body: "--x--" }),
        anyPayload,
      );
      return [
        { ...route("GET", url, { query }), htmlErrors: true },
        { ...route("POST", url, { query, payload: form }), htmlErrors: true },
      ];
    }),

    ...["http", "tcp", "dns", "tls", "command"].map((kind) =>
      route(
        "POST",
        `/healthcheck/${kind}`,
        {
          payload: jsonPayload(
            kind === "http"
              ? fc.oneof(oneOffOrNot("http"), oneOffOrNot("http-with-files"))
              : kind === "tcp"
                ? fc.oneof(oneOffOrNot("tcp"), oneOffOrNot("tcp-with-alerts"))
                : oneOffOrNot(kind),
          ),
        },
        { allowsFailedOneOff: true },
      ),
    ),
    route("POST", "/healthcheck/heartbeat", {
      payload: jsonPayload(fc.oneof(oneOffOrNot("heartbeat"), oneOffOrNot("heartbeat-schedule"))),
    }),
    // Heartbeat pings (docs/healthchecks.md): public, any body of any media type, plain-text answers.
    ...(["GET", "POST"] as const).flatMap((method) => [
      route(method, "/ping/:key", pingRequests, { plainTextErrors: true }),
      route(method, "/ping/:key/:signal", pingRequests, { plainTextErrors: true }),
    ]),
    route("POST", "/healthcheck/bulk", { payload: jsonPayload(bulk) }),
    route("GET", "/healthcheck"),
    route("GET", "/healthcheck/:name", { params: { name: ["fuzz-check"] } }),
    route("DELETE", "/healthcheck/:name", { params: { name: ["fuzz-check"] } }),
    route("GET", "/result"),
    route("GET", "/result/:name", { params: { name: ["fuzz-check"] } }),
    route("GET", "/result/:name/history", {
      params: { name: ["fuzz-check"] },
      query: queryString(["since", "until", "limit"], historyValue),
    }),
    route("GET", "/result/:name/uptime", { params: { name: ["fuzz-check"] } }),
    // Alerts (docs/alerts.md): the triggered ones, and the notifications of a period.
    route("GET", "/alerts"),
    route("GET", "/alerts/history", { query: queryString(["since", "until", "limit"], historyValue) }),
    // Maintenance windows (docs/healthchecks.md): a span of RFC 3339 times around now.
    route("POST", "/maintenance", {
      payload: jsonPayload(
        mutated(
          {
            name: "fuzz-window",
            checks: ["fuzz-check", "team=web"],
            start: "2030-01-01T00:00:00Z",
            end: "2030-01-01T01:00:00Z",
          },
          {
            start: historyValue,
            end: historyValue,
            checks: fc.array(segment(["fuzz-check", "a=b"]), { maxLength: 3 }),
          },
        ),
      ),
    }),
    route("GET", "/maintenance"),
    route("DELETE", "/maintenance/:name", { params: { name: ["fuzz-window", "nowhere"] } }),
    // Incidents (docs/healthchecks.md): the status pages of the fuzz are "" (/status) and "ops".
    route("POST", "/incident", {
      payload: jsonPayload(
        mutated(
          { title: "Fuzz outage", status: "investigating", message: "Looking.", checks: ["fuzz-check"], pages: [""] },
          {
            status: fc.constantFrom("investigating", "identified", "monitoring", "resolved", "fixed"),
            checks: fc.array(segment(["fuzz-check", "nowhere"]), { maxLength: 3 }),
            pages: fc.array(segment(["", "ops", "data"]), { maxLength: 3 }),
          },
        ),
      ),
    }),
    route("POST", "/incident/:id/update", {
      params: { id: [FUZZ_INCIDENT, "nowhere"] },
      payload: jsonPayload(
        mutated(
          { status: "monitoring", message: "A fix is out." },
          { status: fc.constantFrom("investigating", "resolved", "closed") },
        ),
      ),
    }),
    route("GET", "/incident", {
      query: queryString(
        ["status-page", "since", "limit"],
        fc.oneof(historyValue, fc.integer().map(String), segment()),
      ),
    }),
    route("GET", "/incident/:id", { params: { id: [FUZZ_INCIDENT, "nowhere"] } }),
    route("DELETE", "/incident/:id", { params: { id: [FUZZ_INCIDENT, "nowhere"] } }),
    // The public status page (docs/healthchecks.md): its one parameter is ?refresh=<seconds>.
    route("GET", "/status", {
      query: queryString(["refresh"], fc.oneof(fc.integer({ min: -5, max: 5_000 }).map(String), segment())),
    }),
    route("GET", "/status/data"),
    route("GET", "/status/feed.atom"),
    // A second page (healthchecks.status-pages), with the same parameter.
    route("GET", "/status/ops", {
      query: queryString(["refresh"], fc.oneof(fc.integer({ min: -5, max: 5_000 }).map(String), segment())),
    }),
    route("GET", "/status/ops/data"),
    route("GET", "/status/ops/feed.atom"),
    route("GET", "/status/status.js"),
    // Badges (docs/healthchecks.md): public, every subject in SVG and in JSON.
    ...["status", "uptime/1h", "uptime/24h", "uptime/7d", "uptime/30d", "response-time"].flatMap((subject) =>
      ["svg", "json"].map((format) =>
        route("GET", `/badge/:name/${subject}.${format}`, { params: { name: ["fuzz-check", "nowhere"] } }),
      ),
    ),

    route("POST", "/api/v1/tsdb/remote-write/:name", { params: streamNames, payload: remoteWrite }),
    route("POST", "/api/v1/prometheus/remote-write/:name", { params: streamNames, payload: remoteWrite }),
    route("POST", "/api/v1/opentelemetry/v1/traces/:name", { params: streamNames, payload: otlpPayload(otlpSkeleton) }),
    route("POST", "/api/v1/opentelemetry/v1/metrics/:name", {
      params: streamNames,
      payload: otlpPayload(otlpMetricsSkeleton),
    }),
    route("POST", "/api/v1/opentelemetry/v1/logs/:name", {
      params: streamNames,
      payload: otlpPayload(otlpLogsSkeleton),
    }),
    route("POST", "/api/v1/influx/write", { query: influxQuery, payload: lineProtocol }),
    route("POST", "/api/v1/influx/api/v2/write", { query: influxQuery, payload: lineProtocol }),
    route("POST", "/api/v1/stream/:name", {
      params: { name: ["fuzzed", "default"] },
      payload: jsonPayload(
        mutated({ config: Buffer.from("{:actions {:action :sdo}}").toString("base64") }, { config: base64Edn }),
      ),
    }),
    route("GET", "/api/v1/stream"),
    route("GET", "/api/v1/stream/:name", { params: streamNames }),
    route("DELETE", "/api/v1/stream/:name", { params: { name: ["fuzzed", "nowhere"] } }),
    route("PUT", "/api/v1/stream/:name", {
      params: streamNames,
      payload: jsonPayload(
        fc.oneof(
          mutated({ event: { host: "a", metric: 1, time: 1 } }, { event }),
          mutated({ events: [{ host: "a", metric: 1, time: 1 }] }, { events: fc.array(event, { maxLength: 4 }) }),
        ),
      ),
    }),
    route("GET", "/api/v1/index/:name/search", { params: streamNames, query }),
    route("POST", "/api/v1/index/:name/search", {
      params: streamNames,
      query,
      payload: jsonPayload(mutated({ query: Buffer.from("[:true]").toString("base64") }, { query: base64Edn })),
    }),
    route("GET", "/api/v1/index/:name/current-time", { params: streamNames }),

    // Half of them real upgrades (opened subscriptions are closed at once), half plain GETs (426).
    route("GET", "/api/v1/channel/:channel", {
      params: { channel: ["alerts", "fuzz-index"] },
      query: queryString(
        ["query", "token"],
        fc.oneof(
          base64Edn.map((value) => percentEncoded(String(value))),
          fc.constant(percentEncoded(Buffer.from('[:= :host "a"]').toString("base64"))),
          segment(),
        ),
      ),
      upgrade: true,
    }),
  ];
}
