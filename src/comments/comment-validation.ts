/**
 * The fields of a posted comment (docs/comments.md): each rule worded for `field <name>: <rule>`.
 * Unknown fields are ignored. Lengths count Unicode characters (code points), so
 * an emoji counts as one character as a visitor would expect.
 */
import { isHostName } from "../platform/hosts.js";
import {
  boolean,
  described,
  isPlainObject,
  object,
  optional,
  required,
  schemaOf,
  ValidationError,
  type Validator,
} from "../platform/validation.js";
import type { ChallengeResponse } from "./challenge.js";

/** The most characters of `author`, after trimming. */
export const AUTHOR_MAX_LENGTH = 100;
/** The most characters of `author-website`. */
export const AUTHOR_WEBSITE_MAX_LENGTH = 200;
/** The most characters of `content`, after trimming. */
export const CONTENT_MAX_LENGTH = 10_000;
/** The most characters of `answer`. */
export const ANSWER_MAX_LENGTH = 64;

export const AUTHOR_RULE = `must be a non-empty string of at most ${AUTHOR_MAX_LENGTH} characters`;
export const AUTHOR_WEBSITE_RULE = `must be a bare domain (example.org) or an http:// or https:// URL of at most ${AUTHOR_WEBSITE_MAX_LENGTH} characters`;
export const CONTENT_RULE = `must be a non-empty string of at most ${CONTENT_MAX_LENGTH} characters`;
export const ANSWER_RULE = `must be a string of at most ${ANSWER_MAX_LENGTH} characters`;
export const SIGNATURE_RULE = "must be 64 hexadecimal characters";
export const TIMESTAMP_RULE = "must be an integer number of milliseconds (a number or a string of digits)";
/** The most characters of `email` (RFC 5321 §4.5.3.1.3: a path of 256 less its angle brackets). */
export const EMAIL_MAX_LENGTH = 254;
export const EMAIL_RULE = `must be an e-mail address (name@example.org) of at most ${EMAIL_MAX_LENGTH} characters`;
export const PARENT_RULE = "must be the id (a UUID) of an approved comment of this article";
/** PostgreSQL cannot store U+0000 in text; no legitimate form sends it. */
export const NUL_RULE = "must not contain NUL characters";

/** A posted comment, checked and normalised (author and content trimmed, not yet escaped). */
export interface CommentFields extends ChallengeResponse {
  readonly author: string;
  /** As given; `undefined` when absent, `null` or blank. */
  readonly authorWebsite: string | undefined;
  readonly content: string;
  /** The id of the comment answered, lower-cased; `undefined` for a top-level comment. */
  readonly parent: string | undefined;
  /** The commenter's address, stored and never shown; `undefined` when absent or blank. */
  readonly email: string | undefined;
  /** Whether the commenter asks to be told of replies (default false). */
  readonly notifyReplies: boolean;
  /** Whether the hidden `homepage` field (a honeypot people never see) holds anything. */
  readonly honeypot: boolean;
}

function codePoints(text: string): number {
  let count = 0;
  for (const _ of text) count++;
  return count;
}

/**
 * A string of 1 to `max` characters after trimming; returns the trimmed string. Its schema says
 * "at most `max` characters with at least one that is not white space"; the validator counts after
 * trimming, so it also takes a longer text padded with spaces.
 */
function trimmedText(max: number, rule: string): Validator<string> {
  return described(
    (value, path) => {
      if (typeof value !== "string") throw new ValidationError(path, rule, value);
      const text = value.trim();
      const length = codePoints(text);
      if (length < 1 || length > max) throw new ValidationError(path, rule, value);
      if (text.includes("\u0000")) throw new ValidationError(path, NUL_RULE);
      return text;
    },
    { type: "string", minLength: 1, maxLength: max, pattern: "^[^\\u0000]*\\S[^\\u0000]*$" },
  );
}

/**
 * The characters RFC 3986 allows in a URI. Refusing the others (spaces, quotes, `<`, `>`) keeps a
 * stored address harmless in an `href` even for a careless client.
 */
