/**
 * What badges say (src/healthchecks/badges/values.ts): which checks have badges, the colour
 * thresholds, the wording of percentages and durations, and shields.io's endpoint format.
 */
import { describe, expect, it } from "vitest";
import {
  BADGE_SUBJECTS,
  durationText,
  hasBadge,
  percentText,
  responseTimeBadge,
  responseTimeColor,
  shieldsEndpoint,
  statusBadge,
  subjectPath,
  uptimeBadge,
  uptimeColor,
} from "../../../src/healthchecks/badges/values.js";
import { parseSelector } from "../../../src/healthchecks/status-page/selectors.js";

const check = (name: string, labels?: Record<string, string>) => ({
  definition: { name, ...(labels === undefined ? {} : { labels }) },
});

describe("which checks have badges", () => {
  const page = (enabled: boolean, selectors: string[]) => ({ enabled, selectors: selectors.map(parseSelector) });

  it("those the enabled status page shows: by name, by label, every one without selectors", () => {
    const shown = page(true, ["website", "team=web"]);
    expect(hasBadge(check("website"), shown)).toBe(true);
    expect(hasBadge(check("api", { team: "web" }), shown)).toBe(true);
    expect(hasBadge(check("db", { team: "data" }), shown)).toBe(false);
    expect(hasBadge(check("db", { team: "data" }), page(true, []))).toBe(true);
  });

  it("none of them when the page is disabled", () => {
    expect(hasBadge(check("website"), page(false, ["website"]))).toBe(false);
    expect(hasBadge(check("website"), page(false, []))).toBe(false);
  });

  it('those labelled public: "true", whatever the page (and not "yes" or "True")', () => {
    expect(hasBadge(check("db", { public: "true" }), page(false, []))).toBe(true);
    expect(hasBadge(check("db", { public: "true" }), page(true, ["website"]))).toBe(true);
    for (const value of ["yes", "True", "1", "false", ""]) {
      expect(hasBadge(check("db", { public: value }), page(false, []))).toBe(false);
    }
  });
});

describe("colours", () => {
  it("of uptime: 99.9 % brightgreen, 99 % green, 95 % yellow, below red", () => {
    expect(uptimeColor(1)).toBe("brightgreen");
    expect(uptimeColor(999 / 1000)).toBe("brightgreen");
    expect(uptimeColor(0.9989)).toBe("green");
    expect(uptimeColor(99 / 100)).toBe("green");
    expect(uptimeColor(0.9899)).toBe("yellow");
    expect(uptimeColor(95 / 100)).toBe("yellow");
    expect(uptimeColor(0.9499)).toBe("red");
    expect(uptimeColor(0)).toBe("red");
  });

  it("of response times: under 200 ms brightgreen, under 1 s yellow, else orange", () => {
    expect(responseTimeColor(0)).toBe("brightgreen");
    expect(responseTimeColor(199.9)).toBe("brightgreen");
    expect(responseTimeColor(200)).toBe("yellow");
    expect(responseTimeColor(999.9)).toBe("yellow");
    expect(responseTimeColor(1_000)).toBe("orange");
    expect(responseTimeColor(60_000)).toBe("orange");
  });
});

describe("wording", () => {
  it("says percentages with at most two decimals, rounded down: only a clean period reads 100%", () => {
    expect(percentText(1)).toBe("100%");
    expect(percentText(0)).toBe("0%");
    expect(percentText(0.9993)).toBe("99.93%");
    expect(percentText(999 / 1000)).toBe("99.9%");
    expect(percentText(99_999 / 100_000)).toBe("99.99%");
    expect(percentText(1 / 3)).toBe("33.33%");
    expect(percentText(0.5)).toBe("50%");
  });

  it("says durations in milliseconds under a second, else in seconds to three digits", () => {
    expect(durationText(0)).toBe("0 ms");
    expect(durationText(87.4)).toBe("87 ms");
    expect(durationText(999.4)).toBe("999 ms");
    expect(durationText(999.6)).toBe("1 s");
    expect(durationText(1_250)).toBe("1.25 s");
    expect(durationText(12_345)).toBe("12.3 s");
    expect(durationText(123_456)).toBe("123 s");
  });

  it("labels the state badge with the check's name, the others with what they measure", () => {
    expect(statusBadge("website", true)).toEqual({
      label: "website",
      message: "up",
      color: "brightgreen",
      title: "website status: up",
    });
    expect(statusBadge("website", false)).toMatchObject({ message: "down", color: "red" });
    expect(statusBadge("website", undefined)).toMatchObject({ message: "unknown", color: "lightgrey" });
    expect(uptimeBadge("website", "7d", 0.995)).toEqual({
      label: "uptime 7d",
      message: "99.5%",
      color: "green",
      title: "website uptime 7d: 99.5%",
    });
    expect(uptimeBadge("website", "1h", null)).toMatchObject({ message: "no data", color: "lightgrey" });
    expect(responseTimeBadge("website", 87)).toEqual({
      label: "response time",
      message: "87 ms",
      color: "brightgreen",
      title: "website response time 24h: 87 ms",
    });
    expect(responseTimeBadge("website", null)).toMatchObject({ message: "no data", color: "lightgrey" });
  });
});

describe("subjects and shields.io's endpoint format", () => {
  it("has a path per subject", () => {
    expect(BADGE_SUBJECTS.map(subjectPath)).toEqual([
      "status",
      "uptime/1h",
      "uptime/24h",
      "uptime/7d",
      "uptime/30d",
      "response-time",
    ]);
  });

  it("answers schema version 1 with the label, the message and the colour's name", () => {
    expect(shieldsEndpoint(statusBadge("website", true))).toEqual({
      schemaVersion: 1,
      label: "website",
      message: "up",
      color: "brightgreen",
    });
  });
});
