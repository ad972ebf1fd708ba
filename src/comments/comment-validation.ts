/**
 * The fields of a posted comment (docs/comments.md): each rule worded for `field <name>: <rule>`.
 * Unknown fields are ignored. Lengths count Unicode characters (code points), so
 * an emoji counts as one character as a visitor would expect.
 */
import { isHostName } from "../platform/hosts.js";
import {
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
/** PostgreSQL cannot store U+0000 in text; no legitimate form sends it. */
export const NUL_RULE = "must not contain NUL characters";

/** A posted comment, checked and normalised (author and content trimmed, not yet escaped). */
export interface CommentFields extends ChallengeResponse {
  readonly author: string;
  /** As given; `undefined` when absent, `null` or blank. */
  readonly authorWebsite: string | undefined;
  readonly content: string;
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
 * `author-website`: a bare domain or an `http://` / `https://` URL with a host;
 * any other scheme (`javascript:`, `ftp://`) is refused. A blank string counts as absent, as an
 * empty form field would send it. Returned as given (trimmed), not normalised.
 */
const authorWebsite: Validator<string | undefined> = (value, path) => {
  if (typeof value !== "string") throw new ValidationError(path, AUTHOR_WEBSITE_RULE, value);
  const text = value.trim();
  if (text === "") return undefined;
  if (text.length > AUTHOR_WEBSITE_MAX_LENGTH || !URI_CHARACTERS.test(text)) {
    throw new ValidationError(path, AUTHOR_WEBSITE_RULE, value);
  }
  // A bare domain: at least two labels (`example.org`), no scheme, port or path.
  if (isHostName(text, { minLabels: 2 })) return text;
  if (/^https?:\/\//i.test(text)) {
    try {
      const url = new URL(text);
      if ((url.protocol === "http:" || url.protocol === "https:") && url.hostname !== "") return text;
    } catch {
      // not a URL: refused below
    }
  }
  throw new ValidationError(path, AUTHOR_WEBSITE_RULE, value);
};

/** Absent, `null` or blank: no website; its schema, for the API description. */
const AUTHOR_WEBSITE_SCHEMA = {
  type: ["string", "null"],
  maxLength: AUTHOR_WEBSITE_MAX_LENGTH,
  description: "a bare domain (example.org) or an http:// or https:// URL; blank or null for none",
};

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

const commentObject = object(
  {
    author: required(trimmedText(AUTHOR_MAX_LENGTH, AUTHOR_RULE)),
    "author-website": optional(described(authorWebsite, AUTHOR_WEBSITE_SCHEMA)),
    content: required(trimmedText(CONTENT_MAX_LENGTH, CONTENT_RULE)),
    answer: required(answer),
    signature: required(signature),
    timestamp: required(timestamp),
  },
  { unknownKeys: "ignore" },
);

/**
 * The body of `POST /api/v1/comment/<website>/<article>`, checked field by field in the order of
 * the fields documented in docs/api.md (author, author-website, content, answer, signature,
 * timestamp); the route checks with it and the API description shows its schema.
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
  };
}, schemaOf(commentObject));

/** {@link commentBody} of a whole request body. @throws ValidationError */
export function parseCommentFields(body: unknown): CommentFields {
  return commentBody(body, "");
}
