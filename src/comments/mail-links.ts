/**
 * The signed links of comment e-mail (docs/comments.md, "E-mail"): approve or delete a comment
 * without signing in, and unsubscribe from reply notifications. A token names the action, the
 * comment and its expiry, and carries an HMAC-SHA256 of these with the module's mail key (its own
 * key, not the challenge secret, so that neither can be used for the other). Nothing is stored when
 * a token is issued: a used token is refused because the action checks the comment's state
 * (approve only a pending comment, delete only an existing one), and unsubscribing twice changes
 * nothing.
 */
import { createHmac } from "node:crypto";
import { constantTimeEqual } from "../platform/auth.js";

/** What a link does. */
export type MailAction = "approve" | "delete" | "unsubscribe";

const ACTIONS: ReadonlySet<string> = new Set<MailAction>(["approve", "delete", "unsubscribe"]);

/** How long a moderation link works, in milliseconds: 7 days. */
export const MODERATION_LINK_TTL_MS = 7 * 24 * 3600 * 1000;

/**
 * How long an unsubscribe link works, in milliseconds: 365 days. Longer than moderation links
 * because people unsubscribe from old messages; unsubscribing is harmless when forged, and the
 * signature prevents forging anyway.
 */
export const UNSUBSCRIBE_LINK_TTL_MS = 365 * 24 * 3600 * 1000;

/** The most characters of a token: refused before any parsing when longer. */
export const TOKEN_MAX_LENGTH = 200;

/** What a valid token says. */
export interface MailLink {
  readonly action: MailAction;
  /** The comment's id (a lower-case UUID). */
  readonly commentId: string;
  /** Milliseconds since the Unix epoch after which the link is refused. */
  readonly expiresAt: number;
}

/** Why a token is refused: `invalid` (malformed or badly signed) or `expired`. */
export type LinkRefusal = "invalid" | "expired";

function mac(key: string, payload: string): string {
  return createHmac("sha256", key).update(`vigie-comments-mail\n${payload}`).digest("base64url");
}

/**
 * A token for `link`: `<payload>.<mac>`, both base64url, about 110 characters, safe in a URL.
 * @param key the module's mail key
 */
export function signLink(key: string, link: MailLink): string {
  const payload = Buffer.from(JSON.stringify([link.action, link.commentId, link.expiresAt])).toString("base64url");
  return `${payload}.${mac(key, payload)}`;
}

/** The fields of a decoded payload, or `undefined` when it is not `[action, id, expiry]`. */
function decode(payload: string): MailLink | undefined {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(payload, "base64url").toString("utf8"));
  } catch {
    return undefined;
  }
  if (!Array.isArray(value) || value.length !== 3) return undefined;
  const [action, commentId, expiresAt] = value as unknown[];
  if (typeof action !== "string" || !ACTIONS.has(action)) return undefined;
  if (typeof commentId !== "string" || !/^[0-9a-f-]{36}$/.test(commentId)) return undefined;
  if (typeof expiresAt !== "number" || !Number.isSafeInteger(expiresAt)) return undefined;
  return { action: action as MailAction, commentId, expiresAt };
}

/**
 * Checks a token: its signature first (constant-time), then its expiry.
 * @param now milliseconds since the Unix epoch
 * @returns the link, or why it is refused
 */
export function verifyLink(key: string, token: unknown, now: number): MailLink | LinkRefusal {
  if (typeof token !== "string" || token.length > TOKEN_MAX_LENGTH) return "invalid";
  const dot = token.indexOf(".");
  if (dot <= 0) return "invalid";
  const payload = token.slice(0, dot);
  if (!constantTimeEqual(token.slice(dot + 1), mac(key, payload))) return "invalid";
  const link = decode(payload);
  if (link === undefined) return "invalid";
  return now > link.expiresAt ? "expired" : link;
}
