/**
 * The status page's refresh script as the server reads it.
 */
import { describe, expect, it } from "vitest";
import { loadStatusScript } from "../../../src/healthchecks/status-page/script.js";

describe("the page's script", () => {
  it("reads no script when none was built", async () => {
    expect(await loadStatusScript(new URL("file:///nonexistent/status.js"))).toBeUndefined();
  });
});
