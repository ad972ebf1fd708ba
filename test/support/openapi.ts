/**
 * Reading a server's `GET /openapi.json` in tests: its operations by method and path, and a check
 * of an answer against the schema the document gives for it (JSON Schema 2020-12, with Ajv).
 */
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import type { FastifyInstance } from "fastify";
import { expect } from "vitest";

/** An operation of the document, as tests read it. */
export interface Operation {
  readonly summary: string;
  readonly parameters?: { name: string; in: string; required?: boolean; schema?: object }[];
  readonly requestBody?: { content: Record<string, { schema: object; example?: unknown }> };
  readonly responses: Record<string, { content?: Record<string, { schema: object }> }>;
  readonly security?: Record<string, string[]>[];
}

/** The document's paths: path → method (lower case) → operation. */
export type Paths = Record<string, Record<string, Operation>>;

/** The paths of `app`'s API description. */
export async function describedPaths(app: FastifyInstance): Promise<Paths> {
  const response = await app.inject({ method: "GET", url: "/openapi.json" });
  expect(response.statusCode).toBe(200);
  return response.json().paths;
}

const ajv = new Ajv2020({ strict: false, allErrors: true });
// ajv-formats is CommonJS: its function is also its own `default`, the one the types know.
addFormats.default(ajv);
/** Compiled schemas by their JSON text: the fuzz checks thousands of answers against a few. */
const compiled = new Map<string, ReturnType<typeof ajv.compile>>();

/**
 * Checks `body` against the JSON schema the operation describes for `status` (or `default`);
 * fails naming the operation and Ajv's errors.
 */
export function expectDescribedAnswer(operation: Operation, status: number, mediaType: string, body: unknown): void {
  const { responses } = operation;
  const response = responses[String(status)] ?? responses[`${String(status)[0]}XX`] ?? responses.default;
  expect(response, `${operation.summary}: status ${status} is described`).toBeDefined();
  const schema = response?.content?.[mediaType]?.schema;
  if (schema === undefined) return;
  const key = JSON.stringify(schema);
  let validate = compiled.get(key);
  if (validate === undefined) {
    validate = ajv.compile(resolveRefs(schema));
    compiled.set(key, validate);
  }
  expect(validate(body), `${operation.summary}: ${JSON.stringify(validate.errors)}`).toBe(true);
}

/** The 1xx and 2xx statuses an operation describes, in the document's order. */
export function successStatuses(operation: Operation): string[] {
  return Object.keys(operation.responses).filter((status) => /^[12]\d\d$/.test(status));
}

/**
 * Checks that the operation describes `status` by itself: not only through `default` or a range
 * such as `2XX` (the fuzz: every status a route answers is in its description).
 */
export function expectDescribedStatus(operation: Operation, status: number): void {
  expect(Object.keys(operation.responses), `${operation.summary}: status ${status} is described`).toContain(
    String(status),
  );
}

/** The error schemas, inlined: the answers are checked one by one, without the whole document. */
const ERROR_SCHEMAS: Record<string, object> = {
  "#/components/schemas/Error": { type: "object", properties: { error: { type: "string" } }, required: ["error"] },
  "#/components/schemas/CargoError": {
    type: "object",
    properties: { errors: { type: "array", items: { type: "object", required: ["detail"] } } },
    required: ["errors"],
  },
};

function resolveRefs(schema: object): object {
  return JSON.parse(JSON.stringify(schema), (_key, value) =>
    value !== null && typeof value === "object" && typeof value.$ref === "string" && value.$ref in ERROR_SCHEMAS
      ? ERROR_SCHEMAS[value.$ref]
      : value,
  );
}
