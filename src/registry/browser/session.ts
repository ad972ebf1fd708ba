/**
 * What the registry pages' script keeps between pages: the token it signed in with, in
 * `sessionStorage` (never a cookie, so no other site's request ever carries it), and the name of
 * the registry token it created, which sign-out deletes. No DOM here.
 */

/** The `sessionStorage` key of the session. */
export const SESSION_KEY = "vigie-registry-pages";

/** How long a token created at sign-in lives, in days (`validity` of POST /api/v1/registry/token). */
export const TOKEN_VALIDITY_DAYS = 1;

/** A signed-in session. */
export interface Session {
  readonly token: string;
  /** The user, when the session signed in with a name and password. */
  readonly user?: string;
  /** The registry token the page created (deleted at sign-out); absent for a pasted token. */
  readonly tokenName?: string;
}

/** The name of a token created at sign-in: `registry-pages-<16 hex digits>`. */
export function tokenName(random: Uint8Array): string {
  return `registry-pages-${Array.from(random, (byte) => byte.toString(16).padStart(2, "0")).join("")}`;
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

/**
 * Whether a link or form target is one of the registry's pages on this origin, which the script
 * loads itself (with the token) instead of letting the browser navigate without it: the list, and
 * a crate's page (crate names are ASCII letters, digits, `-` and `_`).
 */
export function isRegistryPage(url: URL, origin: string): boolean {
  return url.origin === origin && (url.pathname === "/registry" || /^\/registry\/[A-Za-z0-9_-]+$/.test(url.pathname));
}
