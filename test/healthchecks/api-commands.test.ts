import { describe, expect, it } from "vitest";
import { apiCommandsAllowed, isLoopbackHost } from "../../src/healthchecks/api-commands.js";

describe("isLoopbackHost", () => {
  it("recognises loopback addresses and names", () => {
    for (const host of [
      "127.0.0.1",
      "127.1.2.3",
      "localhost",
      "LOCALHOST",
      "::1",
      "[::1]",
      "0:0:0:0:0:0:0:1",
      "::ffff:127.0.0.1",
    ]) {
      expect(isLoopbackHost(host), host).toBe(true);
    }
    for (const host of ["0.0.0.0", "::", "10.0.0.1", "128.0.0.1", "example.org", "::2", "localhost.example.org"]) {
      expect(isLoopbackHost(host), host).toBe(false);
    }
  });
});

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
