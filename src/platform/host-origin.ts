/**
 * Host and origin checks (docs/security.md), what keeps a web page in a browser on the same machine
 * from using a Vigie that listens on loopback: DNS rebinding (a page of `evil.example` whose name
 * now resolves to 127.0.0.1), cross-site form posts and cross-site WebSocket hijacking.
 *
 * - Host: a request whose `Host` is not an IP literal (a rebinding attack needs a name),
 *   `localhost`, the host of `http.public-url` or a name of `http.allowed-hosts` (`*.example.org`
 *   wildcards) is answered 421 `host <host> is not allowed`.
 * - Origin: a request carrying an `Origin` other than its own (scheme and `Host`), the origin of
 *   `http.public-url` or an entry of `http.allowed-origins`, is answered 403 `cross-origin request
 *   from <origin> refused` when its method is not GET, HEAD or OPTIONS, and on every WebSocket
 *   upgrade, unless its route declares CORS for that origin ({@link FastifyContextConfig}
 *   `allowOrigin`). An IP literal is never trusted as an origin for being one. Requests without
 *   `Origin` (curl, cargo, Prometheus: no browser) are not concerned.
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import { ForbiddenError, VigieError } from "./errors.js";
import { isHostName, isIpLiteral, unbracket } from "./hosts.js";

declare module "fastify" {
  interface FastifyContextConfig {
    /**
     * Declares CORS for an origin on this route: true lets a cross-origin request from `origin`
     * through the origin check (the public comment routes, for each website's allowed origins).
     */
    allowOrigin?: (request: FastifyRequest, origin: string) => boolean;
  }
}

/** `vigie.example.org` or `*.example.org`, lower-case, without a final dot. */
export type AllowedHost = string;

/** The rule of an `http.allowed-hosts` entry, worded to follow the key. */
export const ALLOWED_HOST_RULE = "must be a host name such as vigie.example.org, *.example.org, or an IP address";

/**
 * An entry of `http.allowed-hosts`, normalised (lower-case, no final dot), or `undefined` when it is
 * not a host name, a `*.` wildcard of one, or an IP address.
 */
export function parseAllowedHost(entry: string): AllowedHost | undefined {
  const lower = entry.toLowerCase().replace(/\.$/, "");
  if (lower.startsWith("*.")) {
    const name = lower.slice(2);
    return isHostName(name, { underscore: true }) && !isIpLiteral(name) ? lower : undefined;
  }
  return isHostName(lower, { underscore: true }) || isIpLiteral(lower) ? lower : undefined;
}

/** The rule of an `http.allowed-origins` entry, worded to follow the key. */
export const ALLOWED_ORIGIN_RULE =
  "must be an origin scheme://host[:port] such as https://dashboard.example.org, or https://*.example.org for its subdomains (http or https, no path)";

/** `scheme://[*.]host[:port][/]`: what an origin entry may look like before it is parsed. */
const ORIGIN_SHAPE = /^(https?):\/\/(\*\.)?([^/?#@\s]+)\/?$/i;

/**
 * An entry of `http.allowed-origins` serialised as browsers send `Origin` (lower-case host, default
 * port left out, no trailing slash): `https://dashboard.example.org`, `http://127.0.0.1:3000`, or
 * `https://*.example.org`; `undefined` when it is not one.
 */
export function parseAllowedOrigin(entry: string): string | undefined {
  const shape = ORIGIN_SHAPE.exec(entry);
  if (shape === null) return undefined;
  let url: URL;
  try {
    url = new URL(`${shape[1]}://${shape[3]}`);
  } catch {
    return undefined;
  }
  const ip = isIpLiteral(url.hostname);
  if (shape[2] === undefined) return ip || isHostName(url.hostname) ? url.origin : undefined;
  if (ip || !isHostName(url.hostname)) return undefined;
  return `${url.protocol}//*.${url.host}`;
}

/** The rule of `http.public-url`, worded to follow the key. */
export const PUBLIC_URL_RULE =
  "must be an http or https URL such as https://vigie.example.org, without user, query or fragment";

/**
 * `http.public-url` normalised: scheme, lower-case host, the port unless it is the default one, and
 * the path without a trailing slash (`https://example.org/vigie`); `undefined` when it is not an
 * http(s) URL without user, query or fragment.
 */
export function parsePublicUrl(text: string): string | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return undefined;
  }
  const bare = url.username === "" && url.password === "" && url.search === "" && url.hash === "";
  if ((url.protocol !== "http:" && url.protocol !== "https:") || !bare || url.hostname === "") return undefined;
  return `${url.origin}${url.pathname.replace(/\/+$/, "")}`;
}

/** `http.public-url` when the configuration gives none: `http://<http.host>:<http.port>`. */
export function defaultPublicUrl(host: string, port: number): string {
  const bracketed = host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
  return `http://${bracketed}:${port}`;
}

/** What the checks read from the `http` section. */
export interface HostOriginSettings {
  readonly "public-url": string;
  readonly "allowed-hosts": readonly AllowedHost[];
  readonly "allowed-origins": readonly string[];
}

