/**
 * `healthchecks.maintenance` in the configuration (src/healthchecks/maintenance/config.ts): what it
 * accepts, and errors that name the key.
 */
import { describe, expect, it } from "vitest";
import { healthchecksModule } from "../../../src/healthchecks/index.js";
import { ConfigError, parseConfig } from "../../../src/platform/config.js";

/** The parsed `healthchecks.maintenance`. */
function parse(maintenance: unknown): unknown {
  const section: unknown = parseConfig({ healthchecks: { maintenance } }, {}, [healthchecksModule]).modules
    .healthchecks;
  return section !== null && typeof section === "object" && "maintenance" in section ? section.maintenance : undefined;
}

function refusal(maintenance: unknown): string {
  try {
    parse(maintenance);
  } catch (error) {
    if (error instanceof ConfigError) return error.message;
    throw error;
  }
  throw new Error("accepted");
}

const valid = { name: "nightly", checks: ["db", "team=web"], start: "sun 02:00", duration: "1h" };

describe("healthchecks.maintenance", () => {
  it("accepts weekly shorthands and cron expressions, UTC by default", () => {
    expect(parse([valid, { ...valid, name: "cron", start: "30 1 * * 1-5", timezone: "Europe/Paris" }])).toEqual([
      { ...valid, duration: { text: "1h", milliseconds: 3_600_000 }, timezone: "UTC" },
      {
        name: "cron",
        checks: ["db", "team=web"],
        start: "30 1 * * 1-5",
        duration: { text: "1h", milliseconds: 3_600_000 },
        timezone: "Europe/Paris",
      },
    ]);
    expect(parse(undefined)).toEqual([]);
  });

  it("refuses invalid entries naming the key", () => {
    const key = "invalid configuration: healthchecks.maintenance";
    expect(refusal([{ ...valid, start: "sunday at two" }])).toBe(
      `${key}[0].start: must be a weekday and a time such as sun 02:00, or a cron expression of 5 fields (minute hour day month weekday) (got "sunday at two")`,
    );
    expect(refusal([{ ...valid, start: "61 2 * * *" }])).toMatch(
      /^invalid configuration: healthchecks.maintenance\[0\].start: must be a weekday .* \(Invalid value for minute: 61\) \(got "61 2 \* \* \*"\)$/,
    );
    expect(refusal([{ ...valid, start: "0 0 2 * * *" }])).toMatch(
      /^invalid configuration: healthchecks.maintenance\[0\].start: must be/,
    );
    expect(refusal([{ ...valid, start: "@weekly" }])).toMatch(
      /^invalid configuration: healthchecks.maintenance\[0\].start: must be/,
    );
    expect(refusal([{ ...valid, start: "0 0 30 2 *" }])).toBe(`${key}[0].start: never occurs (got "0 0 30 2 *")`);
    expect(refusal([{ ...valid, timezone: "Mars/Olympus" }])).toBe(
      `${key}[0].timezone: must be a time zone of the IANA database such as Europe/Paris or UTC (got "Mars/Olympus")`,
    );
    expect(refusal([{ ...valid, duration: "30s" }])).toBe(`${key}[0].duration: must be at least 1m (got "30s")`);
    expect(refusal([{ ...valid, duration: "soon" }])).toMatch(
      /^invalid configuration: healthchecks.maintenance\[0\].duration: must be a duration/,
    );
    expect(refusal([{ ...valid, checks: [] }])).toBe(`${key}[0].checks: must not be empty (got [])`);
    expect(refusal([{ ...valid, checks: ["=web"] }])).toMatch(
      /^invalid configuration: healthchecks.maintenance\[0\].checks\[0\]: must be a check name or a label selector/,
    );
    expect(refusal([{ ...valid, name: "no spaces" }])).toBe(
      `${key}[0].name: must be 1 to 64 characters of A-Z a-z 0-9 . _ - (got "no spaces")`,
    );
    expect(refusal([{ ...valid, name: undefined }])).toBe(`${key}[0].name: is required`);
    expect(refusal([valid, valid])).toBe(
      `${key}[1].name: must be unique (${"healthchecks.maintenance"}[0] has the same name) (got "nightly")`,
    );
    expect(refusal([{ ...valid, end: "tomorrow" }])).toMatch(
      /^invalid configuration: healthchecks.maintenance\[0\].end: unknown key/,
    );
    expect(refusal({ name: "x" })).toMatch(/^invalid configuration: healthchecks.maintenance: must be an array/);
  });
});
