/**
 * Incidents (docs/healthchecks.md): what operators tell the readers of the status pages, with a
 * timeline of updates. Plain data and its rules, without HTTP or SQL.
 *
 * An incident's status is the status of its latest update; it is resolved when that is
 * `resolved` (a later update may reopen it). Messages are plain text: every renderer escapes them.
 */
import * as v from "../../platform/validation.js";

/** The statuses of an incident, in the order they usually come. */
export const INCIDENT_STATUSES = ["investigating", "identified", "monitoring", "resolved"] as const;

/** One of {@link INCIDENT_STATUSES}. */
export type IncidentStatus = (typeof INCIDENT_STATUSES)[number];

/** An incident's title, at most this many characters. */
export const MAX_TITLE = 255;
/** A message, at most this many characters (about two pages of text). */
export const MAX_MESSAGE = 10_000;
/** Updates of one incident, its first message included, at most. */
export const MAX_UPDATES = 100;
/** Checks named by one incident, at most. */
export const MAX_INCIDENT_CHECKS = 100;
/** Incidents stored, at most: beyond, creating one is refused until old ones are deleted. */
export const MAX_INCIDENTS = 10_000;

/** How long a resolved incident stays on its pages: 14 days, in milliseconds. */
export const RESOLVED_SHOWN_MS = 14 * 24 * 3_600_000;

/** One entry of an incident's timeline. */
export interface IncidentUpdate {
  readonly status: IncidentStatus;
  readonly message: string;
  /** When it was posted, milliseconds since the epoch. */
  readonly timeMs: number;
}

/** An incident with its timeline, oldest update first. */
export interface Incident {
  /** A random UUID (RFC 9562 version 4), lower case. */
  readonly id: string;
  readonly title: string;
  /** The names of the checks it concerns (possibly none). */
  readonly checks: readonly string[];
  /** The slugs of the pages that show it (`""` is `/status`). */
  readonly pages: readonly string[];
  /** At least one: the first holds the message it was created with. */
  readonly updates: readonly IncidentUpdate[];
}

/** The latest update of `incident`. */
export function latestUpdate(incident: Incident): IncidentUpdate {
  const latest = incident.updates[incident.updates.length - 1];
  if (latest === undefined) throw new Error(`incident ${incident.id} has no update`);
  return latest;
}

/** The status of its latest update. */
export function statusOf(incident: Incident): IncidentStatus {
  return latestUpdate(incident).status;
}

/** When it was created (its first update), milliseconds since the epoch. */
export function createdMs(incident: Incident): number {
  return incident.updates[0]?.timeMs ?? latestUpdate(incident).timeMs;
}

/** When it was resolved (its latest update, when that resolves it); undefined while open. */
export function resolvedMs(incident: Incident): number | undefined {
  const latest = latestUpdate(incident);
  return latest.status === "resolved" ? latest.timeMs : undefined;
}

/**
 * What a page shows at `nowMs`: the open incidents and those resolved within
 * {@link RESOLVED_SHOWN_MS}, each list most recently updated first.
 */
export function shownIncidents(
  incidents: readonly Incident[],
  nowMs: number,
): { open: Incident[]; resolved: Incident[] } {
  const byUpdate = [...incidents].sort((a, b) => latestUpdate(b).timeMs - latestUpdate(a).timeMs);
  const open = byUpdate.filter((incident) => resolvedMs(incident) === undefined);
  const resolved = byUpdate.filter((incident) => {
    const at = resolvedMs(incident);
    return at !== undefined && at > nowMs - RESOLVED_SHOWN_MS;
  });
  return { open, resolved };
}

const status = v.oneOf(INCIDENT_STATUSES);
const title = v.string({ min: 1, max: MAX_TITLE, trim: true });
const message = v.string({ min: 1, max: MAX_MESSAGE, trim: true });
const checkName = v.string({ min: 1, max: 255 });
const slug = v.string({ max: 64 });

/**
 * `POST /incident`: `checks` defaults to none; `pages` omitted means every configured page (the
 * usual case: one public page), an empty list no page at all.
 */
export const incidentBody = v.object(
  {
    title: v.required(title),
    status: v.required(status),
    message: v.required(message),
    checks: v.withDefault<string[]>(v.array(checkName, { max: MAX_INCIDENT_CHECKS }), []),
    pages: v.optional(v.array(slug, { max: 100 })),
  },
  { unknownKeys: "reject" },
);

/** A new incident as posted. */
export type IncidentInput = v.Infer<typeof incidentBody>;

/** `POST /incident/<id>/update`. */
export const updateBody = v.object(
  { status: v.required(status), message: v.required(message) },
  { unknownKeys: "reject" },
);

/** An update as posted. */
export type UpdateInput = v.Infer<typeof updateBody>;

/** What names must exist for an incident to be accepted. */
export interface IncidentNames {
  /** Whether a check of that name is registered. */
  readonly hasCheck: (name: string) => boolean;
  /** The slugs of the configured pages. */
  readonly pages: ReadonlySet<string>;
}

/**
 * Checks the names `input` refers to: every check registered, every page configured, none twice.
 * @throws ValidationError `checks[1]: no healthcheck is named website`, `pages[0]: no status page has the slug ops`
 */
export function checkNames(
  input: { readonly checks: readonly string[]; readonly pages: readonly string[] },
  names: IncidentNames,
): void {
  const unique = (list: readonly string[], field: string) =>
    list.forEach((item, index) => {
      if (list.indexOf(item) !== index)
        throw new v.ValidationError(`${field}[${index}]`, "must not repeat an earlier one", item);
    });
  unique(input.checks, "checks");
  unique(input.pages, "pages");
  input.checks.forEach((name, index) => {
    if (!names.hasCheck(name)) throw new v.ValidationError(`checks[${index}]`, `no healthcheck is named ${name}`, name);
  });
  input.pages.forEach((slug, index) => {
    if (!names.pages.has(slug)) {
      throw new v.ValidationError(`pages[${index}]`, `no status page has the slug ${JSON.stringify(slug)}`, slug);
    }
  });
}

/** The shape of an incident id: a lower-case UUID. */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Whether `text` can be an incident id (anything else is unknown without asking the database). */
export function isIncidentId(text: string): boolean {
  return UUID.test(text);
}
