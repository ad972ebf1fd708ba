/**
 * The status page's view and its HTML (grouping, states as text, escaping, nothing leaked), and
 * the data guard.
 */
import { describe, expect, it } from "vitest";
import { collectStatus, type StatusCandidate } from "../../../src/healthchecks/status-page/data.js";
import { renderHtml, renderStatusPage } from "../../../src/healthchecks/status-page/html.js";
import { parseSelector } from "../../../src/healthchecks/status-page/selectors.js";
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
import { check, DAY, HOUR, NOW, result, sources } from "./fixtures.js";

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
    expect(html).toContain('<main id="status" data-source="/status/data" data-refresh-ms="30000">');
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
      `<main id="status" data-source="/status/data" data-refresh-ms="30000">${statusView(data).map(renderHtml).join("")}</main>`,
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