/** Decisions remembered per `Host` value; the memory starts over when full, so no client can grow it. */
const HOST_MEMO_ENTRIES = 1024;

/** The allowed hosts and origins of one server, compiled for the hot path. */
export class HostOriginPolicy {
  readonly #hosts: ReadonlySet<string>;
  readonly #hostSuffixes: readonly string[];
  readonly #origins: ReadonlySet<string>;
  readonly #originWildcards: ReadonlyArray<{ readonly prefix: string; readonly suffix: string; readonly port: string }>;
  #hostMemo = new Map<string, boolean>();

  constructor(settings: HostOriginSettings) {
    const publicUrl = new URL(settings["public-url"]);
    this.#hosts = new Set([
      "localhost",
      publicUrl.hostname.toLowerCase(),
      ...settings["allowed-hosts"].filter((host) => !host.startsWith("*.")),
    ]);
    this.#hostSuffixes = settings["allowed-hosts"].filter((host) => host.startsWith("*.")).map((host) => host.slice(1));
    this.#origins = new Set([
      publicUrl.origin,
      ...settings["allowed-origins"].filter((origin) => !origin.includes("*")),
    ]);
    this.#originWildcards = settings["allowed-origins"]
      .filter((origin) => origin.includes("*"))
      .map((origin) => {
        const url = new URL(origin.replace("*.", ""));
        return { prefix: `${url.protocol}//`, suffix: `.${url.hostname}`, port: url.port };
      });
  }

  /**
   * Whether a `Host` header value (`name[:port]`, `[v6]:port`) names this server: an IP literal,
   * `localhost`, the host of `http.public-url`, or an allowed host (case-insensitive, a final dot
   * ignored).
   */
  allowsHost(host: string): boolean {
    let allowed = this.#hostMemo.get(host);
    if (allowed === undefined) {
      allowed = this.#decideHost(host);
      if (this.#hostMemo.size >= HOST_MEMO_ENTRIES) this.#hostMemo = new Map();
      this.#hostMemo.set(host, allowed);
    }
    return allowed;
  }

  #decideHost(host: string): boolean {
    const name = hostnameOf(host).toLowerCase().replace(/\.$/, "");
    if (isIpLiteral(name)) return true;
    if (this.#hosts.has(name)) return true;
    return this.#hostSuffixes.some((suffix) => name.endsWith(suffix) && name.length > suffix.length);
  }

  /**
   * Whether an `Origin` is trusted for a request: its own origin (`ownOrigin`, scheme and `Host`),
   * the origin of `http.public-url`, or an entry of `http.allowed-origins`. Never for being an IP
   * literal; `null` (sandboxed frames, local files) never is.
   */
  allowsOrigin(origin: string, ownOrigin: string | undefined): boolean {
    let url: URL;
    try {
      url = new URL(origin);
    } catch {
      return false;
    }
    const normalised = url.origin;
    if (normalised === "null") return false;
    if (normalised === ownOrigin || this.#origins.has(normalised)) return true;
    const hostname = url.hostname;
    return this.#originWildcards.some(
      (wildcard) =>
        normalised.startsWith(wildcard.prefix) &&
        url.port === wildcard.port &&
        hostname.endsWith(wildcard.suffix) &&
        hostname.length > wildcard.suffix.length,
    );
  }
}

/** The host name of a `Host` value: `[::1]:8080` → `::1`, `example.org:443` → `example.org`. */
function hostnameOf(host: string): string {
  if (host.startsWith("[")) {
    const end = host.indexOf("]");
    return end === -1 ? host : unbracket(host.slice(0, end + 1));
  }
  const colon = host.indexOf(":");
  // More than one colon without brackets: an IPv6 address as is (not valid in Host, but harmless).
  return colon === -1 || host.indexOf(":", colon + 1) !== -1 ? host : host.slice(0, colon);
}

/** The request's own origin, `<scheme>://<Host>` serialised as a browser would, if it parses. */
function ownOriginOf(request: FastifyRequest): string | undefined {
  try {
    return new URL(`${request.protocol}://${request.host}`).origin;
  } catch {
    return undefined;
  }
}

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/**
 * Installs the checks on every route of `app` (unknown routes included), before any other hook:
 * 421 for a host that is not allowed, 403 for a refused cross-origin request.
 */
export function installHostAndOriginChecks(app: FastifyInstance, policy: HostOriginPolicy): void {
  app.addHook("onRequest", (request, _reply, done) => {
    const host = request.host;
    if (host !== undefined && host !== "" && !policy.allowsHost(host)) {
      done(new VigieError("VIGIE_ERR_MISDIRECTED", `host ${host} is not allowed`));
      return;
    }
    const origin = request.headers.origin;
    if (origin === undefined) {
      done();
      return;
    }
    const upgrade = request.headers.upgrade?.toLowerCase() === "websocket";
    if ((SAFE_METHODS.has(request.method) && !upgrade) || policy.allowsOrigin(origin, ownOriginOf(request))) {
      done();
      return;
    }
    if (request.routeOptions.config?.allowOrigin?.(request, origin) === true) {
      done();
      return;
    }
    done(new ForbiddenError(`cross-origin request from ${origin} refused`));
  });
}
