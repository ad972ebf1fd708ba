/**
 * What the pages that sign in with a registry user (the comments moderation page, the private Cargo
 * registry's pages) keep between page loads: the token, in `sessionStorage` (never a cookie, so no
 * other site's request ever carries it), the user, and the name of the registry token the page
 * created, which signing out deletes. No DOM here: the unit tests run it under Node.
 */

/**
 * A signed-in session. `tokenName` is set when the token is a registry token the page created from
 * a user name and password (signing out deletes it); a pasted token has none.
 */
export interface Session {
  readonly token: string;
  /** The user, when the session signed in with a name and password. */
  readonly user?: string;
  readonly tokenName?: string;
}

/** How long a token created at sign-in lives, in days (`validity` of POST /api/v1/registry/token). */
export const TOKEN_VALIDITY_DAYS = 1;

/**
 * The name of the registry token a sign-in creates: `prefix` and 16 hex digits of the random bytes
 * given (8 bytes from `crypto.getRandomValues`), so that two tabs never collide.
 */
export function sessionTokenName(prefix: string, random: Uint8Array): string {
  return `${prefix}${Array.from(random, (byte) => byte.toString(16).padStart(2, "0")).join("")}`;
}

/** The session kept as `text`, or `undefined` when there is none or it is not one. */
export function parseSession(text: string | null): Session | undefined {
  if (text === null) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== "object" || value === null) return undefined;
  const token: unknown = Reflect.get(value, "token");
  const user: unknown = Reflect.get(value, "user");
  const name: unknown = Reflect.get(value, "tokenName");
  if (typeof token !== "string" || token === "") return undefined;
  return {
    token,
    ...(typeof user === "string" ? { user } : {}),
    ...(typeof name === "string" ? { tokenName: name } : {}),
  };
}
