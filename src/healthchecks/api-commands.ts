/**
 * Whether command checks may be created through the API (healthchecks.md §5): a check that runs an
 * executable is only safe to accept from callers that are either local or authenticated.
 */
import { isIP } from "node:net";

/** `healthchecks.allow-api-commands`: `auto`, or a fixed answer. */
export type AllowApiCommands = "auto" | boolean;

/**
 * Whether a bind address only accepts local connections: `localhost`, an IPv4 address in
 * 127.0.0.0/8 (RFC 1122 §3.2.1.3), `::1`, or an IPv4-mapped loopback address (`::ffff:127.0.0.1`).
 */
export function isLoopbackHost(host: string): boolean {
  const bare = host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
  const lower = bare.toLowerCase();
  if (lower === "localhost") return true;
  const mapped = lower.startsWith("::ffff:") ? lower.slice("::ffff:".length) : lower;
  if (isIP(mapped) === 4) return mapped.startsWith("127.");
  if (isIP(lower) === 6) return new URL(`http://[${lower}]/`).hostname === "[::1]";
  return false;
}

/**
 * Resolves `allow-api-commands`: `auto` is true when the server binds a loopback address or
 * requires registry tokens (`security.require-token`), false otherwise.
 */
export function apiCommandsAllowed(setting: AllowApiCommands, host: string, requireToken: boolean): boolean {
  if (setting !== "auto") return setting;
  return isLoopbackHost(host) || requireToken;
}
