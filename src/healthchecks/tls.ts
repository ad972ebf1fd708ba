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
import { readTlsFiles, TLS_FILE_PATHS, type TlsFileLocation } from "./tls-files.js";

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
 * @param files how `key`, `cert` and `cacert` lead to files: paths as given (configuration-file
 *   checks, the default) or names under `healthchecks.tls-directory` (API checks, platform.md §8)
 * @returns success, or `TLS handshake failed on host:port: <reason>` (the TLS or socket error,
 *   `timeout after 2s`, or `cannot read cacert ca.pem: not a regular file` for a TLS file that
 *   cannot be read or is not a regular file of at most 1 MiB), or `the certificate for host:port
 *   expires at <RFC 3339 time>` when the earliest certificate of the chain expires within
 *   expiration-delay
 */
export async function runTls(
  definition: TlsDefinition,
  stop?: AbortSignal,
  files: TlsFileLocation = TLS_FILE_PATHS,
): Promise<Outcome> {
  const where = endpoint(definition.target, definition.port);
  const deadline = startDeadline(definition.timeout.milliseconds, stop);
  const aborted = new Promise<never>((_resolve, reject) => {
    deadline.onAbort(() => reject(deadline.signal.reason));
  });
  aborted.catch(() => {});
  let expiry: number | undefined;
  try {
    // Reading the files is part of the bounded execution (a path may be on a hung mount); each
    // read is bounded in size too, and a FIFO or a device is refused without being read.
    const contents = await Promise.race([readTlsFiles(definition, files), aborted]);
    const name = serverName(definition);
    expiry = await new Promise<number | undefined>((resolve, reject) => {
      const socket = connect({
        host: definition.target,
        port: definition.port,
        rejectUnauthorized: !definition.insecure,
        ...(name === undefined ? {} : { servername: name }),
        ...contents,
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
