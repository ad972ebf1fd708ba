/**
 * The API description served at `GET /openapi.json` (OpenAPI 3.1, docs/api.md). Every route the
 * server registers is in it, as Fastify registered it; what a route says of itself — summary,
 * body, query parameters, success answers, the errors of its own, credentials, an example — comes
 * from its `config.openapi`, whose body is the same validator that checks the request, so the
 * description cannot drift from what the route accepts. The error statuses the platform gives
 * (an unreadable URL, a refused Host or Origin, a body or a token refused) are derived from the
 * route's shape ({@link errorStatuses}). A route without a description is still listed, with its
 * path parameters and those errors.
 */
import type { FastifyInstance, RouteOptions } from "fastify";
import { type ErrorCode, STATUS_OF } from "./errors.js";
import { type JsonSchema, schemaOf, type Validator } from "./validation.js";

/** A body or an answer of one media type and its schema (a `.crate` upload, protobuf). */
export interface RawBody {
  readonly mediaType: string;
  readonly schema: JsonSchema;
}

/** A request body: the validator of a JSON body (its JSON Schema is described), or a raw body. */
export type BodyDescription = Validator<unknown> | RawBody;

/** A success answer of a route. */
export interface SuccessAnswer {
  /** Its status: 200 when absent. */
  readonly status?: number;
  /** What it means, when more than "success" (`304`: not modified). */
  readonly description?: string;
  /** Its media type (default JSON) and schema; neither for an answer without a body. */
  readonly mediaType?: string;
  readonly schema?: JsonSchema;
  /** Several media types, replacing `mediaType` and `schema` (OTLP answers in the request's encoding). */
  readonly content?: readonly RawBody[];
}

/** A query parameter (or request header) the route needs, or that has more to say than its schema. */
export interface QueryParameter {
  readonly schema: JsonSchema;
  /** Whether the route refuses a request without it (400). */
  readonly required?: boolean;
}

/** The statuses a route may list in `errors`: those of the error catalogue (src/platform/errors.ts). */
export type ErrorStatus = (typeof STATUS_OF)[ErrorCode];

/** What a route says of itself in the API description, in its route options' `config.openapi`. */
export interface RouteDescription {
  /** One line: what the route does. */
  readonly summary: string;
  /** The request body, or its media types (OTLP: JSON or protobuf), the first one's example. */
  readonly body?: BodyDescription | readonly BodyDescription[];
  /** An example request body, as a client would send it. */
  readonly example?: unknown;
  /** Query parameters by name: their schema, or `{schema, required}`. */
  readonly query?: Readonly<Record<string, JsonSchema | QueryParameter>>;
  /** Request headers the route reads, by name (`Content-Encoding`), as query parameters are. */
  readonly headers?: Readonly<Record<string, JsonSchema | QueryParameter>>;
  /** The success answer or answers: `200` JSON when absent. */
  readonly success?: SuccessAnswer | readonly SuccessAnswer[];
  /**
   * The error statuses of the route's own that {@link errorStatuses} does not derive: 409 for a
   * conflict, 429 for a rate limit, 503 for what may be unavailable.
   */
  readonly errors?: readonly ErrorStatus[];
  /** The credentials the route asks for; absent when it depends on the configuration. */
  readonly security?: "registry-token" | "admin-token" | "none";
}

declare module "fastify" {
  interface FastifyContextConfig {
    /** The route's entry in `GET /openapi.json`. */
    openapi?: RouteDescription;
  }
}

/** A route as registered, with its description. */
export interface DescribedRoute {
  readonly method: string;
  readonly url: string;
  readonly description: RouteDescription | undefined;
}

/** Collects the routes `app` registers from now on (HEAD routes Fastify adds excluded). */
export function collectRoutes(app: FastifyInstance): DescribedRoute[] {
  const routes: DescribedRoute[] = [];
  app.addHook("onRoute", (route: RouteOptions) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const description = route.config?.openapi;
    for (const method of methods) if (method !== "HEAD") routes.push({ method, url: route.url, description });
  });
  return routes;
}

