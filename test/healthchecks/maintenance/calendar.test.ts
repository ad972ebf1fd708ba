/**
 * The maintenance calendar (src/healthchecks/maintenance/calendar.ts) with a controlled clock:
 * every question carries its time. Weekly shorthands and cron expressions in a time zone, the
 * daylight-saving changes of Europe/Paris, API spans, selectors by name and label, the caches.
 */
import { describe, expect, it } from "vitest";
import { type ApiWindow, MaintenanceCalendar } from "../../../src/healthchecks/maintenance/calendar.js";
import { type ConfiguredWindow, cronOf, maintenanceWindows } from "../../../src/healthchecks/maintenance/config.js";
import type { SelectableCheck } from "../../../src/healthchecks/status-page/selectors.js";

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const at = (text: string) => Date.parse(text);

/** Configured windows, validated as the configuration file's are. */
function configured(...windows: Record<string, unknown>[]): ConfiguredWindow[] {
  return maintenanceWindows(windows, "healthchecks.maintenance");
}

/** A calendar over `checks` (by name), with `windows` configured. */
function calendarOf(windows: ConfiguredWindow[], checks: SelectableCheck[] = []): MaintenanceCalendar {
  const byName = new Map(checks.map((check) => [check.definition.name, check]));
  const calendar = new MaintenanceCalendar((name) => byName.get(name));
  calendar.setConfigured(windows);
  return calendar;
}

describe("the weekly shorthand", () => {
  it("becomes a cron expression; anything else is taken as one", () => {
    expect(cronOf("sun 02:00")).toBe("0 2 * * 0");
    expect(cronOf("Mon 9:05")).toBe("5 9 * * 1");
    expect(cronOf("sat 23:59")).toBe("59 23 * * 6");
    expect(cronOf("30 1 * * 1-5")).toBe("30 1 * * 1-5");
    expect(cronOf("sun 24:00")).toBe("sun 24:00");
  });
});

describe("a weekly window in Europe/Paris", () => {
  const windows = configured({
    name: "nightly",
    checks: ["db"],
    start: "sun 02:00",
    duration: "1h",
    timezone: "Europe/Paris",
  });

  it("covers [start, start + duration) in local time (UTC+1 in winter, UTC+2 in summer)", () => {
    const calendar = calendarOf(windows);
    // Sunday 2026-03-22, winter time: 02:00 in Paris is 01:00Z.
    expect(calendar.inMaintenance("db", at("2026-03-22T00:59:59.999Z"))).toBe(false);
    expect(calendar.inMaintenance("db", at("2026-03-22T01:00:00.000Z"))).toBe(true);
    expect(calendar.inMaintenance("db", at("2026-03-22T01:59:59.999Z"))).toBe(true);
    expect(calendar.inMaintenance("db", at("2026-03-22T02:00:00.000Z"))).toBe(false);
    // Sunday 2026-04-12, summer time: 02:00 in Paris is 00:00Z.
    expect(calendar.inMaintenance("db", at("2026-04-12T00:30:00Z"))).toBe(true);
    expect(calendar.inMaintenance("db", at("2026-04-12T01:30:00Z"))).toBe(false);
    // Another check, and another day.
    expect(calendar.inMaintenance("web", at("2026-04-12T00:30:00Z"))).toBe(false);
    expect(calendar.inMaintenance("db", at("2026-04-13T00:30:00Z"))).toBe(false);
  });

  it("on the spring change, 02:00 does not exist: the window opens at 03:00 summer time and lasts an hour", () => {
    const calendar = calendarOf(windows);
    // 2026-03-29: clocks go from 02:00 to 03:00 at 01:00Z.
    expect(calendar.inMaintenance("db", at("2026-03-29T00:59:00Z"))).toBe(false);
    expect(calendar.inMaintenance("db", at("2026-03-29T01:00:00Z"))).toBe(true);
    expect(calendar.inMaintenance("db", at("2026-03-29T01:59:00Z"))).toBe(true);
    expect(calendar.inMaintenance("db", at("2026-03-29T02:00:00Z"))).toBe(false);
    expect(calendar.windows(at("2026-03-28T00:00:00Z"), at("2026-04-06T00:00:00Z"), 5)).toEqual([
      expect.objectContaining({
        name: "nightly",
        startMs: at("2026-03-29T01:00:00Z"),
        endMs: at("2026-03-29T02:00:00Z"),
      }),
      // The next Sunday, in summer time: 02:00 is 00:00Z.
      expect.objectContaining({ startMs: at("2026-04-05T00:00:00Z"), endMs: at("2026-04-05T01:00:00Z") }),
    ]);
  });

  it("on the autumn change, 02:00 happens twice: the window opens once, at the first, for an hour of real time", () => {
    const calendar = calendarOf(windows);
    // 2026-10-25: clocks go back from 03:00 summer time to 02:00 at 01:00Z.
    expect(calendar.inMaintenance("db", at("2026-10-24T23:59:00Z"))).toBe(false);
    expect(calendar.inMaintenance("db", at("2026-10-25T00:00:00Z"))).toBe(true);
    expect(calendar.inMaintenance("db", at("2026-10-25T00:59:59Z"))).toBe(true);
    // The second 02:00 (winter time) opens nothing.
    expect(calendar.inMaintenance("db", at("2026-10-25T01:00:00Z"))).toBe(false);
    expect(calendar.inMaintenance("db", at("2026-10-25T01:30:00Z"))).toBe(false);
    expect(calendar.windows(at("2026-10-24T00:00:00Z"), at("2026-11-02T00:00:00Z"), 5).map((o) => o.startMs)).toEqual([
      at("2026-10-25T00:00:00Z"),
      at("2026-11-01T01:00:00Z"),
    ]);
  });

  it("answers the same whatever order the times come in (the cache holds a span, not a moment)", () => {
    const calendar = calendarOf(windows);
    const times = [
      "2026-03-22T01:30:00Z",
      "2026-03-22T00:30:00Z",
      "2026-03-29T01:30:00Z",
      "2026-03-22T01:00:00Z",
      "2026-03-22T02:00:00Z",
      "2026-03-15T01:10:00Z",
    ];
    const expected = [true, false, true, true, false, true];
    expect(times.map((time) => calendar.inMaintenance("db", at(time)))).toEqual(expected);
    expect(times.map((time) => calendarOf(windows).inMaintenance("db", at(time)))).toEqual(expected);
  });
});

