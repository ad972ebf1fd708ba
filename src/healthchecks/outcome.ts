/**
 * What one execution of a healthcheck concludes (docs/healthchecks.md): success, or a failure with
 * a message that says what went wrong (`connection refused`, `timeout after 5s`). Executors never throw; they answer an {@link Outcome}.
 */
import { isIP } from "node:net";

/** Success, or failure with a readable message. */
export interface Outcome {
  readonly success: boolean;
  /** `success`, or the failure message. */
  readonly message: string;
}

/** The outcome of a successful execution. */
export const SUCCESS: Outcome = Object.freeze({ success: true, message: "success" });

/** The outcome of a failed execution. */
export function failure(message: string): Outcome {
  return { success: false, message };
}

/**
 * `host:port` as failure messages name an endpoint; an IPv6 address is bracketed (`[::1]:443`) as
 * in URLs (RFC 3986 §3.2.2) so the port stays readable.
 */
export function endpoint(host: string, port: number): string {
  return isIP(host) === 6 ? `[${host}]:${port}` : `${host}:${port}`;
}
