/**
 * The incidents of a status page as it shows them (docs/healthchecks.md): the open ones and those
 * resolved within 14 days, a few of each and a few updates of each, long messages cut, so that the
 * page keeps its weight (the API and the Atom feed have every update in full). Only the shown
 * checks an incident concerns are named: the others are not public.
 */
import { type Incident, resolvedMs, shownIncidents, statusOf } from "../incidents/index.js";
import type { StatusIncident } from "./view.js";

/** Open incidents on a page at most, and resolved ones at most. */
export const MAX_SHOWN_INCIDENTS = 10;
/** Updates of an open incident the page shows, newest first; a resolved one shows its last only. */
export const MAX_SHOWN_UPDATES = 5;
/** Characters of a message the page shows; a longer one is cut and ends with `…`. */
export const MAX_SHOWN_MESSAGE = 500;

const iso = (milliseconds: number) => new Date(milliseconds).toISOString();

/** `text` cut to {@link MAX_SHOWN_MESSAGE} characters (not inside a surrogate pair), with `…`. */
export function shortened(text: string): string {
  if (text.length <= MAX_SHOWN_MESSAGE) return text;
  let end = MAX_SHOWN_MESSAGE;
  const code = text.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end -= 1;
  return `${text.slice(0, end).trimEnd()}…`;
}

function shown(incident: Incident, shownChecks: ReadonlySet<string>): StatusIncident {
  const resolved = resolvedMs(incident);
  const keep = resolved === undefined ? MAX_SHOWN_UPDATES : 1;
  const newest = incident.updates.slice(-keep).reverse();
  return {
    id: incident.id,
    title: incident.title,
    status: statusOf(incident),
    started: iso(incident.updates[0]?.timeMs ?? 0),
    resolved: resolved === undefined ? null : iso(resolved),
    checks: incident.checks.filter((name) => shownChecks.has(name)),
    updates: newest.map((update) => ({
      time: iso(update.timeMs),
      status: update.status,
      message: shortened(update.message),
    })),
    earlier: incident.updates.length - newest.length,
  };
}

/**
 * What the page says of `incidents` at `nowMs`: open ones first, then those resolved within 14 days,
 * at most {@link MAX_SHOWN_INCIDENTS} of each, most recently updated first.
 */
export function pageIncidents(
  incidents: readonly Incident[],
  shownChecks: ReadonlySet<string>,
  nowMs: number,
): StatusIncident[] {
  const { open, resolved } = shownIncidents(incidents, nowMs);
  return [...open.slice(0, MAX_SHOWN_INCIDENTS), ...resolved.slice(0, MAX_SHOWN_INCIDENTS)].map((incident) =>
    shown(incident, shownChecks),
  );
}
