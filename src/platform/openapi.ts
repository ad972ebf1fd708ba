/**
 * The API description served at `GET /openapi.json` (OpenAPI 3.1, docs/api.md). Every route the
 * server registers is in it, as Fastify registered it; what a route says of itself — summary,
 * body, query parameters, success answer, credentials, an example — comes from its
 * `config.openapi`, whose body is the same validator that checks the request, so the description
 * cannot drift from what the route accepts. A route without a description is still listed, with
 * its path parameters and the error answer every route may give.
 */
import type { FastifyInstance, RouteOptions } from "fastify";
import { type JsonSchema, schemaOf, type Validator } from "./validation.js";

/** A body of another media type than JSON (a `.crate` upload, protobuf). */
export interface RawBody {
  readonly mediaType: string;
  readonly schema: JsonSchema;
}

/** What a route says of itself in the API description, in its route options' `config.openapi`. */
export interface RouteDescription {
  /** One line: what the route does. */
  readonly summary: string;
  /** The validator of a JSON request body (its JSON Schema is described), or a raw body. */
  readonly body?: Validator<unknown> | RawBody;
  /** An example request body, as a client would send it. */
  readonly example?: unknown;
  /** Query parameters by name, with their schema. */
  readonly query?: Readonly<Record<string, JsonSchema>>;
  /** The success answer: status (default 200), media type (default JSON) and schema. */
  readonly success?: { readonly status?: number; readonly mediaType?: string; readonly schema?: JsonSchema };
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

/** Cargo's routes answer errors in Cargo's format; every other route in Vigie's. */
function errorSchemaOf(url: string): string {
  return url.startsWith("/api/v1/crates") || url === "/me" ? "CargoError" : "Error";
}

function requestBody(description: RouteDescription): object | undefined {
  const { body, example } = description;
  if (body === undefined) return undefined;
  const [mediaType, schema] =
    typeof body === "function" ? ["application/json", schemaOf(body)] : [body.mediaType, body.schema];
  return { required: true, content: { [mediaType]: { schema, ...(example === undefined ? {} : { example }) } } };
}

function operation(route: DescribedRoute, path: string): object {
  const { description } = route;
  const errorResponse = {
    description: "an error: the status and the Vigie-Error header say which (docs/api.md)",
    content: { "application/json": { schema: { $ref: `#/components/schemas/${errorSchemaOf(route.url)}` } } },
  };
  const success = description?.success;
  const security = description?.security;
  const query = Object.entries(description?.query ?? {}).map(([name, schema]) => ({ name, in: "query", schema }));
  const body = description === undefined ? undefined : requestBody(description);
  return {
    operationId: `${route.method.toLowerCase()}${path.replace(/[^A-Za-z0-9]+/g, "_")}`,
    summary: description?.summary ?? `${route.method} ${path}`,
    tags: [tagOf(path)],
    parameters: [...pathParameters(path), ...query],
    ...(body === undefined ? {} : { requestBody: body }),
    responses: {
      // A route that does not describe its success yet: any 2xx, of unknown shape.
      [description === undefined ? "2XX" : String(success?.status ?? 200)]: {
        description: "success",
        ...(success?.schema === undefined && success?.mediaType === undefined
          ? {}
          : { content: { [success.mediaType ?? "application/json"]: { schema: success.schema ?? {} } } }),
      },
      default: errorResponse,
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
