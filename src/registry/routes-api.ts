/**
 * What the registry's routes (routes.ts) say of themselves in `GET /openapi.json` (docs/api.md):
 * the bodies are the validators the routes check them with, the answers' schemas are written here
 * and checked against real answers by test/registry/openapi.test.ts.
 */
import type { RouteDescription } from "../platform/openapi.js";
import { type JsonSchema, schemaOf } from "../platform/validation.js";
import { CARGO_SCOPES } from "./cargo/scopes.js";
import { newTokenBody, TOKEN_FORMAT } from "./tokens.js";
import { newUserBody, ROLES, userName, userUpdateBody } from "./users.js";

/** `{"ok": true}`, the answer of a change. */
export const OK_SCHEMA: JsonSchema = {
  type: "object",
  properties: { ok: { const: true } },
  required: ["ok"],
  additionalProperties: false,
};

// Patterns rather than `format`, which the checks of the answers do not read.

/** An id: a UUID v4 (RFC 9562 §5.4), lower case. */
const ID: JsonSchema = {
  type: "string",
  pattern: "^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$",
};

/** A time as the APIs write it: RFC 3339 in UTC with milliseconds (src/platform/time.ts). */
export const TIME_SCHEMA: JsonSchema = {
  type: "string",
  pattern: "^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z$",
  description: "RFC 3339, UTC, with milliseconds: 2026-11-22T10:15:02.123Z",
};

/** A user as the API shows it: never its password. */
const USER_SCHEMA: JsonSchema = {
  type: "object",
  properties: {
    id: ID,
    name: { type: "string" },
    description: { type: "string" },
    active: { type: "boolean" },
    role: { type: "string", enum: [...ROLES] },
  },
  required: ["id", "name", "description", "active", "role"],
  additionalProperties: false,
};

/** A token as the API lists it (tokens.ts, `tokenView`): never the token itself. */
const TOKEN_SCHEMA: JsonSchema = {
  type: "object",
  properties: {
    id: ID,
    name: { type: "string" },
    "created-at": TIME_SCHEMA,
    "expires-at": TIME_SCHEMA,
    "last-used-at": { oneOf: [TIME_SCHEMA, { type: "null" }] },
    scopes: { type: "array", items: { type: "string", enum: [...CARGO_SCOPES] } },
    crates: { type: "array", items: { type: "string" } },
  },
  required: ["id", "name", "created-at", "expires-at", "last-used-at"],
  additionalProperties: false,
};

/** `?user=<name>`: another user's tokens, for an admin (read with the validator of user names). */
const USER_QUERY = { user: schemaOf(userName) };

export const CREATE_USER: RouteDescription = {
  summary: "create a user (admin)",
  body: newUserBody,
  example: { name: "alice", description: "on call", password: "correct horse battery", role: "tech", active: true },
  success: { status: 201, schema: OK_SCHEMA },
  errors: [409],
  security: "registry-token",
};

export const LIST_USERS: RouteDescription = {
  summary: "list the users, sorted by name (admin)",
  success: {
    schema: {
      type: "object",
      properties: { users: { type: "array", items: USER_SCHEMA } },
      required: ["users"],
      additionalProperties: false,
    },
  },
  security: "registry-token",
};

export const UPDATE_USER: RouteDescription = {
  summary: "change a user's description, password, role or active flag (role and active: admin)",
  body: userUpdateBody,
  example: { description: "on call on weekends" },
  success: { schema: OK_SCHEMA },
  // 409: the last active admin cannot stop being one.
  errors: [409],
  security: "registry-token",
};

export const DELETE_USER: RouteDescription = {
  summary: "delete a user and its tokens (admin)",
  success: { schema: OK_SCHEMA },
  errors: [409],
  security: "registry-token",
};

export const CREATE_TOKEN: RouteDescription = {
  summary: "create a token with a user's name and password (rate limited)",
  body: newTokenBody,
  example: { name: "laptop ci", user: "alice", password: "correct horse battery", validity: 90 },
  success: {
    status: 201,
    schema: {
      type: "object",
      properties: { token: { type: "string", pattern: TOKEN_FORMAT.source } },
      required: ["token"],
      additionalProperties: false,
    },
  },
  // A wrong password (401), an inactive user (403), a name taken (409), too many failures (429).
  errors: [401, 403, 409, 429],
  security: "none",
};

export const LIST_TOKENS: RouteDescription = {
  summary: "list the caller's tokens, or another user's with ?user= (admin)",
  query: USER_QUERY,
  errors: [404],
  success: {
    schema: {
      type: "object",
      properties: { tokens: { type: "array", items: TOKEN_SCHEMA } },
      required: ["tokens"],
      additionalProperties: false,
    },
  },
  security: "registry-token",
};

export const DELETE_TOKEN: RouteDescription = {
  summary: "delete one of the caller's tokens, or another user's with ?user= (admin)",
  query: USER_QUERY,
  success: { schema: OK_SCHEMA },
  security: "registry-token",
};
