/**
 * The Atom feed of a status page (RFC 4287; docs/healthchecks.md): `<page>/feed.atom` lists the
 * page's incidents, each with its whole timeline, and its maintenance windows ongoing or coming
 * within 7 days. Every text is escaped, and characters XML 1.0 cannot hold are left out.
 */
import { createHash } from "node:crypto";
import { type Incident, resolvedMs, statusOf } from "../incidents/index.js";
import { MAINTENANCE_HORIZON_MS } from "./data.js";
import { INCIDENT_TEXT, type StatusMaintenance } from "./view.js";

/** The media type of the feed (RFC 4287 §7). */
export const ATOM_MEDIA_TYPE = "application/atom+xml; charset=utf-8";

/**
 * Whether XML 1.0 can hold the UTF-16 unit `code` at `index` of `text`: not a C0 control other than
 * tab and line ends, not U+FFFE or U+FFFF, not a lone surrogate.
 */
function xmlAllows(text: string, index: number, code: number): boolean {
  if (code < 0x20) return code === 0x09 || code === 0x0a || code === 0x0d;
  if (code === 0xfffe || code === 0xffff) return false;
  if (code >= 0xd800 && code <= 0xdbff) {
    const next = text.charCodeAt(index + 1);
    return next >= 0xdc00 && next <= 0xdfff;
  }
  if (code >= 0xdc00 && code <= 0xdfff) {
    const previous = text.charCodeAt(index - 1);
    return previous >= 0xd800 && previous <= 0xdbff;
  }
  return true;
}

const ESCAPES: Readonly<Record<string, string>> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&apos;",
};

/** `text` as XML character data or attribute value: escaped, without what XML cannot hold. */
export function xmlText(text: string): string {
  let out = "";
  for (let index = 0; index < text.length; index += 1) {
    const code = text.charCodeAt(index);
    if (!xmlAllows(text, index, code)) continue;
    const char = text.charAt(index);
    out += ESCAPES[char] ?? char;
  }
  return out;
}

/** A `urn:uuid:` of `name` (RFC 9562 version 5 layout over SHA-1): the same name, the same id. */
export function nameUuid(name: string): string {
  const bytes = createHash("sha1").update(name).digest().subarray(0, 16);
  bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x50;
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80;
  const hex = bytes.toString("hex");
  return `urn:uuid:${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const iso = (milliseconds: number) => new Date(milliseconds).toISOString();
const utc = (milliseconds: number) => `${iso(milliseconds).slice(0, 16).replace("T", " ")} UTC`;

/** The page the feed is of. */
export interface FeedPage {
  readonly title: string;
  readonly description: string;
  /** Absolute URL of the page (`https://status.example.org/status`); the feed is at `<url>/feed.atom`. */
  readonly url: string;
}

interface Entry {
  readonly id: string;
  readonly title: string;
  readonly updatedMs: number;
  readonly publishedMs?: number;
  readonly content: string;
}

/**
 * Characters of an entry's timeline at most: its newest updates that fit (at least one), so that a
 * feed of 50 incidents stays around a megabyte whatever their timelines.
 */
export const MAX_ENTRY_TEXT = 20_000;

/** The timeline as text, newest first, as many updates as fit in {@link MAX_ENTRY_TEXT}. */
function timelineText(incident: Incident): string[] {
  const lines: string[] = [];
  let length = 0;
  const newestFirst = [...incident.updates].reverse();
  for (const update of newestFirst) {
    const line = `${utc(update.timeMs)}, ${INCIDENT_TEXT[update.status]}:\n${update.message}`;
    if (lines.length > 0 && length + line.length > MAX_ENTRY_TEXT) {
      const left = newestFirst.length - lines.length;
      lines.push(`${left} earlier update${left === 1 ? "" : "s"} left out.`);
      break;
    }
    lines.push(line);
    length += line.length;
  }
  return lines;
}

function incidentEntry(incident: Incident, shownChecks: ReadonlySet<string>): Entry {
  const resolved = resolvedMs(incident);
  const checks = incident.checks.filter((name) => shownChecks.has(name));
  const timeline = timelineText(incident);
  return {
    id: `urn:uuid:${incident.id}`,
    title: `${resolved === undefined ? INCIDENT_TEXT[statusOf(incident)] : "Resolved"}: ${incident.title}`,
    updatedMs: incident.updates[incident.updates.length - 1]?.timeMs ?? 0,
    publishedMs: incident.updates[0]?.timeMs ?? 0,
    content: [...(checks.length > 0 ? [`Affects ${checks.join(", ")}.`] : []), ...timeline].join("\n\n"),
  };
}

function windowEntry(window: StatusMaintenance, pageUrl: string): Entry {
  const startMs = Date.parse(window.start);
  const endMs = Date.parse(window.end);
  return {
    id: nameUuid(`${pageUrl}\nmaintenance\n${window.name}\n${window.start}`),
    title: `Maintenance: ${window.name}`,
    // Announced when it came within the page's 7 days: a stable time, never in the future.
    updatedMs: Math.max(0, startMs - MAINTENANCE_HORIZON_MS),
    content: `Planned maintenance from ${utc(startMs)} to ${utc(endMs)}, for ${window.checks.join(", ")}.`,
  };
}

function entryXml(entry: Entry, pageUrl: string): string {
  return [
    "<entry>",
    `<id>${xmlText(entry.id)}</id>`,
    `<title type="text">${xmlText(entry.title)}</title>`,
    `<updated>${iso(entry.updatedMs)}</updated>`,
    entry.publishedMs === undefined ? "" : `<published>${iso(entry.publishedMs)}</published>`,
    `<link rel="alternate" type="text/html" href="${xmlText(pageUrl)}"/>`,
    `<content type="text">${xmlText(entry.content)}</content>`,
    "</entry>",
  ].join("");
}

/**
 * The feed: the page's `incidents` (naming only the `shownChecks`), then its `windows`, entries
 * most recently updated first. Its `updated` is its latest entry's, or `nowMs` without entries.
 */
export function renderFeed(
  page: FeedPage,
  incidents: readonly Incident[],
  windows: readonly StatusMaintenance[],
  shownChecks: ReadonlySet<string>,
  nowMs: number,
): string {
  const entries = [
    ...incidents.map((incident) => incidentEntry(incident, shownChecks)),
    ...windows.map((window) => windowEntry(window, page.url)),
  ].sort((a, b) => b.updatedMs - a.updatedMs);
  const updatedMs = entries[0]?.updatedMs ?? nowMs;
  return [
    '<?xml version="1.0" encoding="utf-8"?>\n<feed xmlns="http://www.w3.org/2005/Atom">',
    `<id>${nameUuid(`${page.url}\nfeed`)}</id>`,
    `<title type="text">${xmlText(page.title)}</title>`,
    page.description === "" ? "" : `<subtitle type="text">${xmlText(page.description)}</subtitle>`,
    `<updated>${iso(updatedMs)}</updated>`,
    `<link rel="self" type="application/atom+xml" href="${xmlText(`${page.url}/feed.atom`)}"/>`,
    `<link rel="alternate" type="text/html" href="${xmlText(page.url)}"/>`,
    `<author><name>${xmlText(page.title)}</name></author>`,
    "<generator>Vigie</generator>",
    ...entries.map((entry) => entryXml(entry, page.url)),
    "</feed>\n",
  ].join("");
}
