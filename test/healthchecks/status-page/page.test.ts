/**
 * The status page's domain without a server (healthchecks.md §9.3): selectors, the data gathered
 * from checks, results and a history (a fake one here, so every day and slice is known), the view
 * and its HTML (grouping, states as text, escaping, nothing leaked), the data guard.
 */
import { describe, expect, it } from "vitest";
import type { DailyUptime, ResponseTimePoint, Uptime } from "../../../src/healthchecks/history-views.js";
import {
  assembleStatus,
  barDays,
  collectStatus,
  lastDays,
  readHistories,
  responseSlices,
  type StatusCandidate,
  type StatusHistory,
  type StatusSources,
  shownPeriods,
} from "../../../src/healthchecks/status-page/data.js";
import { renderHtml, renderStatusPage, STATUS_CSP, STATUS_CSS } from "../../../src/healthchecks/status-page/html.js";
import { loadStatusScript } from "../../../src/healthchecks/status-page/script.js";
import { parseSelector, selectChecks, unmatchedReason } from "../../../src/healthchecks/status-page/selectors.js";
import {
  chartPath,
  daysSummary,
  formatDuration,
  formatPercent,
  formatSpan,
  formatUtc,
  h,
  isStatusData,
  type StatusData,
  statusView,
} from "../../../src/healthchecks/status-page/view.js";

const NOW = Date.parse("2026-05-10T12:00:00.000Z");
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

function check(name: string, labels?: Record<string, string>, description = ""): StatusCandidate {
  return {
    definition: { name, description, ...(labels === undefined ? {} : { labels }) },
    ...(labels ? { labels } : {}),
  };
}

/** A latest result, message included (the page must not show it). */
function result(name: string, success: boolean, message = "success") {
  return { name, success, timestamp: new Date(NOW - 5_000).toISOString(), message, duration: 12 };
}

/** A history where every check was up 99.5% of each day, and answers 20 ms every 10 minutes. */
function fakeHistory(overrides: Partial<StatusHistory> = {}): StatusHistory {
  return {
    uptime: async (): Promise<Uptime> => ({ "1h": 1, "24h": 0.995, "7d": 0.999, "30d": 1, incidents: [] }),
    daily: async (names, days, nowMs) =>
      new Map<string, DailyUptime[]>(
        names.map((name) => [name, lastDays(days, nowMs).map((day) => ({ day, ratio: 0.995 }))]),
      ),
    responseTimes: async (_name, sinceMs, nowMs): Promise<ResponseTimePoint[]> => {
      const points: ResponseTimePoint[] = [];
      for (let time = sinceMs + 600_000; time <= nowMs; time += 600_000) points.push({ time, duration: 20 });
      return points;
    },
    stateSince: async (_name, nowMs) => nowMs - 3 * HOUR - 5 * 60_000,
    ...overrides,
  };
}

function sources(overrides: Partial<StatusSources> = {}): StatusSources {
  const checks = [
    check("api", { group: "Back end", team: "web" }, "The public API"),
    check("db", { group: "Back end" }),
    check("website", { group: "Front end", team: "web" }, "What visitors see"),
    check("batch"),
  ];
  const results = new Map([
    ["api", result("api", false, "HTTP request failed: status 500")],
    ["website", result("website", true)],
    ["batch", result("batch", true)],
  ]);
  return {
    title: "Acme",
    selectors: [],
    checks: () => checks,
    results: { get: (name) => results.get(name) },
    history: fakeHistory(),
    retentionMs: 90 * DAY,
    ...overrides,
  };
}

describe("selectors", () => {
  const checks = [check("a=b"), check("api", { team: "web" }), check("db"), check("website", { team: "web" })];

  it("parses names and label selectors (split at the first =)", () => {
    expect(parseSelector("website")).toEqual({ kind: "name", name: "website" });
    expect(parseSelector("team=web")).toEqual({ kind: "label", label: "team", value: "web", text: "team=web" });
    expect(parseSelector("url=a=b")).toMatchObject({ label: "url", value: "a=b" });
  });

  it("selects in the order of the selectors, each check once; an empty list selects every check", () => {
    const names = (selectors: string[]) =>
      selectChecks(selectors.map(parseSelector), checks).map((selected) => selected.definition.name);
    expect(names(["db", "team=web", "website"])).toEqual(["db", "api", "website"]);
    expect(names([])).toEqual(["a=b", "api", "db", "website"]);
    expect(names(["team=ops"])).toEqual([]);
    // A check whose name holds = is selected by its name too.
    expect(names(["a=b"])).toEqual(["a=b"]);
  });

  it("says why a selector selects nothing", () => {
    expect(unmatchedReason(parseSelector("nope"), checks)).toBe("selects no healthcheck: no check is named nope");
    expect(unmatchedReason(parseSelector("team=ops"), checks)).toBe(
      "selects no healthcheck: no check has the label team=ops",
    );
    expect(unmatchedReason(parseSelector("team=web"), checks)).toBeUndefined();
  });
});

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

