/**
 * What the outputs share (docs/streams.md, Outputs): the text of scalar fields (summaries and alert
 * annotations) and the range of dates they can write (alerts and date-suffixed files).
 */
import { describe, expect, it } from "vitest";
import { alertOf } from "../../../src/platform/outputs/alertmanager-output.js";
import { MAX_DATE_SECONDS } from "../../../src/platform/outputs/dates.js";
import { encodeFileBatch } from "../../../src/platform/outputs/file-output.js";
import { scalarText, summaryOf, UNKNOWN_PART } from "../../../src/platform/outputs/summary.js";

describe("scalarText", () => {
  it("writes strings as they are, numbers and booleans as String does, and nothing else", () => {
    expect(scalarText("critical")).toBe("critical");
    expect(scalarText("")).toBe("");
    expect(scalarText(0.5)).toBe("0.5");
    expect(scalarText(true)).toBe("true");
    for (const value of [undefined, null, ["a"], { a: 1 }]) expect(scalarText(value)).toBeUndefined();
  });

  it("is what both the summary and the alert's state annotation write", () => {
    for (const state of ["critical", 2, false, null, ["x"]]) {
      const event = { service: "cpu", host: "web-1", state };
      const text = scalarText(state);
      expect(summaryOf(event)).toBe(`cpu is ${text ?? UNKNOWN_PART} on web-1`);
      expect(alertOf(event, { labels: [] }, 0)?.annotations.state).toBe(text);
    }
  });
});

describe("MAX_DATE_SECONDS", () => {
  it("is the limit of JavaScript dates, which the alert and file outputs both use", () => {
    expect(new Date(MAX_DATE_SECONDS * 1000).toISOString()).toBe("+275760-09-13T00:00:00.000Z");
    expect(Number.isNaN(new Date((MAX_DATE_SECONDS + 1) * 1000).getTime())).toBe(true);

    const resolved = (time: number) => alertOf({ service: "s", state: "ok", time }, { labels: [] }, 0);
    expect(resolved(-MAX_DATE_SECONDS)?.startsAt).toBe("-271821-04-20T00:00:00.000Z");
    expect(resolved(MAX_DATE_SECONDS + 1)).toBeUndefined();

    const file = (time: number) => encodeFileBatch("f", true, [{ time }], 0).units[0]?.payload.path;
    expect(file(MAX_DATE_SECONDS)).toBe("f-+275760-09-13");
    // Beyond, the event is dated now (here the epoch).
    expect(file(MAX_DATE_SECONDS + 1)).toBe("f-1970-01-01");
  });
});
