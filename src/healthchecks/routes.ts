/**
 * The routes of the healthchecks module (healthchecks.md §5): definitions, bulk, one-off
 * executions and results. Open by default; with `security.require-token: true` every route needs a
 * registry token of an active tech or admin user (platform.md §5; index.ts adds the guard).
 *
 * No secret leaves (platform.md §8): definitions and results are shown through their redacted
 * views (catalog.ts), a one-off failure message is redacted, and a posted `<redacted>` keeps the
 * stored value (admission.ts).
 */
import type { FastifyInstance } from "fastify";
import { HttpError } from "../platform/errors.js";
import { ValidationError } from "../platform/validation.js";
import { checkApiDefinitionFiles, type ExistingDefinition, parseApiDefinition } from "./admission.js";
import { BulkError, hasCommandChecks, parseBulk } from "./bulk.js";
import type { Catalog } from "./catalog.js";
import { type Definition, type DefinitionRules, KINDS, type Kind } from "./definition.js";
import type { ResultStore } from "./results.js";

/** The 403 of a command check posted while `allow-api-commands` is off (healthchecks.md §5). */
export const COMMANDS_DISABLED = "command healthchecks are disabled for the API";

/**
 * The definition posted to `POST /healthcheck/<kind>` (a one-off included), admitted as
 * admission.ts says: validated, `<redacted>` resolved from the existing check of its name, TLS file
 * names checked under `healthchecks.tls-directory`.
 *
 * @throws HttpError 400 `invalid healthcheck: <field>: <rule>`, naming the field, never its value
 */
async function admit(
  kind: Kind,
  body: unknown,
  rules: DefinitionRules,
  existing: ExistingDefinition,
): Promise<Definition> {
  try {
    const definition = parseApiDefinition(kind, body, rules, existing);
    await checkApiDefinitionFiles(definition, rules);
    return definition;
  } catch (error) {
    if (error instanceof ValidationError) throw new HttpError(400, `invalid healthcheck: ${error.message}`);
    throw error;
  }
}

function notFound(name: string): HttpError {
  return new HttpError(404, `healthcheck ${name} not found`);
}

/** What the routes work with. */
export interface HealthcheckRoutesOptions {
  readonly catalog: Catalog;
  readonly results: ResultStore;
  /** The rules of the running configuration that definitions depend on. */
  readonly rules: DefinitionRules;
  /** Whether command checks may be created through the API (`allow-api-commands`, resolved). */
  readonly allowCommands: boolean;
}

/**
 * Registers POST `/healthcheck/<kind>` for each kind, POST `/healthcheck/bulk`, GET `/healthcheck`,
 * GET and DELETE `/healthcheck/:name`, GET `/result` and GET `/result/:name`.
 */
export function registerHealthcheckRoutes(app: FastifyInstance, options: HealthcheckRoutesOptions): void {
  const { catalog, results, rules, allowCommands } = options;
  const existing: ExistingDefinition = (name) => catalog.get(name)?.definition;

  for (const kind of KINDS) {
    app.post(`/healthcheck/${kind}`, async (request, reply) => {
      if (kind === "command" && !allowCommands) throw new HttpError(403, COMMANDS_DISABLED);
      const definition = await admit(kind, request.body, rules, existing);
      if (definition["one-off"]) {
        // The message is redacted by the catalog, like the results'.
        const execution = await catalog.runOnce(definition);
        if (execution.success) {
          return reply.code(201).send({ message: `One-off healthcheck ${definition.name} successfully executed` });
        }
        return reply
          .code(500)
          .send({ message: `Execution of one off healthcheck ${definition.name} failed: ${execution.message}` });
      }
      await catalog.upsert(definition);
      return reply.code(201).send({ message: "Healthcheck successfully added" });
    });
  }

  app.post("/healthcheck/bulk", async (request, reply) => {
    if (!allowCommands && hasCommandChecks(request.body)) throw new HttpError(403, COMMANDS_DISABLED);
    let definitions: Definition[];
    try {
      definitions = await parseBulk(request.body, rules, existing);
    } catch (error) {
      if (error instanceof BulkError) throw new HttpError(400, error.message);
      throw error;
    }
    await catalog.replaceApiChecks(definitions);
    return reply.code(201).send({ message: "Healthchecks successfully added" });
  });

  app.get("/healthcheck", async () => catalog.list().map((registration) => registration.view));

  app.get<{ Params: { name: string } }>("/healthcheck/:name", async (request) => {
    const registration = catalog.get(request.params.name);
    if (registration === undefined) throw notFound(request.params.name);
    return registration.view;
  });

  app.delete<{ Params: { name: string } }>("/healthcheck/:name", async (request) => {
    const { name } = request.params;
    if (!(await catalog.delete(name))) throw notFound(name);
    return { message: `Successfully deleted healthcheck ${name}` };
  });

  app.get("/result", async () => results.list());

  app.get<{ Params: { name: string } }>("/result/:name", async (request) => {
    const result = results.get(request.params.name);
    if (result === undefined) throw new HttpError(404, `result not found for healthcheck ${request.params.name}`);
    return result;
  });
}
