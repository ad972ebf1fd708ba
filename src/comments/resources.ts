/**
 * The resources of the comments API, exactly as they are serialised: field names
 * in kebab-case, timestamps in milliseconds since the Unix epoch.
 */

/** A comment as every endpoint returns it. The client address is never part of it. */
export interface Comment {
  /** UUID v4, set by the server. */
  readonly id: string;
  /** HTML-escaped. */
  readonly content: string;
  /** HTML-escaped. */
  readonly author: string;
  /** Present only when given. */
  readonly "author-website"?: string;
  readonly approved: boolean;
  /** Creation time, milliseconds since the Unix epoch. */
  readonly timestamp: number;
  /** The id of the comment this one replies to; absent for a top-level comment. */
  readonly parent?: string;
  /** `true` when a spam check held the comment (admin answers only); absent otherwise. */
  readonly spam?: true;
}

/** The event of a stored comment. */
export const NEW_COMMENT = "new-comment";
/** The event of a comment refused as spam by the honeypot: no comment is stored. */
export const SPAM = "spam";
/** The types of events. */
export type CommentEventType = typeof NEW_COMMENT | typeof SPAM;

/** An entry of a website's event log. */
export interface CommentEvent {
  /** UUID v4. */
  readonly id: string;
  /** Milliseconds since the Unix epoch. */
  readonly timestamp: number;
  readonly article: string;
  readonly "comment-id": string;
  readonly type: CommentEventType;
  readonly message: string;
}

/** The message of a `new-comment` event. */
export function newCommentMessage(commentId: string, article: string): string {
  return `New comment ${commentId} on article ${article}`;
}

/** The message of a `spam` event. */
export function spamMessage(article: string, signal: string): string {
  return `Spam refused on article ${article} (${signal})`;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The id of a comment in a path, lower-cased as ids are stored (UUIDs are case-insensitive,
 * RFC 9562 §4), or `undefined` when it is not a UUID and so cannot name a comment.
 */
export function commentIdOf(text: string): string | undefined {
  return UUID.test(text) ? text.toLowerCase() : undefined;
}
