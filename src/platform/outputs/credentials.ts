/**
 * The credentials that the `loki`, `elasticsearch` and `influxdb` outputs take besides a URL's
 * `user:password@` (docs/outputs.md): `username` and `password` (HTTP Basic, RFC 7617), `token`
 * (a bearer token, or InfluxDB's `Token` scheme) and, for Elasticsearch, `api-key` (`ApiKey`
 * scheme). Secrets may come from `<key>-env` or `<key>-file`; none is ever echoed in an error.
 */
import * as v from "../validation.js";

/** A secret sent in a header: printable ASCII, no spaces (a header value cannot hold line breaks). */
const headerSecret = v.secret(
  v.string({ min: 1, max: 4096, pattern: /^[\x21-\x7e]+$/, rule: "must be printable ASCII without spaces" }),
);

/** The credential keys of an output: each may also be given as `<key>-env` or `<key>-file`. */
export const credentialsShape = {
  /** The user name of HTTP Basic authentication (with `password`). */
  username: v.optional(
    v.string({ min: 1, max: 256, pattern: /^[^:\r\n]+$/, rule: "must not contain : or line breaks" }),
  ),
  /** The password of HTTP Basic authentication, a secret. */
  password: v.optional(v.secret(v.string({ max: 4096, pattern: /^[^\r\n]*$/, rule: "must not contain line breaks" }))),
  /** A token, a secret: `Authorization: Bearer <token>` (InfluxDB: `Token <token>`). */
  token: v.optional(headerSecret),
};

/** An Elasticsearch API key (the base64 `encoded` value), a secret: `Authorization: ApiKey <key>`. */
export const apiKeyShape = { "api-key": v.optional(headerSecret) };

/** The keys of {@link credentialsShape} that may come from `<key>-env` or `<key>-file`. */
export const CREDENTIAL_SECRETS = ["password", "token"] as const;

/** The credentials as parsed (absent keys are `undefined`). */
export interface Credentials {
  readonly username?: string | undefined;
  readonly password?: string | undefined;
  readonly token?: string | undefined;
  readonly "api-key"?: string | undefined;
}

/**
 * Refuses contradictory credentials: a `password` without `username`, or more than one of
 * `username`, `token` and `api-key` (each would be the one `Authorization` header).
 * @throws v.ValidationError naming the key at fault
 */
export function checkCredentials(credentials: Credentials, path: string): void {
  if (credentials.password !== undefined && credentials.username === undefined)
    throw new v.ValidationError(v.childPath(path, "password"), "needs a username");
  const given = (["username", "token", "api-key"] as const).filter((key) => credentials[key] !== undefined);
  if (given.length > 1)
    throw new v.ValidationError(v.childPath(path, given[1] ?? ""), `takes one of username, token and api-key`);
}

/**
 * The `Authorization` header the credentials give, or none.
 * @param tokenScheme `Bearer` (Loki, Elasticsearch) or `Token` (InfluxDB)
 */
export function authorizationOf(credentials: Credentials, tokenScheme: "Bearer" | "Token"): Record<string, string> {
  if (credentials.token !== undefined) return { authorization: `${tokenScheme} ${credentials.token}` };
  if (credentials["api-key"] !== undefined) return { authorization: `ApiKey ${credentials["api-key"]}` };
  if (credentials.username === undefined) return {};
  const pair = `${credentials.username}:${credentials.password ?? ""}`;
  return { authorization: `Basic ${Buffer.from(pair, "utf8").toString("base64")}` };
}
