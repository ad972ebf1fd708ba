import { describe, expect, it } from "vitest";
import { parseConfig } from "../../src/platform/config.js";
import { Lifecycle } from "../../src/platform/lifecycle.js";

describe("Lifecycle.reload", () => {
  it("calls every handler in order with the fresh configuration, even after a failure", async () => {
    const lifecycle = new Lifecycle();
    const calls: string[] = [];
    lifecycle.onReload("first", (config) => {
      calls.push(`first ${config.http.port}`);
    });
    lifecycle.onReload("broken", () => {
      throw new Error("boom");
    });
    lifecycle.onReload("last", async (config) => {
      calls.push(`last ${config.http.port}`);
    });
    const failures = await lifecycle.reload(parseConfig({ http: { port: 1234 } }, {}, []));
    expect(calls).toEqual(["first 1234", "last 1234"]);
    expect(failures).toHaveLength(1);
    expect(failures[0]?.name).toBe("broken");
    expect(failures[0]?.error).toEqual(new Error("boom"));
  });
});
