import { describe, expect, it } from "vitest";
import { apiCommandsAllowed } from "../../src/healthchecks/api-commands.js";

describe("apiCommandsAllowed", () => {
  it("follows an explicit setting", () => {
    expect(apiCommandsAllowed(true, "0.0.0.0", false)).toBe(true);
    expect(apiCommandsAllowed(false, "127.0.0.1", true)).toBe(false);
  });

  it("allows commands on loopback or with required tokens when auto", () => {
    expect(apiCommandsAllowed("auto", "127.0.0.1", false)).toBe(true);
    expect(apiCommandsAllowed("auto", "0.0.0.0", true)).toBe(true);
    expect(apiCommandsAllowed("auto", "0.0.0.0", false)).toBe(false);
  });
});
