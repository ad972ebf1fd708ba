/**
 * Maintenance windows on the status page: which windows the data lists (ongoing or within 7 days,
 * of shown checks, naming only those), how the server says them in text in the page's header, and
 * what they add to the page's weight.
 */
import { describe, expect, it } from "vitest";
import { MaintenanceCalendar } from "../../../src/healthchecks/maintenance/calendar.js";
import { assembleStatus, MAX_SHOWN_WINDOWS, shownWindows } from "../../../src/healthchecks/status-page/data.js";
import { maintenanceHtml, renderStatusPage, windowSpan } from "../../../src/healthchecks/status-page/html.js";
import { type StatusData, statusView } from "../../../src/healthchecks/status-page/view.js";
import { check, DAY, HOUR, NOW, result } from "./fixtures.js";

const shown = [check("website", { team: "web" }), check("api", { team: "web" })];

function calendar(): MaintenanceCalendar {
  const windows = new MaintenanceCalendar(() => undefined);
  windows.setApi([
    { name: "now", checks: ["team=web", "secret-check-x9"], startMs: NOW - HOUR, endMs: NOW + HOUR },
    { name: "soon", checks: ["api"], startMs: NOW + 6 * DAY, endMs: NOW + 6 * DAY + HOUR },
    { name: "too-late", checks: ["api"], startMs: NOW + 8 * DAY, endMs: NOW + 8 * DAY + HOUR },
    { name: "over", checks: ["api"], startMs: NOW - 2 * HOUR, endMs: NOW - HOUR },
    { name: "elsewhere", checks: ["secret-check-x9"], startMs: NOW, endMs: NOW + HOUR },
  ]);
  return windows;
}

function data(): StatusData {
  const results = { get: (name: string) => result(name, true) };
  return assembleStatus({ title: "Acme", results, retentionMs: 0, maintenance: calendar() }, shown, new Map(), NOW);
}

describe("maintenance windows on the status page", () => {
  it("lists the windows of shown checks, ongoing or within 7 days, naming only shown checks", () => {
    expect(data().maintenance).toEqual([
      {
        name: "now",
        start: new Date(NOW - HOUR).toISOString(),
        end: new Date(NOW + HOUR).toISOString(),
        ongoing: true,
        checks: ["website", "api"],
      },
      {
        name: "soon",
        start: new Date(NOW + 6 * DAY).toISOString(),
        end: new Date(NOW + 6 * DAY + HOUR).toISOString(),
        ongoing: false,
        checks: ["api"],
      },
    ]);
    expect(shownWindows(undefined, shown, NOW)).toEqual([]);
    expect(shownWindows(calendar(), [], NOW)).toEqual([]);
  });

  it("shows at most 10 windows", () => {
    const many = new MaintenanceCalendar(() => undefined);
    many.setApi(
      Array.from({ length: 30 }, (_, index) => ({
        name: `w${index}`,
        checks: ["api"],
        startMs: NOW + index * HOUR,
        endMs: NOW + (index + 1) * HOUR,
      })),
    );
    expect(shownWindows(many, shown, NOW)).toHaveLength(MAX_SHOWN_WINDOWS);
    expect(MAX_SHOWN_WINDOWS).toBe(10);
  });

  it("says them in text in the page's header, rendered by the server alone", () => {
    const page = renderStatusPage(data(), { refreshMs: 30_000, script: false });
    expect(page).toContain(
      '<p id="notice" class="notice" role="status"></p><section class="maintenance"><h2>Maintenance</h2><ul>' +
        "<li><strong>now</strong>: ongoing until 2026-05-10 13:00 UTC, for website, api.</li>" +
        "<li><strong>soon</strong>: 2026-05-16 12:00 to 13:00 UTC, for api.</li></ul></section></header>",
    );
    expect(page).not.toContain("secret-check-x9");
    // The refresh script rebuilds <main> alone: the windows are not in its view.
    expect(JSON.stringify(statusView(data()))).not.toContain("Maintenance");
    const none = renderStatusPage({ ...data(), maintenance: [] }, { refreshMs: 30_000, script: false });
    expect(none).not.toContain("Maintenance");
  });

  it("say when they are in one reading: the end's day only when it differs", () => {
    const start = "2026-05-16T23:00:00.000Z";
    expect(windowSpan({ start, end: "2026-05-17T01:00:00.000Z", ongoing: false })).toBe(
      "2026-05-16 23:00 UTC to 2026-05-17 01:00 UTC",
    );
    expect(windowSpan({ start, end: "2026-05-16T23:30:00.000Z", ongoing: false })).toBe(
      "2026-05-16 23:00 to 23:30 UTC",
    );
    expect(windowSpan({ start, end: "2026-05-17T01:00:00.000Z", ongoing: true })).toBe(
      "ongoing until 2026-05-17 01:00 UTC",
    );
  });

  it("escape names", () => {
    const html = maintenanceHtml([
      {
        name: "<b>",
        start: "2026-05-16T23:00:00.000Z",
        end: "2026-05-17T01:00:00.000Z",
        ongoing: true,
        checks: ["a&b"],
      },
    ]);
    expect(html).toContain("<strong>&lt;b&gt;</strong>");
    expect(html).toContain("for a&amp;b.");
  });

  it("weigh little: 10 windows add under 1.5 kB to the page", () => {
    const bare = renderStatusPage({ ...data(), maintenance: [] }, { refreshMs: 30_000, script: true });
    const full = renderStatusPage(
      {
        ...data(),
        maintenance: Array.from({ length: MAX_SHOWN_WINDOWS }, (_, index) => ({
          name: `maintenance-window-${index}`,
          start: new Date(NOW + index * HOUR).toISOString(),
          end: new Date(NOW + (index + 1) * HOUR).toISOString(),
          ongoing: index === 0,
          checks: ["website", "api"],
        })),
      },
      { refreshMs: 30_000, script: true },
    );
    const added = Buffer.byteLength(full) - Buffer.byteLength(bare);
    console.log(`${MAX_SHOWN_WINDOWS} maintenance windows add ${added} bytes to the status page`);
    expect(added).toBeLessThan(1_500);
  });
});
