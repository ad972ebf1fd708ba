/**
 * The routes of the healthchecks module (docs/healthchecks.md): definitions, bulk, one-off
 * executions and results. Open by default; with `security.require-token: true` every route needs a
 * registry token of an active tech or admin user (docs/security.md; index.ts adds the guard).
 *
 * No secret leaves (docs/security.md): definitions and results are shown through their redacted
 * views (catalog.ts), a one-off failure message is redacted, and a posted `<redacted>` keeps the
 * stored value (admission.ts).
 */
import type { FastifyInstance } from "fastify";
import { ConflictError, ForbiddenError, InvalidError, NotFoundError } from "../platform/errors.js";
import {
  queryBoolean,
  queryError,
  queryInteger,
  queryOf,
  queryString,
  queryTime,
  queryValues,
} from "../platform/query.js";
import { ValidationError, type Validator } from "../platform/validation.js";
import { apiDefinitionBody, checkApiDefinitionFiles, type ExistingDefinition } from "./admission.js";
import type { ReferenceProblem } from "./alerts/references.js";
import { bulkBody, checkBulkFiles, hasCommandChecks } from "./bulk.js";
import type { Catalog, Registration } from "./catalog.js";
import { type Definition, type DefinitionRules, KINDS } from "./definition.js";
import type { HeartbeatState } from "./heartbeat/tracker.js";
import type { ResultHistory } from "./history.js";
import { listLatest, uptimeOfLatest } from "./history-views.js";
import type { ResultFilter, ResultStore } from "./results.js";
import {
  bulkDescription,
  createDescription,
  DELETE_CHECK,
  GET_CHECK,
  GET_RESULT,
  GET_UPTIME,
  historyDescription,
  LIST_CHECKS,
  LIST_RESULTS,
} from "./routes-api.js";

/** The 403 of a command check posted while `allow-api-commands` is off (docs/healthchecks.md). */
export const COMMANDS_DISABLED = "command healthchecks are disabled for the API";

/**
 * The definition posted to `POST /healthcheck/<kind>` (a one-off included), admitted as
 * admission.ts says: validated by `validate` (the kind's {@link apiDefinitionBody}), `<redacted>`
 * resolved from the existing check of its name, TLS file names checked under
 * `healthchecks.tls-directory`.
 *
 * @throws InvalidError `invalid healthcheck: <field>: <rule>`, naming the field, never its value
 */
async function admit(validate: Validator<Definition>, body: unknown, rules: DefinitionRules): Promise<Definition> {
  try {
    const definition = validate(body, "");
    await checkApiDefinitionFiles(definition, rules);
    return definition;
  } catch (error) {
    if (error instanceof ValidationError) throw new InvalidError(`invalid healthcheck: ${error.message}`);
    throw error;
  }
}

function notFound(name: string): NotFoundError {
  return new NotFoundError(`healthcheck ${name} not found`);
}

/** Results `GET /result/<name>/history` answers by default and at most (docs/healthchecks.md). */
export const HISTORY_DEFAULT_LIMIT = 100;
export const HISTORY_MAX_LIMIT = 10_000;

/** The query of `GET /result/<name>/history`, times in milliseconds since the epoch. */
export interface HistoryQuery {
  readonly sinceMs?: number;
  readonly untilMs?: number;
  readonly limit: number;
}

/**
 * Reads `since`, `until` and `limit` of `GET /result/<name>/history`. Other parameters are
 * ignored, as every route of the module ignores what it does not know.
 *
 * @throws InvalidError `query parameter since: must be an RFC 3339 date-time such as
 *   2026-11-22T10:15:02Z`, `query parameter since: must not be after until`, `query parameter
 *   limit: must be an integer between 1 and 10000`, `query parameter limit: must be given once`
 */
export function parseHistoryQuery(raw: unknown): HistoryQuery {
  const query = queryOf(raw);
  const sinceMs = queryTime(query, "since");
  const untilMs = queryTime(query, "until");
  if (sinceMs !== undefined && untilMs !== undefined && sinceMs > untilMs) {
    throw queryError("since", "must not be after until");
  }
  // A repeated limit is refused as `must be given once`, before its value is read.
  queryString(query, "limit");
  const limit = queryInteger(query, "limit", { min: 1, max: HISTORY_MAX_LIMIT }) ?? HISTORY_DEFAULT_LIMIT;
  return {
    ...(sinceMs === undefined ? {} : { sinceMs }),
    ...(untilMs === undefined ? {} : { untilMs }),
    limit,
  };
}

