/**
 * The `cluster` section of the configuration (docs/cluster.md): several instances on one PostgreSQL
 * and one NATS JetStream. Off by default; a single instance on SQLite needs neither.
 */
import { hostname } from "node:os";
import type { Duration } from "../duration.js";
import * as v from "../validation.js";

const NATS_URL_RULE = "must be a NATS server URL such as nats://127.0.0.1:4222 (nats, tls, ws or wss scheme)";

/** A NATS server URL (the scheme the official client accepts), as given. */
const natsUrl: v.Validator<string> = (value, path) => {
  if (typeof value === "string" && /^(nats|tls|wss?):\/\/[^\s/]+\/?$/.test(value)) return value;
  throw new v.ValidationError(path, NATS_URL_RULE, value);
};

const INSTANCE_ID_RULE = "must be 1 to 100 characters among letters, digits, '.', '_' and '-'";

const instanceId: v.Validator<string> = (value, path) => {
  if (typeof value === "string" && (value === "" || /^[A-Za-z0-9._-]{1,100}$/.test(value))) return value;
  throw new v.ValidationError(path, INSTANCE_ID_RULE, value);
};

const sec = (milliseconds: number): Duration => ({ text: `${milliseconds / 1000}s`, milliseconds });

/** Validator of the `cluster` section, defaults filled in. */
export const clusterSection = v.object(
  {
    enabled: v.withDefault(v.boolean(), false),
    "instance-id": v.withDefault(instanceId, ""),
    "advertise-url": v.withDefault(v.string(), ""),
    heartbeat: v.withDefault(v.duration(100), sec(2_000)),
    lease: v.withDefault(v.duration(500), sec(10_000)),
    nats: v.object(
      {
        servers: v.withDefault(v.array(natsUrl, { min: 1, max: 32 }), ["nats://127.0.0.1:4222"]),
        /** The NATS server's token (its `authorization { token }`), also VIGIE_NATS_TOKEN; "" for none. */
        token: v.withDefault(v.secret(v.string()), ""),
        /** A NATS credentials file (`.creds`: user JWT and NKey seed), read at start-up. */
        "credentials-file": v.optional(v.string({ min: 1 })),
        /**
         * Default false. With `security.require-token: true`, cluster mode needs `token` or
         * `credentials-file`: an event published straight to NATS reaches the streams without any
         * Vigie token, so a NATS that accepts anyone would bypass the API's. True accepts that
         * (a NATS reachable by Vigie alone, on a private network).
         */
        "allow-anonymous": v.withDefault(v.boolean(), false),
        "stream-max-age": v.withDefault(v.duration(1_000), sec(3_600_000)),
        "stream-max-bytes": v.withDefault(v.size(), 1024 ** 3),
      },
      { unknownKeys: "reject", optional: true },
    ),
  },
  { unknownKeys: "reject", optional: true },
);

/** The `cluster` section as validated. Durations in milliseconds, sizes in bytes. */
export type ClusterConfig = ReturnType<typeof clusterSection>;

/** Environment variables overriding keys of the section (secrets kept out of the file). */
export const CLUSTER_ENVIRONMENT: Readonly<Record<string, string>> = {
  VIGIE_NATS_TOKEN: "cluster.nats.token",
};

/** The rule that ties NATS credentials to `security.require-token`, as the error states it. */
export const NATS_CREDENTIALS_RULE =
  "is required when security.require-token is true (or VIGIE_NATS_TOKEN, or cluster.nats.credentials-file): " +
  "whoever can publish to NATS puts events into the streams without a token. " +
  "Set cluster.nats.allow-anonymous: true to run without NATS credentials anyway";

/**
 * The rules that tie the section to the rest: cluster mode needs PostgreSQL, a lease longer than
 * two heartbeats (an instance must renew at least once before its lease ends), and, when the API
 * requires tokens, NATS credentials (a token or a credentials file) unless
 * `cluster.nats.allow-anonymous` says otherwise: forwarded events enter the streams through NATS
 * with no Vigie token, so an open NATS would be a way around the API's.
 * @param requireToken `security.require-token`
 * @throws ValidationError naming `cluster.enabled`, `cluster.lease` or `cluster.nats.token`
 */
export function checkCluster(cluster: ClusterConfig, databaseUrl: string, requireToken: boolean): void {
  if (!cluster.enabled) return;
  if (!/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new v.ValidationError(
      "cluster.enabled",
      "needs database.url to be a PostgreSQL URL (postgres://...): instances share their state through PostgreSQL, which SQLite cannot do",
    );
  }
  if (cluster.lease.milliseconds < 2 * cluster.heartbeat.milliseconds) {
    throw new v.ValidationError("cluster.lease", "must be at least twice cluster.heartbeat", cluster.lease.text);
  }
  const { nats } = cluster;
  const anonymous = nats.token === "" && nats["credentials-file"] === undefined;
  if (requireToken && anonymous && !nats["allow-anonymous"]) {
    throw new v.ValidationError("cluster.nats.token", NATS_CREDENTIALS_RULE);
  }
}

/** This instance's id: `cluster.instance-id`, else `<hostname>-<pid>` (docs/configuration.md). */
export function instanceIdOf(cluster: ClusterConfig): string {
  if (cluster["instance-id"] !== "") return cluster["instance-id"];
  return `${hostname()
    .replace(/[^A-Za-z0-9._-]/g, "-")
    .slice(0, 80)}-${process.pid}`;
}