describe("the view and its HTML", () => {
  it("renders the title, a heading per group, states as text and a live region, in English", async () => {
    const data = await collectStatus(sources(), NOW);
    const html = renderStatusPage(data, { refreshMs: 30_000, script: true });
    expect(html).toMatch(/^<!doctype html><html lang="en">/);
    expect(html).toContain("<title>Acme</title>");
    expect(html).toContain("<h1>Acme</h1>");
    expect(html.match(/<h2>[^<]*<\/h2>/g)).toEqual([
      "<h2>Back end</h2>",
      "<h2>Front end</h2>",
      "<h2>Other services</h2>",
    ]);
    expect(html).toContain('<main id="status" data-refresh-ms="30000">');
    expect(html).toContain('<script src="/status/status.js" defer></script>');
    expect(html).toContain('role="status"');
    expect(html).toContain('<p class="state down"><span aria-hidden="true">✕</span> Down</p>');
    expect(html).toContain('<p class="state up"><span aria-hidden="true">✓</span> Operational</p>');
    expect(html).toContain('<p class="state unknown"><span aria-hidden="true">?</span> No data</p>');
    expect(html).toContain("Operational for 3 h 5 min, since <time");
    expect(html).toContain('<p class="summary down"><span aria-hidden="true">✕</span> 1 of 4 checks is down</p>');
    expect(html).toContain("<dt>Uptime 24 hours</dt><dd>99.50%</dd>");
    expect(html).toContain('<li class="u3" title="2026-05-10 99.50%"></li>');
    expect(html).toContain("Daily uptime of the last 90 days: 0 days at 100%, 90 days below (lowest 99.50% on");
    expect(html).toContain("Response time, last 24 hours: 20 ms on average, 20 ms at most.");
    // Without groups, the checks are "Services"; with none selected, the page says so.
    const flat = renderStatusPage(await collectStatus(sources({ checks: () => [check("solo")] }), NOW), {
      refreshMs: 1_000,
      script: false,
    });
    expect(flat).toContain("<h2>Services</h2>");
    expect(flat).not.toContain("<script");
    const empty = await collectStatus(sources({ selectors: [parseSelector("team=none")] }), NOW);
    expect(renderStatusPage(empty, { refreshMs: 1_000, script: false })).toContain("No checks to show");
  });

  it("escapes every name, description, group and title", async () => {
    const hostile = "<img src=x onerror=alert(1)>&\"'";
    const data = await collectStatus(
      sources({ title: hostile, checks: () => [check(hostile, { group: hostile }, hostile)] }),
      NOW,
    );
    const html = renderStatusPage(data, { refreshMs: 30_000, script: true });
    expect(html).not.toContain("<img");
    expect(html).not.toContain("\"'");
    const escaped = "&lt;img src=x onerror=alert(1)&gt;&amp;&quot;&#39;";
    expect(html).toContain(`<title>${escaped}</title>`);
    expect(html).toContain(`<h2>${escaped}</h2>`);
    expect(html).toContain(`<h3>${escaped}</h3>`);
    expect(html).toContain(`data-name="${escaped}"`);
    expect(renderHtml(h("p", { title: 'a"b' }, "<x>"))).toBe('<p title="a&quot;b">&lt;x&gt;</p>');
  });

  it("shows nothing of a check but its name, description, group, state and uptime", async () => {
    const secretive: StatusCandidate & { definition: Record<string, unknown> } = {
      definition: {
        name: "api",
        description: "The API",
        target: "leak-target.example",
        path: "/leak-path",
        headers: { "X-Leak": "leak-header" },
        labels: { group: "Back end", owner: "leak-label" },
      },
      labels: { group: "Back end", owner: "leak-label" },
    };
    const data = await collectStatus(
      sources({
        checks: () => [secretive],
        results: { get: () => result("api", false, "HTTP request failed: leak-message") },
      }),
      NOW,
    );
    const answers = [JSON.stringify(data), renderStatusPage(data, { refreshMs: 30_000, script: true })];
    for (const answer of answers) {
      for (const secret of [
        "leak-target",
        "leak-path",
        "leak-header",
        "leak-label",
        "leak-message",
        "owner",
        "db.internal",
      ]) {
        expect(answer).not.toContain(secret);
      }
      expect(answer).toContain("Back end");
    }
  });

  it("keeps adjacent text together, as the browser's parser will", () => {
    expect(h("p", {}, "a", "", "b", false, h("i"), undefined, "c")).toEqual({
      tag: "p",
      attributes: {},
      children: ["ab", { tag: "i", attributes: {}, children: [] }, "c"],
    });
  });

  it("draws the chart in the view box, breaking over gaps; a lone point is a dot", () => {
    const generated = new Date(NOW).toISOString();
    const at = (hoursAgo: number, duration: number) => ({
      time: new Date(NOW - hoursAgo * HOUR).toISOString(),
      duration,
    });
    expect(chartPath([at(24, 10), at(23.75, 20), at(23.5, 5), at(1, 20)], generated)).toBe("M0 20h0L2 2L4 29M184 2h0");
    expect(chartPath([], generated)).toBe("");
  });

  it("formats figures for people", () => {
    expect([formatPercent(1), formatPercent(0.99999), formatPercent(0.5), formatPercent(0)]).toEqual([
      "100%",
      "99.99%",
      "50.00%",
      "0.00%",
    ]);
    expect([formatSpan(30_000), formatSpan(12 * 60_000), formatSpan(2 * HOUR), formatSpan(2 * HOUR + 60_000)]).toEqual([
      "less than a minute",
      "12 min",
      "2 h",
      "2 h 1 min",
    ]);
    expect([formatSpan(3 * DAY), formatSpan(3 * DAY + 4 * HOUR)]).toEqual(["3 d", "3 d 4 h"]);
    expect([formatDuration(0.84), formatDuration(35.4), formatDuration(1_250)]).toEqual(["0.8 ms", "35 ms", "1.25 s"]);
    expect(formatUtc("2026-05-10T12:03:04.500+02:00", true)).toBe("2026-05-10 10:03:04 UTC");
    expect(
      daysSummary([
        { day: "2026-05-08", ratio: 1 },
        { day: "2026-05-09", ratio: 0.9 },
        { day: "2026-05-10", ratio: null },
      ]),
    ).toBe(
      "Daily uptime of the last 3 days: 1 day at 100%, 1 day below (lowest 90.00% on 2026-05-09), 1 day without data.",
    );
  });

  it("renders in the browser the same view as on the server", async () => {
    const data = await collectStatus(sources(), NOW);
    const html = renderStatusPage(data, { refreshMs: 30_000, script: true });
    expect(html).toContain(
      `<main id="status" data-refresh-ms="30000">${statusView(data).map(renderHtml).join("")}</main>`,
    );
  });
});