describe("cron expressions", () => {
  it("run in their time zone (UTC by default), day of month and weekday combined with OR", () => {
    const calendar = calendarOf(
      configured(
        { name: "weekdays", checks: ["a"], start: "30 22 * * 1-5", duration: "30m" },
        { name: "first-or-friday", checks: ["b"], start: "0 12 1 * 5", duration: "1h", timezone: "America/New_York" },
      ),
    );
    expect(calendar.inMaintenance("a", at("2026-05-11T22:45:00Z"))).toBe(true); // a Monday
    expect(calendar.inMaintenance("a", at("2026-05-10T22:45:00Z"))).toBe(false); // a Sunday
    // Noon in New York (UTC-4 in May) on the 1st (a Friday) and on Friday the 8th.
    expect(calendar.inMaintenance("b", at("2026-05-01T16:30:00Z"))).toBe(true);
    expect(calendar.inMaintenance("b", at("2026-05-08T16:30:00Z"))).toBe(true);
    expect(calendar.inMaintenance("b", at("2026-05-07T16:30:00Z"))).toBe(false);
  });

  it("that overlap keep the check in maintenance from the first start to the last end", () => {
    // Every 10 minutes for 15 minutes: always on.
    const calendar = calendarOf(configured({ name: "often", checks: ["a"], start: "*/10 * * * *", duration: "15m" }));
    const start = at("2026-05-11T10:00:00Z");
    for (let time = start; time < start + HOUR; time += 7 * MINUTE) {
      expect(calendar.inMaintenance("a", time)).toBe(true);
    }
  });
});

