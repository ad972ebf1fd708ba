/**
 * The status page's selectors: names and labels, in order, and why one selects nothing.
 */
import { describe, expect, it } from "vitest";
import { parseSelector, selectChecks, unmatchedReason } from "../../../src/healthchecks/status-page/selectors.js";
import { check } from "./fixtures.js";

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
