/**
 * What the badge routes say of themselves in `GET /openapi.json` (docs/api.md): public, answering
 * an SVG image or shields.io's endpoint JSON, and 304 to a request whose `If-None-Match` holds the
 * badge's ETag.
 */
import type { RouteDescription } from "../../platform/openapi.js";
import { BADGE_COLORS } from "./svg.js";
import type { BadgeSubject } from "./values.js";

/** The formats of a badge: its path's extension. */
export const BADGE_FORMATS = ["svg", "json"] as const;

/** One of {@link BADGE_FORMATS}. */
export type BadgeFormat = (typeof BADGE_FORMATS)[number];

/** shields.io's endpoint format, schema version 1. */
const SHIELDS_ENDPOINT = {
  type: "object",
  properties: {
    schemaVersion: { type: "integer", const: 1 },
    label: { type: "string" },
    message: { type: "string" },
    color: { type: "string", enum: Object.keys(BADGE_COLORS) },
  },
  required: ["schemaVersion", "label", "message", "color"],
  additionalProperties: false,
};

/** What a subject's badge shows, in a few words. */
function subjectWords(subject: BadgeSubject): string {
  switch (subject.kind) {
    case "status":
      return "state (up, down, unknown)";
    case "uptime":
      return `uptime over ${subject.window}`;
    case "response-time":
      return "mean response time over 24h";
  }
}

/** The description of the badge route of `subject` in `format`. */
export function badgeDescription(subject: BadgeSubject, format: BadgeFormat): RouteDescription {
  const notModified = { status: 304, description: "not modified: If-None-Match holds the badge's ETag" };
  return {
    summary:
      format === "svg"
        ? `the ${subjectWords(subject)} badge of a public healthcheck, as an SVG image`
        : `the ${subjectWords(subject)} badge of a public healthcheck, in shields.io's endpoint format`,
    headers: { "If-None-Match": { type: "string" } },
    success: [
      format === "svg" ? { mediaType: "image/svg+xml", schema: { type: "string" } } : { schema: SHIELDS_ENDPOINT },
      notModified,
    ],
    security: "none",
  };
}
