/**
 * Secrets kept out of logs and answers. One rule says which names hold a secret (header names,
 * query parameter names, JSON field names): `Authorization`, `Proxy-Authorization`, `Cookie`, or a
 * name containing `token`, `secret`, `key`, `password` or `auth`, in any case. Their values are
 * written `<redacted>`.
 *
 * Request URLs are logged with the value of every query parameter whose name follows that rule
 * redacted, the name read as the server reads it (percent-decoded, `+` as a space): Fastify
 * decodes `?%74oken=` to `token`, so a rule on the raw text would let that token into the log.
 */

/** What a secret is replaced with. */
export const REDACTED = "<redacted>";

/** Names whose value is a secret, lower case, matched exactly. */
const SECRET_NAMES: ReadonlySet<string> = new Set(["authorization", "proxy-authorization", "cookie"]);

/** Words that make a name secret wherever they appear in it, lower case. */
const SECRET_WORDS: readonly string[] = ["token", "secret", "key", "password", "auth"];

/**
 * Whether the value of a header, query parameter or field of this name is a secret:
 * `Authorization`, `Proxy-Authorization`, `Cookie`, or a name containing `token`, `secret`, `key`,
 * `password` or `auth`, in any case (`X-API-Key`, `x-auth-user`, `X-Vault-Token`, `api_key`).
 * @param name the name as the server reads it (decoded)
 */
export function isSecretName(name: string): boolean {
  const lower = name.toLowerCase();
  return SECRET_NAMES.has(lower) || SECRET_WORDS.some((word) => lower.includes(word));
}

/**
 * How many times a name is percent-decoded at most: once is what the server does; more catches
 * `%2574oken`, which no route reads as `token` but a client may have meant as one.
 */
const MAX_DECODINGS = 3;

/**
 * A query parameter name as a server reads it (`application/x-www-form-urlencoded`: `+` is a
 * space, `%XX` a byte of UTF-8), decoded until it no longer changes (at most 3 times). Never
 * throws: a malformed escape decodes byte by byte (`%E9` → `é` as Latin-1), which keeps every
 * ASCII letter the secret-name rule looks for.
 */
export function decodedName(raw: string): string {
  let name = raw.replaceAll("+", " ");
  for (let round = 0; round < MAX_DECODINGS && name.includes("%"); round += 1) {
    let decoded: string;
    try {
      decoded = decodeURIComponent(name);
    } catch {
      decoded = name.replace(/%([0-9A-Fa-f]{2})/g, (_escape, hex: string) =>
        String.fromCharCode(Number.parseInt(hex, 16)),
      );
    }
    if (decoded === name) break;
    name = decoded;
  }
  return name;
}

/** The key segment of a heartbeat's ping path. */
const PING_KEY = /^\/ping\/[^/?#]+/;

/**
 * A request URL (path and query, as `request.url` holds it) for a log line: the key of a
 * heartbeat's ping path becomes `<redacted>`, and the value of every
 * query parameter whose decoded name {@link isSecretName} says is secret becomes `<redacted>`
 * (`/api/v1/channel/a?%74oken=abc&query=x` → `/api/v1/channel/a?%74oken=<redacted>&query=x`).
 * Parameters are separated by `&` or `;`; a value runs to the next separator, a fragment
 * included. The path and the other parameters are kept as sent. Meant for logs, not the hot path.
 */
export function redactRequestUrl(requested: string): string {
  // A heartbeat's ping key is the capability to report for its job: returned to API users, but
  // not spread into log files (`/ping/<key>/start` → `/ping/<redacted>/start`).
  const url = requested.startsWith("/ping/") ? requested.replace(PING_KEY, `/ping/${REDACTED}`) : requested;
  const start = url.indexOf("?");
  if (start === -1) return url;
  const parts = url.slice(start + 1).split(/([&;])/);
  for (let index = 0; index < parts.length; index += 2) {
    const part = parts[index] ?? "";
    const equals = part.indexOf("=");
    if (equals !== -1 && isSecretName(decodedName(part.slice(0, equals)))) {
      parts[index] = `${part.slice(0, equals + 1)}${REDACTED}`;
    }
  }
  return `${url.slice(0, start + 1)}${parts.join("")}`;
}

/**
 * Fastify's request log fields (its `req` serializer's), with the URL redacted. A type, not an
 * interface: Fastify's serializer type asks for an index signature.
 */
type LoggedRequest = {
  readonly method?: string | undefined;
  readonly url?: string | undefined;
  readonly host?: string | undefined;
  readonly remoteAddress?: string | undefined;
  readonly remotePort?: number | undefined;
};

/** What the `req` serializer reads of a Fastify request. */
interface RequestLike {
  readonly method?: string;
  readonly url?: string;
  readonly host?: string;
  readonly ip?: string;
  readonly socket?: { readonly remotePort?: number };
}

/**
 * pino serializers for request logs: Fastify's own lines carry the request under `req` (its
 * per-request lines, off in Vigie, which writes its own at debug level), logged here with the URL
 * redacted. Fields as Fastify's default `req` serializer has them, but `version`.
 */
export const REQUEST_LOG_SERIALIZERS = {
  req: (request: RequestLike): LoggedRequest => ({
    method: request.method,
    url: typeof request.url === "string" ? redactRequestUrl(request.url) : undefined,
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort,
  }),
} as const;