/** `/api/v1/stream/:name` → `/api/v1/stream/{name}`; a trailing `*` (the Cargo index) → `{path}`. */
export function openApiPath(url: string): string {
  return url.replace(/:([A-Za-z0-9_]+)/g, "{$1}").replace(/\*$/, "{path}");
}

function pathParameters(path: string): object[] {
  return [...path.matchAll(/\{([A-Za-z0-9_]+)\}/g)].map(([, name]) => ({
    name,
    in: "path",
    required: true,
    schema: { type: "string" },
  }));
}

/** `Array.isArray`, narrowing a `readonly` list too. */
function isList<T>(value: T | readonly T[]): value is readonly T[] {
  return Array.isArray(value);
}

function isQueryParameter(value: JsonSchema | QueryParameter): value is QueryParameter {
  const { schema } = value;
  return (
    typeof schema === "object" &&
    schema !== null &&
    Object.keys(value).every((key) => key === "schema" || key === "required")
  );
}

function parametersIn(
  place: "query" | "header",
  parameters: Readonly<Record<string, JsonSchema | QueryParameter>> | undefined,
): object[] {
  return Object.entries(parameters ?? {}).map(([name, value]) => {
    const { schema, required = false } = isQueryParameter(value) ? value : { schema: value };
    return { name, in: place, ...(required ? { required: true } : {}), schema };
  });
}

/** Cargo's routes answer errors in Cargo's format; every other route in Vigie's. */
function isCargoRoute(url: string): boolean {
  return url.startsWith("/api/v1/crates") || url === "/me";
}

function bodiesOf(description: RouteDescription | undefined): readonly BodyDescription[] {
  const body = description?.body;
  if (body === undefined) return [];
  return isList(body) ? body : [body];
}

function requestBody(description: RouteDescription): object | undefined {
  const bodies = bodiesOf(description);
  if (bodies.length === 0) return undefined;
  const { example } = description;
  const content = Object.fromEntries(
    bodies.map((body, index) => {
      const [mediaType, schema] =
        typeof body === "function" ? ["application/json", schemaOf(body)] : [body.mediaType, body.schema];
      return [mediaType, { schema, ...(example === undefined || index > 0 ? {} : { example }) }];
    }),
  );
  return { required: true, content };
}

function successesOf(description: RouteDescription): readonly SuccessAnswer[] {
  const { success } = description;
  if (success === undefined) return [{}];
  return isList(success) ? success : [success];
}

/** Whether a route answers a WebSocket upgrade (its success is a 101). */
function isWebSocket(description: RouteDescription | undefined): boolean {
  return description !== undefined && successesOf(description).some((answer) => answer.status === 101);
}

function successResponses(description: RouteDescription | undefined): Record<string, object> {
  // A route that does not describe its success yet: any 2xx, of unknown shape.
  if (description === undefined) return { "2XX": { description: "success" } };
  const responses: Record<string, object> = {};
  for (const answer of successesOf(description)) {
    const content =
      answer.content ??
      (answer.schema === undefined && answer.mediaType === undefined
        ? []
        : [{ mediaType: answer.mediaType ?? "application/json", schema: answer.schema ?? {} }]);
    responses[String(answer.status ?? 200)] = {
      description: answer.description ?? "success",
      ...(content.length === 0
        ? {}
        : { content: Object.fromEntries(content.map(({ mediaType, schema }) => [mediaType, { schema }])) }),
    };
  }
  return responses;
}

/** Where an error status comes from: the platform's checks (always Vigie's format) or the route. */
type ErrorSource = "platform" | "route";

const SAFE_METHODS: ReadonlySet<string> = new Set(["GET", "HEAD", "OPTIONS"]);
/** The methods whose request body Fastify never parses. */
const BODILESS_METHODS: ReadonlySet<string> = new Set(["GET", "HEAD"]);

