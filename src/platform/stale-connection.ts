/**
 * A request that failed because its kept-alive connection was closed under it, before any response:
 * what a client meets when a server closes an idle connection just as a request goes out on it.
 * RFC 9112 §9.3.1 lets a client send an idempotent request (RFC 9110 §9.2.2) again then, as Go's
 * and curl's clients do.
 */
import { errnoCode } from "./errors.js";

/**
 * Whether `error` is such a failure: undici reports `other side closed` (UND_ERR_SOCKET) or the
 * socket's ECONNRESET / EPIPE. A timeout, a refused connection or a bad answer is not one.
 */
export function isStaleConnection(error: unknown): boolean {
  const code = errnoCode(error);
  return code === "UND_ERR_SOCKET" || code === "ECONNRESET" || code === "EPIPE";
}
