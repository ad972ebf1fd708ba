import { hostname } from "node:os";
import { describe, expect, it } from "vitest";
import { instanceIdOf } from "../../../src/platform/cluster/config.js";
import { ConfigError, parseConfig } from "../../../src/platform/config.js";

const POSTGRES = "postgres://vigie:pw@db.internal:5432/vigie";
const TOKEN = "n4ts-T0ken-zq8Xv";

/** The message of the ConfigError `run` throws. */
function message(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error("expected a ConfigError");
}

const parse = (raw: unknown, environment: Record<string, string | undefined> = {}) => parseConfig(raw, environment, []);

describe("cluster configuration", () => {
  it("is off by default, with every default filled in", () => {
    const { cluster } = parse(undefined);
    expect(cluster.enabled).toBe(false);
    expect(cluster["instance-id"]).toBe("");
    expect(cluster["advertise-url"]).toBe("");
    expect(cluster.heartbeat.milliseconds).toBe(2_000);
    expect(cluster.lease.milliseconds).toBe(10_000);
    expect(cluster.nats.servers).toEqual(["nats://127.0.0.1:4222"]);
    expect(cluster.nats.token).toBe("");
    expect(cluster.nats["credentials-file"]).toBeUndefined();
    // Off, it asks nothing of the database: the default SQLite URL is fine.
    expect(parse({ cluster: { enabled: false } }).cluster.enabled).toBe(false);
  });

  it("refuses cluster.enabled on the default SQLite database, naming cluster.enabled", () => {
    const text = message(() => parse({ cluster: { enabled: true } }));
    expect(text).toContain("cluster.enabled");
    expect(text).toMatch(/postgres/i);
    expect(message(() => parse({ cluster: { enabled: true }, database: { url: "sqlite::memory:" } }))).toContain(
      "cluster.enabled",
    );
  });

  it("accepts cluster.enabled on PostgreSQL with the documented defaults", () => {
    for (const url of [POSTGRES, "postgresql://vigie@127.0.0.1/vigie"]) {
      const { cluster } = parse({ cluster: { enabled: true }, database: { url } });
      expect(cluster.enabled).toBe(true);
      expect(cluster.heartbeat.milliseconds).toBe(2_000);
      expect(cluster.lease.milliseconds).toBe(10_000);
      expect(cluster.nats.servers).toEqual(["nats://127.0.0.1:4222"]);
      expect(cluster.nats["stream-max-age"].milliseconds).toBe(3_600_000);
      expect(cluster.nats["stream-max-bytes"]).toBe(1024 ** 3);
      expect(cluster.nats.token).toBe("");
    }
    // The same through the environment's database URL.
    expect(parse({ cluster: { enabled: true } }, { VIGIE_DATABASE_URL: POSTGRES }).cluster.enabled).toBe(true);
  });

  it("reads every key of the section", () => {
    const { cluster } = parse({
      database: { url: POSTGRES },
      cluster: {
        enabled: true,
        "instance-id": "vigie-a.1_b",
        "advertise-url": "http://10.0.0.1:8080",
        heartbeat: "500ms",
        lease: "3s",
        nats: {
          servers: ["nats://n1:4222", "tls://n2:4443", "ws://n3:80", "wss://n4"],
          token: "t",
          "credentials-file": "/etc/vigie/nats.creds",
          "stream-max-age": "30m",
          "stream-max-bytes": "256MiB",
        },
      },
    });
    expect(cluster["instance-id"]).toBe("vigie-a.1_b");
    expect(cluster["advertise-url"]).toBe("http://10.0.0.1:8080");
    expect(cluster.heartbeat.milliseconds).toBe(500);
    expect(cluster.lease.milliseconds).toBe(3_000);
    expect(cluster.nats.servers).toEqual(["nats://n1:4222", "tls://n2:4443", "ws://n3:80", "wss://n4"]);
    expect(cluster.nats.token).toBe("t");
    expect(cluster.nats["credentials-file"]).toBe("/etc/vigie/nats.creds");
    expect(cluster.nats["stream-max-age"].milliseconds).toBe(1_800_000);
    expect(cluster.nats["stream-max-bytes"]).toBe(256 * 1024 ** 2);
  });

  it("refuses a lease shorter than two heartbeats, naming cluster.lease", () => {
    const text = message(() =>
      parse({ database: { url: POSTGRES }, cluster: { enabled: true, heartbeat: "5s", lease: "9s" } }),
    );
    expect(text).toContain("cluster.lease");
    expect(
      message(() => parse({ database: { url: POSTGRES }, cluster: { enabled: true, heartbeat: "6s" } })),
    ).toContain("cluster.lease");
    // Exactly two heartbeats is enough.
    const { cluster } = parse({
      database: { url: POSTGRES },
      cluster: { enabled: true, heartbeat: "5s", lease: "10s" },
    });
    expect(cluster.lease.milliseconds).toBe(10_000);
  });

  it("refuses a bad NATS URL, naming its index", () => {
    for (const bad of ["http://127.0.0.1:4222", "127.0.0.1:4222", "nats://", "nats://host with space:4222", 4222]) {
      expect(
        message(() => parse({ database: { url: POSTGRES }, cluster: { enabled: true, nats: { servers: [bad] } } })),
      ).toContain("cluster.nats.servers[0]");
    }
    expect(
      message(() =>
        parse({
          database: { url: POSTGRES },
          cluster: { enabled: true, nats: { servers: ["nats://ok:4222", "ftp://bad"] } },
        }),
      ),
    ).toContain("cluster.nats.servers[1]");
    expect(message(() => parse({ cluster: { nats: { servers: [] } } }))).toContain("cluster.nats.servers");
  });

  it("refuses unknown keys and a bad instance id", () => {
    expect(message(() => parse({ cluster: { heartbeats: "2s" } }))).toContain("cluster.heartbeats");
    expect(message(() => parse({ cluster: { nats: { server: ["nats://a"] } } }))).toContain("cluster.nats.server");
    expect(message(() => parse({ cluster: { "instance-id": "has space" } }))).toContain("cluster.instance-id");
    expect(message(() => parse({ cluster: { "instance-id": "x".repeat(101) } }))).toContain("cluster.instance-id");
  });

  it("takes the NATS token from VIGIE_NATS_TOKEN over the file", () => {
    const raw = { database: { url: POSTGRES }, cluster: { enabled: true, nats: { token: "from-file" } } };
    expect(parse(raw).cluster.nats.token).toBe("from-file");
    expect(parse(raw, { VIGIE_NATS_TOKEN: TOKEN }).cluster.nats.token).toBe(TOKEN);
    // Without the section in the file at all.
    expect(parse({ database: { url: POSTGRES } }, { VIGIE_NATS_TOKEN: TOKEN }).cluster.nats.token).toBe(TOKEN);
    // An empty variable overrides nothing.
    expect(parse(raw, { VIGIE_NATS_TOKEN: "" }).cluster.nats.token).toBe("from-file");
  });

  it("never shows the NATS token in an error", () => {
    const failures: Array<[unknown, Record<string, string>]> = [
      // Cluster mode on SQLite, token from the environment and from the file.
      [{ cluster: { enabled: true } }, { VIGIE_NATS_TOKEN: TOKEN }],
      [{ cluster: { enabled: true, nats: { token: TOKEN } } }, {}],
      // Another key of the nats object is wrong.
      [{ database: { url: POSTGRES }, cluster: { enabled: true, nats: { token: TOKEN, servers: ["bad"] } } }, {}],
      [
        { database: { url: POSTGRES }, cluster: { enabled: true, nats: { servers: ["bad"] } } },
        { VIGIE_NATS_TOKEN: TOKEN },
      ],
      [{ cluster: { nats: { token: TOKEN, unknown: 1 } } }, {}],
      // The lease rule.
      [{ database: { url: POSTGRES }, cluster: { enabled: true, lease: "1s" } }, { VIGIE_NATS_TOKEN: TOKEN }],
      // The token itself of a wrong type.
      [{ cluster: { nats: { token: [TOKEN] } } }, {}],
      [{ cluster: { nats: { token: { value: TOKEN } } } }, {}],
    ];
    for (const [raw, environment] of failures) {
      const text = message(() => parse(raw, environment));
      expect(text).not.toContain(TOKEN);
      expect(text).not.toContain("zq8Xv");
    }
    expect(message(() => parse({ cluster: { nats: { token: [TOKEN] } } }))).toContain("cluster.nats.token");
  });
});

