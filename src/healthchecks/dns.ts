/**
 * The dns executor (docs/healthchecks.md): the domain resolves through the system resolver, as
 * getaddrinfo(3) does (`/etc/hosts` included, A and AAAA), and the addresses contain every
 * expected IP. Bounded by the check's timeout (default 5s).
 */
import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { errnoCode, errorMessage } from "../platform/errors.js";
import { startDeadline } from "./deadline.js";
import type { DnsDefinition } from "./definition.js";
import { failure, type Outcome, SUCCESS } from "./outcome.js";

/**
 * The canonical text of an IP address, so that `::1` and `0:0:0:0:0:0:0:1` compare equal. IPv6
 * addresses take the WHATWG URL serialisation (RFC 5952 compression); IPv4 stays as is.
 */
export function canonicalIp(address: string): string {
  if (isIP(address) !== 6) return address;
  return new URL(`http://[${address}]/`).hostname.slice(1, -1);
}

/**
 * Executes one dns check. Never throws.
 *
 * @param stop aborted when the module stops; the lookup is abandoned (getaddrinfo itself cannot
 *   be cancelled and finishes in the background)
 * @returns success, or `DNS lookup failed for <domain>: ENOTFOUND` (the resolver's error code, or
 *   `timeout after 5s`), or `expected IPs 10.0.0.3 not found in 10.0.0.1, 10.0.0.2`
 */
export async function runDns(definition: DnsDefinition, stop?: AbortSignal): Promise<Outcome> {
  const deadline = startDeadline(definition.timeout.milliseconds, stop);
  const aborted = new Promise<never>((_resolve, reject) => {
    deadline.onAbort(() => reject(deadline.signal.reason));
  });
  aborted.catch(() => {});
  let addresses: string[];
  try {
    const found = await Promise.race([lookup(definition.domain, { all: true }), aborted]);
    addresses = [...new Set(found.map((entry) => canonicalIp(entry.address)))];
  } catch (error) {
    const reason = deadline.timedOut()
      ? `timeout after ${definition.timeout.text}`
      : deadline.signal.aborted
        ? "the healthchecks module is stopping"
        : (errnoCode(error) ?? errorMessage(error));
    return failure(`DNS lookup failed for ${definition.domain}: ${reason}`);
  } finally {
    deadline.clear();
  }
  const expected = definition["expected-ips"] ?? [];
  const missing = expected.filter((address) => !addresses.includes(canonicalIp(address)));
  if (missing.length > 0) return failure(`expected IPs ${missing.join(", ")} not found in ${addresses.join(", ")}`);
  return SUCCESS;
}