/**
 * The filter of `GET /result`: `name` (repeatable, at most {@link MAX_RESULT_NAMES}) and `success`
 * (`true` or `false`). Other parameters are ignored, as on every listing (a cache-busting `?_=`
 * must not fail).
 * @throws InvalidError naming the parameter
 */
export function parseResultFilter(raw: unknown): ResultFilter {
  const query = queryOf(raw);
  const filter: { names?: string[]; success?: boolean } = {};
  const names = queryValues(query, "name", { rule: "must be text" });
  if (names.length > MAX_RESULT_NAMES) throw queryError("name", `at most ${MAX_RESULT_NAMES} names`);
  if (names.length > 0) filter.names = names;
  const success = queryBoolean(query, "success");
  if (success !== undefined) filter.success = success;
  return filter;
}

/** Names one `GET /result` may ask for (a bound on the work of one request). */
export const MAX_RESULT_NAMES = 1_000;

/** What the routes work with. */
export interface HealthcheckRoutesOptions {
  readonly catalog: Catalog;
  readonly results: ResultStore;
  /** Cluster mode: brings the results of checks other instances run up to date (at most 1 s old). */
  readonly freshen?: () => Promise<void>;
  /** The stored results (history and uptime routes, docs/healthchecks.md). */
  readonly history: ResultHistory;
  /** The rules of the running configuration that definitions depend on. */
  readonly rules: DefinitionRules;
  /** Whether command checks may be created through the API (`allow-api-commands`, resolved). */
  readonly allowCommands: boolean;
  /**
   * The first broken reference of alerts (an undeclared output, an unknown or cyclic `depends-on`)
   * of `changed` once applied; `replacing` for a bulk payload (docs/alerts.md).
   */
  readonly references?: (changed: readonly Definition[], replacing: boolean) => ReferenceProblem | undefined;
  /** Heartbeat checks (docs/healthchecks.md): their states and their keys. */
  readonly heartbeats?: {
    /** The state of heartbeat `name`, shown read-only in its definition. */
    stateOf(name: string): HeartbeatState;
    /** The name of the heartbeat whose ping key is `key`, for the 409 of a duplicate key. */
    nameOf(key: string): string | undefined;
  };
}

/**
 * The 409 of a heartbeat whose key another heartbeat has (keys are unique: a ping must name one
 * heartbeat), for each of `definitions`; heartbeats that `replaced` lists are leaving.
 * @throws ConflictError `heartbeat key already used by heartbeat <name>`
 */
function checkKeys(
  definitions: readonly Definition[],
  holder: ((key: string) => string | undefined) | undefined,
  replaced?: (name: string) => boolean,
): void {
  const seen = new Map<string, string>();
  for (const definition of definitions) {
    if (definition.kind !== "heartbeat" || definition.key === undefined) continue;
    const other = seen.get(definition.key) ?? holder?.(definition.key);
    if (other !== undefined && other !== definition.name && !(replaced?.(other) ?? false)) {
      throw new ConflictError(`invalid healthcheck ${definition.name}: key: already used by heartbeat ${other}`);
    }
    seen.set(definition.key, definition.name);
  }
}

/**
 * Registers POST `/healthcheck/<kind>` for each kind, POST `/healthcheck/bulk`, GET `/healthcheck`,
 * GET and DELETE `/healthcheck/:name`, GET `/result`, GET `/result/:name`, GET
 * `/result/:name/history` and GET `/result/:name/uptime`.
 */