describe("NATS credentials with security.require-token", () => {
  const secured = (nats: Record<string, unknown> = {}) => ({
    database: { url: POSTGRES },
    security: { "require-token": true },
    cluster: { enabled: true, nats },
  });

  it("refuses cluster mode without a NATS token or credentials file, naming the keys", () => {
    const text = message(() => parse(secured()));
    expect(text).toContain(
      "invalid configuration: cluster.nats.token: is required when security.require-token is true",
    );
    expect(text).toContain("VIGIE_NATS_TOKEN");
    expect(text).toContain("cluster.nats.credentials-file");
    expect(text).toContain("cluster.nats.allow-anonymous: true");
    // An explicit false is the default.
    expect(message(() => parse(secured({ "allow-anonymous": false })))).toContain("cluster.nats.allow-anonymous");
    // An empty variable is no token.
    expect(message(() => parse(secured(), { VIGIE_NATS_TOKEN: "" }))).toContain("cluster.nats.token");
  });

  it("accepts a token from the file or from VIGIE_NATS_TOKEN", () => {
    expect(parse(secured({ token: TOKEN })).cluster.nats.token).toBe(TOKEN);
    expect(parse(secured(), { VIGIE_NATS_TOKEN: TOKEN }).cluster.nats.token).toBe(TOKEN);
  });

  it("accepts a credentials file", () => {
    const { cluster } = parse(secured({ "credentials-file": "/etc/vigie/nats.creds" }));
    expect(cluster.nats["credentials-file"]).toBe("/etc/vigie/nats.creds");
    expect(cluster.nats["allow-anonymous"]).toBe(false);
  });

  it("accepts no credentials with cluster.nats.allow-anonymous: true", () => {
    const { cluster } = parse(secured({ "allow-anonymous": true }));
    expect(cluster.nats["allow-anonymous"]).toBe(true);
    expect(cluster.nats.token).toBe("");
  });

  it("asks nothing of NATS when tokens are not required or cluster mode is off", () => {
    expect(parse({ database: { url: POSTGRES }, cluster: { enabled: true } }).cluster.nats["allow-anonymous"]).toBe(
      false,
    );
    expect(parse({ security: { "require-token": true } }).cluster.enabled).toBe(false);
    expect(message(() => parse(secured({ "allow-anonymous": "yes" })))).toContain("cluster.nats.allow-anonymous");
  });
});

describe("instanceIdOf", () => {
  it("defaults to <hostname>-<pid>", () => {
    const id = instanceIdOf(parse(undefined).cluster);
    expect(id.endsWith(`-${process.pid}`)).toBe(true);
    expect(id).toMatch(/^[A-Za-z0-9._-]{1,100}$/);
    if (/^[A-Za-z0-9._-]{1,80}$/.test(hostname())) expect(id).toBe(`${hostname()}-${process.pid}`);
  });

  it("is cluster.instance-id when given", () => {
    expect(instanceIdOf(parse({ cluster: { "instance-id": "vigie-1" } }).cluster)).toBe("vigie-1");
  });
});
