/**
 * The tls executor (docs/healthchecks.md): a TLS handshake, with the peer's chain and name verified
 * unless insecure, and the earliest expiry of the peer chain compared with expiration-delay. The
 * connection and the handshake are bounded by the check's timeout.
 *
 * With TLS 1.3 (RFC 8446 §4.4.2–4.4.4) the client's handshake is over once it sends its Finished,
 * before the server has judged the client's certificate: a server that refuses it (mutual TLS)
 * answers afterwards, with an alert (`certificate required`, `unknown ca` …) or by closing the
 * connection. So after a TLS 1.3 handshake, and after any handshake in which the check presented a
 * client certificate (a server may judge it only once its handshake is done), the check waits for
 * the server's first word: a session ticket (RFC 8446 §4.6.1, sent once the server accepts the
 * client) or data mean success; an alert, a reset, or a close while a client certificate was
 * presented mean failure; silence means success after {@link postHandshakeWaitMs}.
 */
import { isIP } from "node:net";
import { performance } from "node:perf_hooks";
import { connect, type DetailedPeerCertificate, type TLSSocket } from "node:tls";
import { errorMessage } from "../platform/errors.js";
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

/** The shortest wait for the server's verdict after a handshake that needs one, in milliseconds. */
export const POST_HANDSHAKE_MIN_WAIT_MS = 250;

/**
 * How long a check waits, after a TLS 1.3 handshake or one with a client certificate, for the
 * server's first word when none came yet: twice the handshake's duration (which took about one round trip, and an alert needs about
 * half of one plus the server's verification), at least {@link POST_HANDSHAKE_MIN_WAIT_MS} (250
 * ms) for jitter, and never past the check's timeout. A server that accepts and says nothing (no
 * session ticket, no data) thus costs the check this wait, not its whole timeout; one that sends a
 * ticket at once (OpenSSL-based servers and Node.js do by default) answers within a round trip.
 *
 * @param handshakeMs milliseconds from the start of the connection to the end of the handshake
 * @param remainingMs milliseconds left before the check's timeout
 * @returns milliseconds, at least 0
 */
export function postHandshakeWaitMs(handshakeMs: number, remainingMs: number): number {
  return Math.max(0, Math.min(remainingMs, Math.max(POST_HANDSHAKE_MIN_WAIT_MS, 2 * handshakeMs)));
}

/**
 * Resolves once the server has shown it accepted a finished handshake — a session ticket or data,
 * or nothing for `waitMs` — and rejects, naming the refusal, on an alert, a reset, or (when the
 * client presented a certificate) a close before any ticket or data: a Node.js server refusing a
 * client certificate that does not verify closes the connection without an alert.
 *
 * @param presented whether the client sent a certificate of its own
 */
function serverVerdict(socket: TLSSocket, waitMs: number, presented: boolean): Promise<void> {
  return new Promise((resolve, reject) => {
    const settle = (error?: Error) => {
      clearTimeout(timer);
      if (error === undefined) resolve();
      else reject(new Error(`refused by the server after the handshake: ${error.message}`));
    };
    const timer = setTimeout(settle, waitMs);
    socket.once("session", () => settle());
    socket.once("data", () => settle());
    socket.once("end", () =>
      settle(presented ? new Error("it closed the connection without accepting the client certificate") : undefined),
    );
    socket.once("error", settle);
    // Reading is what makes OpenSSL process what the server sent (tickets, alerts).
    socket.resume();
  });
}

/**
 * Executes one tls check. Never throws.
 *
 * @param stop aborted when the module stops; the handshake is abandoned
 * @param files how `key`, `cert` and `cacert` lead to files: paths as given (configuration-file
 *   checks, the default) or names under `healthchecks.tls-directory` (API checks, docs/security.md)
 * @returns success, or `TLS handshake failed on host:port: <reason>` (the TLS or socket error;
 *   `refused by the server after the handshake: … tlsv13 alert certificate required` when a TLS 1.3
 *   server refuses the client certificate; `timeout after 2s`; or `cannot read cacert ca.pem: not a
 *   regular file` for a TLS file that
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
  const begun = performance.now();
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
    const started = performance.now();
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
      const onError = (error: Error) => {
        socket.destroy();
        reject(error);
      };
      socket.once("error", onError);
      socket.once("secureConnect", () => {
        const found = earliestExpiry(socket.getPeerCertificate(true));
        const presented = definition.cert !== undefined;
        // Before TLS 1.3 the server's Finished follows its verdict, unless it judges the client's
        // certificate after the handshake (Node.js servers do): waiting matters with a certificate only.
        if (socket.getProtocol() !== "TLSv1.3" && !presented) {
          socket.destroy();
          resolve(found);
          return;
        }
        socket.off("error", onError);
        const now = performance.now();
        // 1 ms short of the timeout, so that the deadline does not fail a handshake that succeeded.
        const remaining = definition.timeout.milliseconds - (now - begun) - 1;
        void serverVerdict(socket, postHandshakeWaitMs(now - started, remaining), presented)
          .then(() => resolve(found), reject)
          .finally(() => socket.destroy());
      });
    });
  } catch (error) {
    const reason = deadline.timedOut()
      ? `timeout after ${definition.timeout.text}`
      : deadline.signal.aborted
        ? "the healthchecks module is stopping"
        : errorMessage(error);
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
