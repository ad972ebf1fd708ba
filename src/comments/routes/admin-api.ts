/**
 * What the admin routes of comments say of themselves in `GET /openapi.json` (docs/api.md): a
 * summary, the query parameters of the website list and the schema of each success answer. Every
 * one needs the comments admin token (or a registry token of an admin user), whatever the
 * configuration. test/comments/openapi.test.ts checks the schemas against real answers.
 */
import type { RouteDescription } from "../../platform/openapi.js";
import type { JsonSchema } from "../../platform/validation.js";
import { NEW_COMMENT, SPAM } from "../resources.js";
import { ARTICLE_COMMENT_SCHEMA, COMMENT_SCHEMA, MESSAGE_SCHEMA, TIME_SCHEMA, UUID_SCHEMA } from "./public-api.js";
import { APPROVED_QUERY, PAGE_QUERY } from "./query.js";

/** An entry of a website's event log (resources.ts). */
const EVENT_SCHEMA: JsonSchema = {
  type: "object",
  properties: {
    id: UUID_SCHEMA,
    timestamp: TIME_SCHEMA,
    article: { type: "string", minLength: 1 },
    "comment-id": UUID_SCHEMA,
    type: { enum: [NEW_COMMENT, SPAM] },
    message: { type: "string" },
  },
  required: ["id", "timestamp", "article", "comment-id", "type", "message"],
  additionalProperties: false,
};

/** Adds the admin-only `spam` flag (present and true only when a spam check held the comment). */
function withSpam(schema: JsonSchema): JsonSchema {
  const properties = (schema as { properties: Record<string, JsonSchema> }).properties;
  return { ...schema, properties: { ...properties, spam: { const: true } } };
}

const ADMIN_COMMENT_SCHEMA = withSpam(COMMENT_SCHEMA);
const ADMIN_ARTICLE_COMMENT_SCHEMA = withSpam(ARTICLE_COMMENT_SCHEMA);
const COMMENTS = { type: "array", items: ADMIN_COMMENT_SCHEMA } as const;
const EVENTS = { type: "array", items: EVENT_SCHEMA } as const;

/** An admin route: summary and success schema (status 200, JSON), admin token. */
function adminApi(summary: string, schema: JsonSchema, query?: RouteDescription["query"]): RouteDescription {
  return { summary, ...(query === undefined ? {} : { query }), success: { schema }, security: "admin-token" };
}

export const WEBSITES_API = adminApi(
  "list the websites to moderate: the configured ones, or in open mode those that hold comments",
  {
    type: "object",
    properties: { websites: { type: "array", items: { type: "string", minLength: 1 } } },
    required: ["websites"],
    additionalProperties: false,
  },
);

export const WEBSITE_COMMENTS_API = adminApi(
  "list one page of a website's comments across its articles, newest first, approved or pending",
  { type: "array", items: ADMIN_ARTICLE_COMMENT_SCHEMA },
  { approved: APPROVED_QUERY, ...PAGE_QUERY },
);

export const ARTICLE_COMMENTS_API = adminApi(
  "list every comment of an article, pending ones too, oldest first",
  COMMENTS,
);

export const DELETE_ARTICLE_API = adminApi("delete every comment of an article", MESSAGE_SCHEMA);

export const COMMENT_API = adminApi("read one comment, approved or pending", ADMIN_COMMENT_SCHEMA);

export const APPROVE_API = adminApi("approve a comment: the public list shows it", MESSAGE_SCHEMA);

export const DELETE_COMMENT_API = adminApi("delete one comment", MESSAGE_SCHEMA);

export const EVENTS_API = adminApi("read the event log of a website (new comments), oldest first", EVENTS);

export const DELETE_EVENTS_API = adminApi("clear the event log of a website, answering the events removed", EVENTS);