describe("selectors", () => {
  const checks: SelectableCheck[] = [
    { definition: { name: "db", labels: { team: "data" } } },
    { definition: { name: "web", labels: { team: "web" } } },
    { definition: { name: "api" } },
  ];
  const span: ApiWindow = {
    name: "upgrade",
    checks: ["team=data", "api"],
    startMs: at("2026-05-11T10:00:00Z"),
    endMs: at("2026-05-11T11:00:00Z"),
  };

  it("select checks by name or label, as on the status page", () => {
    const calendar = calendarOf([], checks);
    calendar.setApi([span]);
    const inside = at("2026-05-11T10:30:00Z");
    expect(["db", "web", "api", "unknown"].map((name) => calendar.inMaintenance(name, inside))).toEqual([
      true,
      false,
      true,
      false,
    ]);
  });

  it("follow a check whose labels change, and windows replaced", () => {
    const byName = new Map(checks.map((check) => [check.definition.name, check]));
    const calendar = new MaintenanceCalendar((name) => byName.get(name));
    calendar.setApi([span]);
    const inside = at("2026-05-11T10:30:00Z");
    expect(calendar.inMaintenance("web", inside)).toBe(false);
    // A new definition of web, now in team data.
    byName.set("web", { definition: { name: "web", labels: { team: "data" } } });
    expect(calendar.inMaintenance("web", inside)).toBe(true);
    calendar.setApi([]);
    expect(calendar.inMaintenance("web", inside)).toBe(false);
    expect(calendar.inMaintenance("db", inside)).toBe(false);
  });
});

describe("API windows", () => {
  it("cover [start, end) once", () => {
    const calendar = calendarOf([]);
    calendar.setApi([{ name: "once", checks: ["a"], startMs: 1_000_000, endMs: 2_000_000 }]);
    expect([999_999, 1_000_000, 1_999_999, 2_000_000].map((time) => calendar.inMaintenance("a", time))).toEqual([
      false,
      true,
      true,
      false,
    ]);
    expect(calendar.windows(0, 10_000_000, 3)).toEqual([
      { name: "once", source: "api", selectors: [{ kind: "name", name: "a" }], startMs: 1_000_000, endMs: 2_000_000 },
    ]);
    expect(calendar.windows(2_000_000, 10_000_000)).toEqual([]);
  });

  it("give way to a configured window of the same name", () => {
    const calendar = calendarOf(configured({ name: "same", checks: ["a"], start: "sun 02:00", duration: "1h" }));
    calendar.setApi([{ name: "same", checks: ["b"], startMs: 0, endMs: Number.MAX_SAFE_INTEGER }]);
    expect(calendar.inMaintenance("b", at("2026-05-12T00:00:00Z"))).toBe(false);
    expect(calendar.isConfigured("same")).toBe(true);
    expect(calendar.describe(0).map((state) => state.source)).toEqual(["configuration"]);
  });
});

describe("describe and windows", () => {
  it("say which window is ongoing, its occurrence, and the next one", () => {
    const calendar = calendarOf(
      configured({ name: "nightly", checks: ["db"], start: "0 2 * * *", duration: "2h", timezone: "UTC" }),
    );
    calendar.setApi([
      { name: "later", checks: ["web"], startMs: at("2026-05-20T00:00:00Z"), endMs: at("2026-05-21T00:00:00Z") },
    ]);
    const now = at("2026-05-11T03:00:00Z");
    expect(calendar.describe(now)).toEqual([
      expect.objectContaining({
        name: "nightly",
        source: "configuration",
        checks: ["db"],
        current: { startMs: at("2026-05-11T02:00:00Z"), endMs: at("2026-05-11T04:00:00Z") },
        next: { startMs: at("2026-05-12T02:00:00Z"), endMs: at("2026-05-12T04:00:00Z") },
      }),
      expect.objectContaining({
        name: "later",
        source: "api",
        next: { startMs: at("2026-05-20T00:00:00Z"), endMs: at("2026-05-21T00:00:00Z") },
      }),
    ]);
    expect(calendar.describe(now)[1]).not.toHaveProperty("current");
    // One occurrence of each within 7 days, soonest first: the ongoing one, then none of later (day 9).
    expect(calendar.windows(now, now + 7 * 24 * HOUR).map((o) => [o.name, o.startMs])).toEqual([
      ["nightly", at("2026-05-11T02:00:00Z")],
    ]);
    expect(calendar.windows(now, now + 10 * 24 * HOUR).map((o) => o.name)).toEqual(["nightly", "later"]);
  });

  it("cost nothing without windows", () => {
    const calendar = calendarOf([]);
    expect(calendar.inMaintenance("a", Date.now())).toBe(false);
    expect(calendar.windows(0, Number.MAX_SAFE_INTEGER)).toEqual([]);
    expect(calendar.describe(0)).toEqual([]);
  });
});
