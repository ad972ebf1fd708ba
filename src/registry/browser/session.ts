/**
 * What the registry pages' script keeps between pages: the token it signed in with, in
 * `sessionStorage` (never a cookie, so no other site's request ever carries it), and the name of
 * the registry token it created, which sign-out deletes. No DOM here.
 */
import { sessionTokenName } from "../../platform/browser/session.js";

export { parseSession, type Session, TOKEN_VALIDITY_DAYS } from "../../platform/browser/session.js";

/** The `sessionStorage` key of the session. */
export const SESSION_KEY = "vigie-registry-pages";

/** The name of a token created at sign-in: `registry-pages-<16 hex digits>`. */
export function tokenName(random: Uint8Array): string {
  return sessionTokenName("registry-pages-", random);
}

/**
 * Whether a link or form target is one of the registry's pages on this origin, which the script
 * loads itself (with the token) instead of letting the browser navigate without it: the list, and
 * a crate's page (crate names are ASCII letters, digits, `-` and `_`).
 */
export function isRegistryPage(url: URL, origin: string): boolean {
  return url.origin === origin && (url.pathname === "/registry" || /^\/registry\/[A-Za-z0-9_-]+$/.test(url.pathname));
}