/**
 * The error statuses a route may answer, sorted, each with where it comes from (docs/api.md):
 * - every route: 400 for a URL the router cannot read (or a request that is not HTTP), 408 for a
 *   request not received in time, 421 for a `Host` the server does not answer to, 431 for headers
 *   over what the HTTP server reads;
 * - with path parameters: 404 (nothing of that name, or a segment that makes the path another
 *   one) and 414 (a segment longer than the router reads);
 * - any method but GET and HEAD, whose body is parsed whether the route reads one or not: 400 (not
 *   valid), 413 (over the limit), 415 (another media type), and 403 for a cross-origin request from
 *   a browser (also on a WebSocket upgrade);
 * - with query parameters: 400 for one that breaks its rule;
 * - asking for a token (`security` absent: with `security.require-token`): 401 and 403;
 * - a WebSocket route: 426 for a GET without an upgrade;
 * - and the statuses the route lists in `errors`.
 */
export function errorStatuses(
  method: string,
  path: string,
  description: RouteDescription | undefined,
): Map<number, Set<ErrorSource>> {
  const statuses = new Map<number, Set<ErrorSource>>();
  const add = (source: ErrorSource, ...codes: readonly number[]) => {
    for (const code of codes) statuses.set(code, (statuses.get(code) ?? new Set<ErrorSource>()).add(source));
  };
  add("platform", 400, 408, 421, 431);
  const webSocket = isWebSocket(description);
  if (/\{[A-Za-z0-9_]+\}/.test(path)) {
    add("platform", 404, 414);
    add("route", 404);
  }
  if (!BODILESS_METHODS.has(method)) add("route", 400, 413, 415);
  if (!SAFE_METHODS.has(method) || webSocket) add("platform", 403);
  if (Object.keys(description?.query ?? {}).length > 0) add("route", 400);
  if (description?.security !== "none") add("route", 401, 403);
  if (webSocket) add("route", 426);
  add("route", ...(description?.errors ?? []));
  return new Map([...statuses].sort(([a], [b]) => a - b));
}

/** What each error status means, as the description of its answer. */
const ERROR_MEANINGS: Readonly<Record<ErrorStatus, string>> = {
  400: "an invalid request: the sentence names the field, query parameter or rule (also a URL that cannot be read)",
  401: "a token is missing, invalid or expired",
  403: "refused: the token's user may not do this, or a cross-origin request from a browser",
  404: "nothing of that name",
  405: "another method: Allow lists those of the path",
  408: "the request was not received within the server's timeouts",
  409: "a conflict with what exists",
  413: "the body is over its limit, which the sentence names",
  414: "a path segment is longer than the router reads",
  415: "a body of another media type",
  421: "a Host this server does not answer to",
  426: "a WebSocket upgrade is needed",
  429: "too many requests: retry after Retry-After seconds",
  431: "request header fields over what the HTTP server reads",
  500: "an unexpected error: the sentence gives the request id of the log",
  503: "unavailable for now: the database, a stream's owner in a cluster, or room for another client",
};

/** The headers of an error answer of `status`: its code, and what a client needs to retry. */
function errorHeaders(status: number): Record<string, object> {
  const codes = Object.entries(STATUS_OF)
    .filter(([, code]) => code === status)
    .map(([name]) => name);
  const headers: Record<string, object> =
    codes.length === 0
      ? {}
      : {
          "Vigie-Error": {
            description: "the stable code of the error (docs/api.md)",
            required: true,
            schema: { type: "string", enum: codes },
          },
        };
  if (status === 429) headers["Retry-After"] = { description: "seconds", schema: { type: "integer", minimum: 0 } };
  if (status === 426) headers.Upgrade = { schema: { const: "websocket" } };
  return headers;
}

const MEANINGS: ReadonlyMap<number, string> = new Map(
  Object.entries(ERROR_MEANINGS).map(([status, meaning]): [number, string] => [Number(status), meaning]),
);

const ref = (schema: string) => ({ $ref: `#/components/schemas/${schema}` });

