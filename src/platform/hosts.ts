/**
 * Host names and addresses, as every module checks them: healthcheck targets and domains, the
 * website of a comment's author, the names of `http.allowed-hosts`, loopback bind addresses.
 */
import { isIP } from "node:net";

/** Options of {@link isHostName}. */
export interface HostNameOptions {
  /**
   * Accept `_` in labels, as resolvers do for service names (`_dmarc.example.org`); RFC 1123 host
   * names have none. Default false.
   */
  readonly underscore?: boolean;
  /** The fewest labels: 2 for a bare domain such as `example.org`. Default 1. */
  readonly minLabels?: number;
  /** Accept one final dot (`example.org.`, the root). Default false. */
  readonly finalDot?: boolean;
}

const LABEL = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;
const LABEL_WITH_UNDERSCORE = /^[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?$/;

/**
 * Whether `name` is a DNS host name: labels of letters, digits and inner hyphens of at most 63
 * characters, separated by dots, 253 characters in all (RFC 1123 §2.1, RFC 1035 §2.3.4).
 */
export function isHostName(name: string, options: HostNameOptions = {}): boolean {
  const bare = options.finalDot && name.endsWith(".") ? name.slice(0, -1) : name;
  if (bare.length === 0 || bare.length > 253) return false;
  const labels = bare.split(".");
  if (labels.length < (options.minLabels ?? 1)) return false;
  const label = options.underscore ? LABEL_WITH_UNDERSCORE : LABEL;
  return labels.every((part) => label.test(part));
}

/** `[::1]` → `::1`: the address inside the brackets of an IPv6 literal in a URL or `Host`. */
export function unbracket(host: string): string {
  return host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
}

/** Whether `host` is an IPv4 or IPv6 address, bracketed or not (`[::1]`). */
export function isIpLiteral(host: string): boolean {
  return isIP(unbracket(host)) !== 0;
}

/**
 * Whether a bind address only accepts local connections: `localhost`, an IPv4 address in
 * 127.0.0.0/8 (RFC 1122 §3.2.1.3), `::1`, or an IPv4-mapped loopback address (`::ffff:127.0.0.1`).
 */
export function isLoopbackHost(host: string): boolean {
  const lower = unbracket(host).toLowerCase();
  if (lower === "localhost") return true;
  const mapped = lower.startsWith("::ffff:") ? lower.slice("::ffff:".length) : lower;
  if (isIP(mapped) === 4) return mapped.startsWith("127.");
  if (isIP(lower) === 6) return new URL(`http://[${lower}]/`).hostname === "[::1]";
  return false;
}