const URI_CHARACTERS = /^[A-Za-z0-9\-._~:/?#[\]@!$&'()*+,;=%]+$/;

/**
 * Whether `text` (trimmed, not blank) is an `author-website` the API accepts: a bare domain or an
 * http(s) URL with a host, of at most 200 characters of RFC 3986. The import uses it too.
 */
export function isAcceptableAuthorWebsite(text: string): boolean {
  if (text.length > AUTHOR_WEBSITE_MAX_LENGTH || !URI_CHARACTERS.test(text)) return false;
  // A bare domain: at least two labels (`example.org`), no scheme, port or path.
  if (isHostName(text, { minLabels: 2 })) return true;
  if (!/^https?:\/\//i.test(text)) return false;
  try {
    const url = new URL(text);
    return (url.protocol === "http:" || url.protocol === "https:") && url.hostname !== "";
  } catch {
    return false;
  }
}

/**
 * `author-website`: a bare domain or an `http://` / `https://` URL with a host;
 * any other scheme (`javascript:`, `ftp://`) is refused. A blank string counts as absent, as an
 * empty form field would send it. Returned as given (trimmed), not normalised.
 */
const authorWebsite: Validator<string | undefined> = (value, path) => {
  if (typeof value !== "string") throw new ValidationError(path, AUTHOR_WEBSITE_RULE, value);
  const text = value.trim();
  if (text === "") return undefined;
  if (isAcceptableAuthorWebsite(text)) return text;
  throw new ValidationError(path, AUTHOR_WEBSITE_RULE, value);
};

/** Absent, `null` or blank: no website; its schema, for the API description. */
const AUTHOR_WEBSITE_SCHEMA = {
  type: ["string", "null"],
  maxLength: AUTHOR_WEBSITE_MAX_LENGTH,
  description: "a bare domain (example.org) or an http:// or https:// URL; blank or null for none",
};

/**
 * A sane address: one `@`, a local part and a domain of at least two labels, no white space, no
 * characters that would need quoting in a header (`<>()[],;:\"`), at most 254 characters. Not the
 * whole of RFC 5322 (quoted local parts, address literals), which no comment form needs.
 */
const EMAIL =
  /^[^\s@<>()[\],;:\\"\p{Cc}]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)+$/u;

/** Whether `text` is an e-mail address {@link email} accepts (the import uses it too). */
export function isEmailAddress(text: string): boolean {
  return text.length <= EMAIL_MAX_LENGTH && EMAIL.test(text);
}

/** `email`: absent, `null` or blank for none; otherwise an address as {@link isEmailAddress}. */
const email: Validator<string | undefined> = described(
  (value, path) => {
    if (value === null) return undefined;
    // The address is not kept in the error: it is never echoed, nor logged.
    if (typeof value !== "string") throw new ValidationError(path, EMAIL_RULE);
    const text = value.trim();
    if (text === "") return undefined;
    if (!isEmailAddress(text)) throw new ValidationError(path, EMAIL_RULE);
    return text;
  },
  { type: ["string", "null"], maxLength: EMAIL_MAX_LENGTH, description: "never returned; blank or null for none" },
);

const UUID_TEXT = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

/** `parent`: absent or `null` for a top-level comment, else a UUID (lower-cased, as ids are stored). */
const parent: Validator<string | undefined> = described(
  (value, path) => {
    if (value === null) return undefined;
    if (typeof value !== "string" || !UUID_TEXT.test(value)) throw new ValidationError(path, PARENT_RULE, value);
    return value.toLowerCase();
  },
  { type: ["string", "null"], pattern: UUID_TEXT.source },
);

const answer: Validator<string> = described(
  (value, path) => {
    if (typeof value !== "string" || codePoints(value) > ANSWER_MAX_LENGTH) {
      throw new ValidationError(path, ANSWER_RULE, value);
    }
    return value;
  },
  { type: "string", maxLength: ANSWER_MAX_LENGTH },
);

const SIGNATURE = /^[0-9a-fA-F]{64}$/;

/** 64 hex digits, returned lower-cased so that one challenge has one spelling (single use). */
const signature: Validator<string> = described(
  (value, path) => {
    if (typeof value !== "string" || !SIGNATURE.test(value)) throw new ValidationError(path, SIGNATURE_RULE, value);
    return value.toLowerCase();
  },
  { type: "string", pattern: SIGNATURE.source },
);

const TIMESTAMP_DIGITS = /^\d{1,16}$/;

/** Milliseconds as a non-negative safe integer, or a string of digits of one. */
const timestamp: Validator<number> = described(
  (value, path) => {
    const number = typeof value === "string" && TIMESTAMP_DIGITS.test(value) ? Number(value) : value;
    if (typeof number !== "number" || !Number.isSafeInteger(number) || number < 0) {
      throw new ValidationError(path, TIMESTAMP_RULE, value);
    }
    return number;
  },
  {
    oneOf: [
      { type: "integer", minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
      { type: "string", pattern: TIMESTAMP_DIGITS.source },
    ],
  },
);

/**
 * `homepage`: a field the widget hides from people, so anything in it (any type, any value but
 * absent, `null` or blank) was written by a robot. Never refused here: the route answers as if it
 * took the comment.
 */
const homepage: Validator<boolean> = described(
  (value) => !(value === null || (typeof value === "string" && value.trim() === "")),
  { description: "leave empty: the widget hides it from people; filled, the comment is dropped as spam" },
);

const commentObject = object(
  {
    author: required(trimmedText(AUTHOR_MAX_LENGTH, AUTHOR_RULE)),
    "author-website": optional(described(authorWebsite, AUTHOR_WEBSITE_SCHEMA)),
    content: required(trimmedText(CONTENT_MAX_LENGTH, CONTENT_RULE)),
    answer: required(answer),
    signature: required(signature),
    timestamp: required(timestamp),
    parent: optional(parent),
    email: optional(email),
    "notify-replies": optional(boolean()),
    homepage: optional(homepage),
  },
  { unknownKeys: "ignore" },
);

/**
 * The body of `POST /api/v1/comment/<website>/<article>`, checked field by field in the order of
 * the fields documented in docs/comments.md (author, author-website, content, answer, signature,
 * timestamp, parent, email, notify-replies); the route checks with it and the API description shows its schema.
 *
 * @throws ValidationError with the field name as path (`author`), or the given path when the body
 *   is not a JSON object; `fieldError()` turns it into the 400 answer
 */
export const commentBody: Validator<CommentFields> = described((body, path) => {
  if (!isPlainObject(body)) throw new ValidationError(path, "must be a JSON object", body);
  const fields = commentObject(body, path);
  return {
    author: fields.author,
    authorWebsite: fields["author-website"],
    content: fields.content,
    answer: fields.answer,
    signature: fields.signature,
    timestamp: fields.timestamp,
    parent: fields.parent,
    email: fields.email,
    notifyReplies: fields["notify-replies"] ?? false,
    honeypot: fields.homepage ?? false,
  };
}, schemaOf(commentObject));

/** {@link commentBody} of a whole request body. @throws ValidationError */
export function parseCommentFields(body: unknown): CommentFields {
  return commentBody(body, "");
}