export function registerHealthcheckRoutes(app: FastifyInstance, options: HealthcheckRoutesOptions): void {
  const { catalog, results, history, rules, allowCommands } = options;
  const freshen = options.freshen ?? (async () => {});
  const existing: ExistingDefinition = (name) => catalog.get(name)?.definition;
  const keyHolder = options.heartbeats === undefined ? undefined : (key: string) => options.heartbeats?.nameOf(key);
  // Cluster mode: another instance may judge a heartbeat; its state comes with its latest result.
  const freshenHeartbeats = () =>
    catalog.list().some((registration) => registration.definition.kind === "heartbeat") ? freshen() : Promise.resolve();

  for (const kind of KINDS) {
    const body = apiDefinitionBody(kind, rules, existing);
    app.post(`/healthcheck/${kind}`, { config: { openapi: createDescription(kind, body) } }, async (request, reply) => {
      if (kind === "command" && !allowCommands) throw new ForbiddenError(COMMANDS_DISABLED);
      const definition = await admit(body, request.body, rules);
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
      const problem = options.references?.([definition], false);
      if (problem !== undefined) throw new InvalidError(`invalid healthcheck: ${problem.error.message}`);
      checkKeys([definition], keyHolder);
      await catalog.upsert(definition);
      if (definition.kind === "heartbeat") {
        return reply.code(201).send({ message: "Healthcheck successfully added", key: definition.key });
      }
      return reply.code(201).send({ message: "Healthcheck successfully added" });
    });
  }

  const bulk = bulkBody(rules, existing);
  app.post("/healthcheck/bulk", { config: { openapi: bulkDescription(bulk) } }, async (request, reply) => {
    if (!allowCommands && hasCommandChecks(request.body)) throw new ForbiddenError(COMMANDS_DISABLED);
    const definitions = await checkBulkFiles(bulk(request.body, ""), rules);
    const problem = options.references?.(definitions, true);
    if (problem !== undefined) throw new InvalidError(`invalid healthcheck ${problem.check}: ${problem.error.message}`);
    // A key may move from an API heartbeat the payload removes to one it adds.
    const kept = new Set(definitions.map((definition) => definition.name));
    checkKeys(definitions, keyHolder, (name) => catalog.get(name)?.source === "api" && !kept.has(name));
    await catalog.replaceApiChecks(definitions);
    return reply.code(201).send({ message: "Healthchecks successfully added" });
  });

  // A heartbeat's definition shows its state, read-only (never stored: it is not part of it).
  const viewOf = (registration: Registration) =>
    registration.definition.kind === "heartbeat" && options.heartbeats !== undefined
      ? { ...registration.view, state: options.heartbeats.stateOf(registration.definition.name) }
      : registration.view;

  app.get("/healthcheck", { config: { openapi: LIST_CHECKS } }, async () => {
    await freshenHeartbeats();
    return catalog.list().map(viewOf);
  });

  app.get<{ Params: { name: string } }>("/healthcheck/:name", { config: { openapi: GET_CHECK } }, async (request) => {
    const registration = catalog.get(request.params.name);
    if (registration === undefined) throw notFound(request.params.name);
    if (registration.definition.kind === "heartbeat") await freshen();
    return viewOf(registration);
  });

  app.delete<{ Params: { name: string } }>(
    "/healthcheck/:name",
    { config: { openapi: DELETE_CHECK } },
    async (request) => {
      const { name } = request.params;
      if (!(await catalog.delete(name))) throw notFound(name);
      return { message: `Successfully deleted healthcheck ${name}` };
    },
  );

  // `?name=` (repeatable) and `?success=true|false` narrow the listing, so that a dashboard of the
  // failing checks does not fetch every result.
  app.get("/result", { config: { openapi: LIST_RESULTS } }, async (request, reply) => {
    const filter = parseResultFilter(request.query);
    await freshen();
    return reply.type("application/json; charset=utf-8").send(results.listJson(filter));
  });

  app.get<{ Params: { name: string } }>("/result/:name", { config: { openapi: GET_RESULT } }, async (request) => {
    await freshen();
    const result = results.get(request.params.name);
    if (result === undefined) throw new NotFoundError(`result not found for healthcheck ${request.params.name}`);
    return result;
  });

  // History and uptime (docs/healthchecks.md): the query is checked first (400), then the check
  // (404). A deleted check has no history here, even while its rows wait for the prune. Without
  // history (retention 0) both answer from the latest result.
  const historyRoute = { config: { openapi: historyDescription(HISTORY_DEFAULT_LIMIT, HISTORY_MAX_LIMIT) } };
  app.get<{ Params: { name: string } }>("/result/:name/history", historyRoute, async (request) => {
    const query = parseHistoryQuery(request.query);
    const { name } = request.params;
    if (catalog.get(name) === undefined) throw notFound(name);
    if (!history.enabled) await freshen();
    const views = history.enabled ? await history.list(name, query) : listLatest(results.get(name), query);
    return { results: views };
  });

  app.get<{ Params: { name: string } }>(
    "/result/:name/uptime",
    { config: { openapi: GET_UPTIME } },
    async (request) => {
      const { name } = request.params;
      if (catalog.get(name) === undefined) throw notFound(name);
      if (!history.enabled) await freshen();
      const now = Date.now();
      return history.enabled ? await history.uptime(name, now) : uptimeOfLatest(results.get(name), now);
    },
  );
}
