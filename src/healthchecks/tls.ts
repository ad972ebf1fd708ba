/**
 * The tls executor (healthchecks.md §3): a TLS handshake, with the peer's chain and name verified
 * unless insecure, and the earliest expiry of the peer chain compared with expiration-delay. The
 * connection and the handshake are bounded by the check's timeout.
 */
import { isIP } from "node:net";
import { connect, type DetailedPeerCertificate } from "node:tls";
import { startDeadline } from "./deadline.js";
import type { TlsDefinition } from "./definition.js";
import { endpoint, failure, type Outcome, SUCCESS } from "./outcome.js";
import { readTlsFiles } from "./tls-files.js";

/**
 * The earliest `valid_to` of a peer certificate and its issuers as presented by the handshake, in
 * milliseconds since the epoch; `undefined` when the peer sent no certificate.
 */
export function earliestExpiry(certificate: DetailedPeerCertificate): number | undefined {
  let earliest: number | undefined;
  const seen = new Set<DetailedPeerCertificate>();
  let current: DetailedPeerCertificate | undefined = certificate;
  // A self-signed root is its own issuer: stop at the first certificate already seen.
  while (current !== undefined && current.valid_to !== undefined && !seen.has(current)) {
    seen.add(current);
    // OpenSSL prints `Mar  1 12:00:00 2027 GMT`, which Date.parse reads.
    const expiry = Date.parse(current.valid_to);
    if (!Number.isNaN(expiry) && (earliest === undefined || expiry < earliest)) earliest = expiry;
    current = current.issuerCertificate;
  }
  return earliest;
}

/** The name verified (and sent as SNI): server-name, else the target unless it is an IP address. */
function serverName(definition: TlsDefinition): string | undefined {
  if (definition["server-name"] !== undefined) return definition["server-name"];
  // RFC 6066 §3 forbids IP addresses in SNI; Node then verifies the certificate against the IP.
  return isIP(definition.target) === 0 ? definition.target : undefined;
}

/**
 * Executes one tls check. Never throws.
 *
 * @param stop aborted when the module stops; the handshake is abandoned
 * @returns success, or `TLS handshake failed on host:port: <reason>` (the TLS or socket error, or
 *   `timeout after 2s`), or `the certificate for host:port expires at <RFC 3339 time>` when the
 *   earliest certificate of the chain expires within expiration-delay
 */
export async function runTls(definition: TlsDefinition, stop?: AbortSignal): Promise<Outcome> {
  const where = endpoint(definition.target, definition.port);
  const deadline = startDeadline(definition.timeout.milliseconds, stop);
  const aborted = new Promise<never>((_resolve, reject) => {
    deadline.onAbort(() => reject(deadline.signal.reason));
  });
  aborted.catch(() => {});
  let expiry: number | undefined;
  try {
    // Reading the files is part of the bounded execution (a path may name a FIFO or a hung mount).
    const files = await Promise.race([readTlsFiles(definition), aborted]);
    const name = serverName(definition);
    expiry = await new Promise<number | undefined>((resolve, reject) => {
      const socket = connect({
        host: definition.target,
        port: definition.port,
        rejectUnauthorized: !definition.insecure,
        ...(name === undefined ? {} : { servername: name }),
        ...files,
        ...(definition["source-ip"] === undefined ? {} : { localAddress: definition["source-ip"] }),
      });
      deadline.onAbort(() => {
        socket.destroy();
        reject(deadline.signal.reason);
      });
      socket.once("secureConnect", () => {
        const found = earliestExpiry(socket.getPeerCertificate(true));
        socket.destroy();
        resolve(found);
      });
      socket.once("error", (error) => {
        socket.destroy();
        reject(error);
      });
    });
  } catch (error) {
    const reason = deadline.timedOut()
      ? `timeout after ${definition.timeout.text}`
      : deadline.signal.aborted
        ? "the healthchecks module is stopping"
        : (error as Error).message;
    return failure(`TLS handshake failed on ${where}: ${reason}`);
  } finally {
    deadline.clear();
  }
  const delay = definition["expiration-delay"].milliseconds;
  if (delay > 0 && expiry !== undefined && expiry - Date.now() < delay) {
    return failure(`the certificate for ${where} expires at ${new Date(expiry).toISOString()}`);
  }
  return SUCCESS;
}
