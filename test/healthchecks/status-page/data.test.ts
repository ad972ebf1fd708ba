/**
 * The status page's data gathered from checks, results and a (fake) history.
 */
import { describe, expect, it } from "vitest";
import {
  assembleStatus,
  barDays,
  collectStatus,
  lastDays,
  readHistories,
  responseSlices,
  shownPeriods,
} from "../../../src/healthchecks/status-page/data.js";
import { parseSelector } from "../../../src/healthchecks/status-page/selectors.js";
import { isStatusData } from "../../../src/healthchecks/status-page/view.js";
import { DAY, fakeHistory, HOUR, NOW, result, sources } from "./fixtures.js";

describe("the page's data", () => {
  it("groups the selected checks by their group label, ungrouped ones last, with their states", async () => {
    const data = await collectStatus(
      sources({ selectors: ["website", "team=web", "db", "batch"].map(parseSelector) }),
      NOW,
    );
    expect(data.groups.map((group) => [group.name, group.checks.map((c) => [c.name, c.state])])).toEqual([
      ["Front end", [["website", "up"]]],
      [
        "Back end",
        [
          ["api", "down"],
          ["db", "unknown"],
        ],
      ],
      [null, [["batch", "up"]]],
    ]);
    expect(data).toMatchObject({ title: "Acme", generated: "2026-05-10T12:00:00.000Z", days: 90 });
    const website = data.groups[0]?.checks[0];
    expect(website).toMatchObject({
      description: "What visitors see",
      since: new Date(NOW - 3 * HOUR - 5 * 60_000).toISOString(),
      checked: new Date(NOW - 5_000).toISOString(),
      uptime: { "24h": 0.995, "7d": 0.999, "30d": 1 },
    });
    expect(website?.daily).toHaveLength(90);
    expect(website?.daily.at(-1)).toEqual({ day: "2026-05-10", ratio: 0.995 });
    expect(website?.daily[0]).toEqual({ day: "2026-02-10", ratio: 0.995 });
    // A check without a result has no "since", whatever the history says.
    expect(data.groups[1]?.checks[1]).toMatchObject({ name: "db", since: null, checked: null });
    expect(isStatusData(data)).toBe(true);
  });

  it("shows the periods and days the retention covers, and no history without retention", async () => {
    expect([barDays(0), barDays(12 * HOUR), barDays(168 * HOUR), barDays(365 * DAY)]).toEqual([0, 1, 7, 90]);
    expect(shownPeriods(0)).toEqual([]);
    expect(shownPeriods(12 * HOUR)).toEqual(["24h"]);
    expect(shownPeriods(168 * HOUR)).toEqual(["24h", "7d"]);
    expect(shownPeriods(30 * DAY)).toEqual(["24h", "7d", "30d"]);

    let read = 0;
    const counting = fakeHistory({
      uptime: async () => {
        read += 1;
        return { "1h": null, "24h": null, "7d": null, "30d": null, incidents: [] };
      },
    });
    const none = await collectStatus(sources({ retentionMs: 0, history: counting }), NOW);
    expect(read).toBe(0);
    expect(none).toMatchObject({ days: 0, periods: [] });
    expect(none.groups[0]?.checks[0]).toMatchObject({ uptime: {}, daily: [], "response-times": [] });
    const week = await collectStatus(sources({ retentionMs: 168 * HOUR }), NOW);
    expect(week.groups[0]?.checks[0]?.daily.map((day) => day.day)).toEqual(lastDays(7, NOW));
    expect(Object.keys(week.groups[0]?.checks[0]?.uptime ?? {})).toEqual(["24h", "7d"]);
  });

  it("tells since when a state holds only for the state the history saw", async () => {
    const source = sources();
    const selected = source.checks();
    const histories = await readHistories(source, ["website", "api"], NOW);
    expect(histories.get("website")?.since).toEqual({ ms: NOW - 3 * HOUR - 5 * 60_000, success: true });
    // The history was read while website was up and api down; then both changed.
    const flipped = { get: (name: string) => result(name, name === "api") };
    const data = assembleStatus({ ...source, results: flipped }, selected, histories, NOW + 5_000);
    const byName = new Map(data.groups.flatMap((group) => group.checks).map((c) => [c.name, c]));
    expect(byName.get("website")).toMatchObject({ state: "down", since: null });
    expect(byName.get("api")).toMatchObject({ state: "up", since: null });
    // A check the history was not read for yet has none, but its state.
    expect(byName.get("batch")).toMatchObject({ state: "down", since: null, "response-times": [] });
    expect(byName.get("batch")?.daily.every((day) => day.ratio === null)).toBe(true);
  });

  it("places the history's days by their date, not by their position", async () => {
    const history = fakeHistory({
      daily: async (names) => new Map(names.map((name) => [name, [{ day: "2026-05-08", ratio: 0.5 }]])),
    });
    const data = await collectStatus(sources({ history, retentionMs: 7 * DAY }), NOW);
    expect(data.groups[0]?.checks[0]?.daily).toEqual([
      { day: "2026-05-04", ratio: null },
      { day: "2026-05-05", ratio: null },
      { day: "2026-05-06", ratio: null },
      { day: "2026-05-07", ratio: null },
      { day: "2026-05-08", ratio: 0.5 },
      { day: "2026-05-09", ratio: null },
      { day: "2026-05-10", ratio: null },
    ]);
  });

  it("averages response times over 15-minute slices of the last 24 hours", () => {
    const slices = responseSlices(
      [
        { time: NOW - 25 * HOUR, duration: 1_000 },
        { time: NOW - 20 * 60_000, duration: 10 },
        { time: NOW - 16 * 60_000, duration: 20 },
        { time: NOW - 60_000, duration: 40.04 },
        { time: NOW + 60_000, duration: 1_000 },
      ],
      NOW,
    );
    expect(slices).toEqual([
      { time: "2026-05-10T11:37:30.000Z", duration: 15 },
      { time: "2026-05-10T11:52:30.000Z", duration: 40 },
    ]);
  });
});