describe("the data guard", () => {
  it("accepts the page's data and refuses anything else", async () => {
    const data: StatusData = await collectStatus(sources(), NOW);
    expect(isStatusData(JSON.parse(JSON.stringify(data)))).toBe(true);
    const broken = (change: (copy: Record<string, unknown>) => void) => {
      const copy = JSON.parse(JSON.stringify(data));
      change(copy);
      return isStatusData(copy);
    };
    expect(broken((copy) => delete copy.title)).toBe(false);
    expect(broken((copy) => (copy.days = -1))).toBe(false);
    expect(broken((copy) => (copy.periods = ["1y"]))).toBe(false);
    expect(broken((copy) => (copy.groups = [{ name: 1, checks: [] }]))).toBe(false);
    const first = data.groups[0]?.checks[0];
    expect(broken((copy) => (copy.groups = [{ name: null, checks: [{ ...first, state: "green" }] }]))).toBe(false);
    expect(broken((copy) => (copy.groups = [{ name: null, checks: [{ ...first, daily: [{ day: 1 }] }] }]))).toBe(false);
    expect(broken((copy) => (copy.groups = [{ name: null, checks: [{ ...first, uptime: { "24h": 2 } }] }]))).toBe(
      false,
    );
    expect(broken((copy) => (copy.groups = [{ name: null, checks: [{ ...first }] }]))).toBe(true);
    expect(isStatusData(null)).toBe(false);
  });
});

describe("the page's style and script", () => {
  it("allows the inline style by its hash, and nothing from another origin", async () => {
    const { createHash } = await import("node:crypto");
    const hash = createHash("sha256").update(STATUS_CSS).digest("base64");
    expect(STATUS_CSP).toBe(
      `default-src 'none'; script-src 'self'; style-src 'sha256-${hash}'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
    );
    expect(STATUS_CSS).not.toMatch(/url\(|@import/);
  });

  it("reads no script when none was built", async () => {
    expect(await loadStatusScript(new URL("file:///nonexistent/status.js"))).toBeUndefined();
  });
});
