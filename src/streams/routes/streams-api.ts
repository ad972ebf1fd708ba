/**
 * What the stream and index routes say of themselves in `GET /openapi.json` (docs/api.md): their
 * bodies are the validators the routes check them with; the answers' schemas are checked against
 * real answers by test/streams/openapi.test.ts (the push route's is in push.ts, beside its body). No `security`: every route needs a token only
 * with `security.require-token`.
 */
import type { RouteDescription } from "../../platform/openapi.js";
import type { JsonSchema } from "../../platform/validation.js";
import { base64EdnSchema, searchBody, streamBody } from "./where-query.js";

const base64 = (text: string) => Buffer.from(text, "utf8").toString("base64");

/** `{"message": "..."}`, the answer of a change. */
export const MESSAGE: JsonSchema = {
  type: "object",
  properties: { message: { type: "string" } },
  required: ["message"],
  additionalProperties: false,
};

/** An index's clock: the largest event time its `index` actions saw, 0 before the first. */
const CURRENT_TIME: JsonSchema = {
  type: "object",
  properties: { "current-time": { type: "number", minimum: 0 } },
  required: ["current-time"],
  additionalProperties: false,
};

export const createStream: RouteDescription = {
  summary: "add or replace a stream from its EDN configuration (persisted with :persist true)",
  body: streamBody,
  example: { config: base64("{:actions {:action :index :params [[:host :service]]} :default true}") },
  success: { status: 201, schema: MESSAGE },
  // 409: a stream of the configuration file cannot be replaced; 503: NATS unreachable in a cluster.
  errors: [409, 503],
};

export const listStreams: RouteDescription = {
  summary: "list the names of the running streams",
  success: {
    schema: {
      type: "object",
      properties: { streams: { type: "array", items: { type: "string" }, uniqueItems: true } },
      required: ["streams"],
      additionalProperties: false,
    },
  },
};

export const readStream: RouteDescription = {
  summary: "read a stream's configuration (base64 EDN, :default filled in) and its index's current time",
  success: {
    schema: {
      type: "object",
      properties: {
        config: base64EdnSchema("the stream's configuration: base64 of an EDN map"),
        "current-time": { type: "number", minimum: 0 },
      },
      required: ["config", "current-time"],
      additionalProperties: false,
    },
  },
};

export const deleteStream: RouteDescription = {
  summary: "remove a stream created through the API (and its persisted file)",
  success: { schema: MESSAGE },
  errors: [409, 503],
};

/** The `query` parameter of a search or a subscription: a base64 where-condition. */
export const WHERE_QUERY: JsonSchema = base64EdnSchema(
  "a where-condition: base64 of EDN text (docs/streams.md), URL-encoded",
);

const SEARCH_ANSWER: JsonSchema = {
  type: "object",
  properties: { events: { type: "array", items: { type: "object" } } },
  required: ["events"],
  additionalProperties: false,
};

export const searchIndexGet: RouteDescription = {
  summary: "search a stream's index with a where-condition (?query=, or a {query} body)",
  query: { query: { schema: WHERE_QUERY, required: true } },
  success: { schema: SEARCH_ANSWER },
  // 503: in a cluster, the instance owning the stream does not answer.
  errors: [503],
};

export const searchIndexPost: RouteDescription = {
  summary: "search a stream's index with a where-condition in the body (or ?query=)",
  body: searchBody,
  example: { query: base64("[:> :metric 50]") },
  query: { query: WHERE_QUERY },
  success: { schema: SEARCH_ANSWER },
  errors: [503],
};

export const indexCurrentTime: RouteDescription = {
  summary: "read the current time of a stream's index",
  success: { schema: CURRENT_TIME },
  errors: [503],
};