function errorResponse(status: number | "default", url: string, sources: ReadonlySet<ErrorSource>): object {
  const own = isCargoRoute(url) && sources.has("route") ? "CargoError" : "Error";
  const schema =
    own === "CargoError" && sources.has("platform") ? { anyOf: [ref("CargoError"), ref("Error")] } : ref(own);
  const meaning = MEANINGS.get(status === "default" ? 500 : status) ?? "an error";
  return {
    description: status === "default" ? `${meaning} (500)` : meaning,
    headers: errorHeaders(status === "default" ? 500 : status),
    content: { "application/json": { schema } },
  };
}

function operation(route: DescribedRoute, path: string): object {
  const { description } = route;
  const security = description?.security;
  const body = description === undefined ? undefined : requestBody(description);
  const successes = successResponses(description);
  const errors = [...errorStatuses(route.method, path, description)]
    .filter(([status]) => !(String(status) in successes))
    .map(([status, sources]) => [String(status), errorResponse(status, route.url, sources)] as const);
  return {
    operationId: `${route.method.toLowerCase()}${path.replace(/[^A-Za-z0-9]+/g, "_")}`,
    summary: description?.summary ?? `${route.method} ${path}`,
    tags: [tagOf(path)],
    parameters: [
      ...pathParameters(path),
      ...parametersIn("query", description?.query),
      ...parametersIn("header", description?.headers),
    ],
    ...(body === undefined ? {} : { requestBody: body }),
    responses: {
      ...successes,
      ...Object.fromEntries(errors),
      default: errorResponse("default", route.url, new Set(["route"])),
    },
    ...(security === undefined
      ? {}
      : {
          security: security === "none" ? [] : [{ [security === "admin-token" ? "adminToken" : "registryToken"]: [] }],
        }),
  };
}

/** The group of a path in viewers: `/api/v1/stream/…` → `stream`, `/healthz` → `platform`. */
function tagOf(path: string): string {
  const [, first = "", second = ""] = path.split("/");
  if (first === "api") return path.split("/")[3] ?? "api";
  return second === "" && !["status", "healthcheck", "result"].includes(first) ? "platform" : first;
}

/** The OpenAPI 3.1 document of `routes`. */
export function openApiDocument(routes: readonly DescribedRoute[], version: string, publicUrl: string): object {
  const paths: Record<string, Record<string, object>> = {};
  for (const route of routes) {
    const path = openApiPath(route.url);
    paths[path] ??= {};
    paths[path][route.method.toLowerCase()] = operation(route, path);
  }
  return {
    openapi: "3.1.0",
    info: { title: "Vigie", version, description: "Comments, healthchecks, event streams and a registry." },
    servers: [{ url: publicUrl }],
    paths,
    components: {
      securitySchemes: {
        registryToken: { type: "http", scheme: "bearer", description: "a registry API token (docs/registry.md)" },
        adminToken: { type: "http", scheme: "bearer", description: "the comments admin token, or a registry token" },
      },
      schemas: {
        Error: { type: "object", properties: { error: { type: "string" } }, required: ["error"] },
        CargoError: {
          type: "object",
          properties: {
            errors: {
              type: "array",
              items: { type: "object", properties: { detail: { type: "string" } }, required: ["detail"] },
            },
          },
          required: ["errors"],
        },
      },
    },
  };
}

/**
 * Serves `GET /openapi.json`: the document of every route `routes` holds once the server is ready
 * (built at the first request, then kept: routes do not change while the server runs).
 */
export function openApiRoute(
  app: FastifyInstance,
  routes: readonly DescribedRoute[],
  version: string,
  publicUrl: string,
) {
  let document: object | undefined;
  app.get(
    "/openapi.json",
    { config: { openapi: { summary: "this API description (OpenAPI 3.1)", security: "none" } } },
    async () => {
      document ??= openApiDocument(routes, version, publicUrl);
      return document;
    },
  );
}
