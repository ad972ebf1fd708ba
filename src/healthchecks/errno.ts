/** The code of a failed system call or of a driver error, as failure messages and retries read it. */

/**
 * The `code` of an error (`ENOENT`, `ECONNREFUSED`, undici's `UND_ERR_SOCKET`, PostgreSQL's
 * SQLSTATE `40P01`), or undefined when it has no string code.
 */
export function errorCode(error: unknown): string | undefined {
  if (typeof error !== "object" || error === null || !("code" in error)) return undefined;
  return typeof error.code === "string" ? error.code : undefined;
}
