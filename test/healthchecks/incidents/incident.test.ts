/**
 * The incident domain (src/healthchecks/incidents/incident.ts) and what a page makes of incidents
 * (status-page/page-incidents.ts): status and resolution from the latest update, open and recently
 * resolved ones, names checked, bodies validated, long messages cut on the page.
 */
import { describe, expect, it } from "vitest";
import {
  checkNames,
  type Incident,
  incidentBody,
  isIncidentId,
  RESOLVED_SHOWN_MS,
  resolvedMs,
  shownIncidents,
  statusOf,
  updateBody,
} from "../../../src/healthchecks/incidents/incident.js";
import {
  MAX_SHOWN_MESSAGE,
  MAX_SHOWN_UPDATES,
  pageIncidents,
  shortened,
} from "../../../src/healthchecks/status-page/page-incidents.js";

const NOW = Date.parse("2026-05-10T12:00:00.000Z");
const DAY = 86_400_000;

function incident(id: string, ...statuses: [Incident["updates"][number]["status"], number][]): Incident {
  return {
    id,
    title: id,
    checks: ["website", "private"],
    pages: [""],
    updates: statuses.map(([status, timeMs], index) => ({ status, timeMs, message: `m${index}` })),
  };
}

describe("incidents", () => {
  it("take their status from the latest update; resolved reopens with a later one", () => {
    const open = incident("a", ["investigating", NOW - 3_000], ["identified", NOW - 2_000]);
    expect(statusOf(open)).toBe("identified");
    expect(resolvedMs(open)).toBeUndefined();
    const closed = incident("b", ["investigating", NOW - 3_000], ["resolved", NOW - 1_000]);
    expect(resolvedMs(closed)).toBe(NOW - 1_000);
    const reopened = incident("c", ["investigating", NOW - 3_000], ["resolved", NOW - 2_000], ["monitoring", NOW]);
    expect(resolvedMs(reopened)).toBeUndefined();
  });

  it("shows the open ones and those resolved within 14 days, most recently updated first", () => {
    const old = incident("old", ["resolved", NOW - RESOLVED_SHOWN_MS - 1]);
    const recent = incident("recent", ["investigating", NOW - 2 * DAY], ["resolved", NOW - DAY]);
    const early = incident("early", ["investigating", NOW - 5 * DAY]);
    const late = incident("late", ["investigating", NOW - DAY / 2]);
    const shown = shownIncidents([old, recent, early, late], NOW);
    expect(shown.open.map((item) => item.id)).toEqual(["late", "early"]);
    expect(shown.resolved.map((item) => item.id)).toEqual(["recent"]);
  });

  it("check the checks and pages they name", () => {
    const names = { hasCheck: (name: string) => name === "website", pages: new Set(["", "ops"]) };
    expect(() => checkNames({ checks: ["website"], pages: ["", "ops"] }, names)).not.toThrow();
    expect(() => checkNames({ checks: ["db"], pages: [] }, names)).toThrow("checks[0]: no healthcheck is named db");
    expect(() => checkNames({ checks: [], pages: ["x"] }, names)).toThrow('pages[0]: no status page has the slug "x"');
    expect(() => checkNames({ checks: [], pages: ["ops", "ops"] }, names)).toThrow("pages[1]: must not repeat");
  });

  it("validate their bodies: bounded, trimmed, defaults for checks and pages", () => {
    expect(incidentBody({ title: " Down ", status: "investigating", message: "m" }, "")).toEqual({
      title: "Down",
      status: "investigating",
      message: "m",
      checks: [],
    });
    expect(() => updateBody({ status: "resolved" }, "")).toThrow("message: is required");
    expect(() => updateBody({ status: "resolved", message: "" }, "")).toThrow("message: must not be empty");
    expect(isIncidentId("0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9")).toBe(true);
    expect(isIncidentId("../etc")).toBe(false);
  });

  it("are shown on a page with a few updates, long messages cut, and only the page's checks", () => {
    const many = incident(
      "many",
      ...Array.from({ length: 8 }, (_, index): [Incident["updates"][number]["status"], number] => [
        "monitoring",
        NOW - (8 - index) * 1_000,
      ]),
    );
    const [shown] = pageIncidents([many], new Set(["website"]), NOW);
    expect(shown?.updates).toHaveLength(MAX_SHOWN_UPDATES);
    expect(shown?.updates[0]?.message).toBe("m7");
    expect(shown?.earlier).toBe(8 - MAX_SHOWN_UPDATES);
    expect(shown?.checks).toEqual(["website"]);
    const resolved = incident("done", ["investigating", NOW - 2_000], ["resolved", NOW - 1_000]);
    expect(pageIncidents([resolved], new Set(), NOW)[0]).toMatchObject({ updates: [{ message: "m1" }], earlier: 1 });
    const long = "é".repeat(MAX_SHOWN_MESSAGE + 10);
    expect(shortened(long)).toBe(`${"é".repeat(MAX_SHOWN_MESSAGE)}…`);
    // Never cut inside a surrogate pair.
    const astral = `${"x".repeat(MAX_SHOWN_MESSAGE - 1)}𝄞 and more`;
    expect(shortened(astral)).toBe(`${"x".repeat(MAX_SHOWN_MESSAGE - 1)}…`);
  });
});
