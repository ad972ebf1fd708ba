/**
 * The maintenance routes (docs/healthchecks.md): `POST /maintenance`, `GET /maintenance` and
 * `DELETE /maintenance/:name`. index.ts registers them beside the other healthcheck routes, behind
 * the same guard (`security.require-token`).
 */
import type { FastifyInstance } from "fastify";
import { parseRfc3339, rfc3339 } from "../../platform/time.js";
import * as v from "../../platform/validation.js";
import { type SelectableCheck, selectChecks } from "../status-page/selectors.js";
import type { ApiWindow, WindowState } from "./calendar.js";
import { windowChecks, windowName } from "./config.js";
import type { Maintenance } from "./index.js";
import { createWindowDescription, DELETE_WINDOW, LIST_WINDOWS } from "./routes-api.js";

/** An RFC 3339 date-time, read as milliseconds since the epoch. */
const time: v.Validator<number> = v.described(
  (value, path) => {
    const milliseconds = typeof value === "string" ? parseRfc3339(value) : undefined;
    if (milliseconds === undefined) {
      throw new v.ValidationError(path, "must be an RFC 3339 date-time such as 2026-11-22T10:15:02Z", value);
    }
    return milliseconds;
  },
  { type: "string", format: "date-time" },
);

const bodyShape = v.object(
  { name: v.required(windowName), checks: v.required(windowChecks), start: v.required(time), end: v.required(time) },
  { unknownKeys: "reject" },
);

/**
 * The body of `POST /maintenance`: a name, selectors, and the span `[start, end)`, which must end
 * after it starts and after now.
 *
 * @throws ValidationError naming the field (`end: must be after start`), a 400
 */
export function windowBody(nowMs: () => number = Date.now): v.Validator<ApiWindow> {
  return v.described((value, path) => {
    const { name, checks, start, end } = bodyShape(value, path);
    if (end <= start) throw new v.ValidationError(v.childPath(path, "end"), "must be after start", rfc3339(end));
    if (end <= nowMs()) throw new v.ValidationError(v.childPath(path, "end"), "must be in the future", rfc3339(end));
    return { name, checks, startMs: start, endMs: end };
  }, v.schemaOf(bodyShape));
}

const span = (occurrence: { startMs: number; endMs: number } | undefined) =>
  occurrence === undefined ? null : { start: rfc3339(occurrence.startMs), end: rfc3339(occurrence.endMs) };

/** A window as `GET /maintenance` shows it, with the names of the `checks` it selects. */
export function windowView(state: WindowState, checks: readonly SelectableCheck[]) {
  const { configured, api } = state;
  return {
    name: state.name,
    source: state.source,
    checks: state.checks,
    selected: selectChecks(state.selectors, checks).map((check) => check.definition.name),
    ...(configured === undefined ? {} : { start: configured.start, duration: configured.duration.text }),
    ...(configured === undefined ? {} : { timezone: configured.timezone }),
    ...(api === undefined ? {} : { start: rfc3339(api.startMs), end: rfc3339(api.endMs) }),
    ongoing: state.current !== undefined,
    current: span(state.current),
    next: span(state.next),
  };
}

/** What the routes work with. */
export interface MaintenanceRoutesOptions {
  readonly maintenance: Maintenance;
  /** The registered checks, sorted by name (a catalog's `list` fits). */
  readonly checks: () => readonly SelectableCheck[];
}

/** Registers `POST /maintenance`, `GET /maintenance` and `DELETE /maintenance/:name` on `app`. */
export function registerMaintenanceRoutes(app: FastifyInstance, options: MaintenanceRoutesOptions): void {
  const { maintenance, checks } = options;
  const body = windowBody();

  app.post("/maintenance", { config: { openapi: createWindowDescription(body) } }, async (request, reply) => {
    const window = body(request.body, "");
    await maintenance.create(window);
    return reply.code(201).send({ message: `Maintenance window ${window.name} successfully added` });
  });

  app.get("/maintenance", { config: { openapi: LIST_WINDOWS } }, async () => {
    // Read again: another instance may have changed them a moment ago.
    const now = Date.now();
    await maintenance.refresh(now);
    const registered = checks();
    return maintenance.calendar.describe(now).map((state) => windowView(state, registered));
  });

  app.delete<{ Params: { name: string } }>(
    "/maintenance/:name",
    { config: { openapi: DELETE_WINDOW } },
    async (request) => {
      const { name } = request.params;
      await maintenance.remove(name);
      return { message: `Successfully deleted maintenance window ${name}` };
    },
  );
}
