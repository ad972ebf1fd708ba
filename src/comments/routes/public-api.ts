/**
 * What the public routes of comments say of themselves in `GET /openapi.json` (docs/api.md): a
 * summary, the body of a posted comment (the validator that checks it), the query parameters
 * (the schemas next to the readers of query.ts) and the schema of each success answer. The
 * schemas of the answers are checked against real answers by test/comments/openapi.test.ts.
 */
import type { RouteDescription } from "../../platform/openapi.js";
import type { JsonSchema } from "../../platform/validation.js";
import { commentBody } from "../comment-validation.js";
import { ARTICLES_QUERY, PAGE_QUERY } from "./query.js";

/** The id of a comment or event: a UUID, lower-case as stored. */
export const UUID_SCHEMA: JsonSchema = {
  type: "string",
  pattern: "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$",
};

/** Milliseconds since the Unix epoch. */
export const TIME_SCHEMA: JsonSchema = { type: "integer", minimum: 0, maximum: Number.MAX_SAFE_INTEGER };

const COMMENT_PROPERTIES = {
  id: UUID_SCHEMA,
  content: { type: "string", minLength: 1, description: "HTML-escaped" },
  author: { type: "string", minLength: 1, description: "HTML-escaped" },
  "author-website": { type: "string", minLength: 1, description: "present only when given" },
  approved: { type: "boolean" },
  timestamp: TIME_SCHEMA,
  parent: { ...UUID_SCHEMA, description: "the comment replied to; absent for a top-level comment" },
} as const;

/** A comment as every route answers it (resources.ts): never the client address. */
export const COMMENT_SCHEMA: JsonSchema = {
  type: "object",
  properties: COMMENT_PROPERTIES,
  required: ["id", "content", "author", "approved", "timestamp"],
  additionalProperties: false,
};

/** A comment of a website's list, with its article. */
export const ARTICLE_COMMENT_SCHEMA: JsonSchema = {
  type: "object",
  properties: { ...COMMENT_PROPERTIES, article: { type: "string", minLength: 1 } },
  required: ["id", "content", "author", "approved", "timestamp", "article"],
  additionalProperties: false,
};

/** The answer of a write: `{"message": "Comment added"}`. */
export const MESSAGE_SCHEMA: JsonSchema = {
  type: "object",
  properties: { message: { type: "string" } },
  required: ["message"],
  additionalProperties: false,
};

const CHALLENGE_SCHEMA: JsonSchema = {
  type: "object",
  properties: {
    timestamp: TIME_SCHEMA,
    question: { type: "string", minLength: 1 },
    signature: { type: "string", pattern: "^[0-9a-f]{64}$" },
  },
  required: ["timestamp", "question", "signature"],
  additionalProperties: false,
};

export const CHALLENGE_API: RouteDescription = {
  summary: "issue a challenge to answer when posting a comment (never cached)",
  success: { schema: CHALLENGE_SCHEMA },
  security: "none",
};

export const LIST_API: RouteDescription = {
  summary: "list the approved comments of an article, oldest first: all, or one page with limit or before",
  query: PAGE_QUERY,
  success: [
    { schema: { type: "array", items: COMMENT_SCHEMA } },
    { status: 304, description: "not modified: If-None-Match holds the list's current ETag" },
  ],
  security: "none",
};

export const COUNT_API: RouteDescription = {
  summary: "count the approved comments of each article given as an article parameter",
  query: { article: { schema: ARTICLES_QUERY, required: true } },
  success: { schema: { type: "object", additionalProperties: { type: "integer", minimum: 0 } } },
  security: "none",
};

export const POST_API: RouteDescription = {
  summary: "post a comment with the answer of a challenge of its article",
  body: commentBody,
  example: {
    author: "Ann",
    "author-website": "example.org",
    content: "Nice post",
    answer: "10",
    signature: "5d41402abc4b2a76b9719d911017c5925d41402abc4b2a76b9719d911017c592",
    timestamp: 1_700_000_000_000,
  },
  success: { status: 201, schema: MESSAGE_SCHEMA },
  // 403: an Origin the website does not allow; 429: too many comments from one address.
  errors: [403, 429],
  security: "none",
};

/** A CORS preflight (`OPTIONS`) of the public route at `what`. */
export function preflightApi(what: string): RouteDescription {
  // 403: an Origin the website does not allow.
  return { summary: `CORS preflight of ${what}`, success: { status: 204 }, errors: [403], security: "none" };
}
