import { describe, expect, it } from "vitest";
import { isHostName, isIpLiteral, isLoopbackHost, unbracket } from "../../src/platform/hosts.js";

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

describe("isHostName", () => {
  it("accepts RFC 1123 names and refuses the rest", () => {
    for (const name of ["localhost", "example.org", "a-b.example.org", "x1.y2", "a".repeat(63)]) {
      expect(isHostName(name), name).toBe(true);
    }
    for (const name of [
      "",
      "-a.org",
      "a-.org",
      "a..org",
      "a_b.org",
      "a b",
      "a".repeat(64),
      "é.org",
      `${"a.".repeat(127)}ab`,
    ]) {
      expect(isHostName(name), name).toBe(false);
    }
  });

  it("takes underscores, a final dot and a least number of labels on request", () => {
    expect(isHostName("_dmarc.example.org", { underscore: true })).toBe(true);
    expect(isHostName("example.org.")).toBe(false);
    expect(isHostName("example.org.", { finalDot: true })).toBe(true);
    expect(isHostName("localhost", { minLabels: 2 })).toBe(false);
    expect(isHostName("example.org", { minLabels: 2 })).toBe(true);
  });
});

describe("isIpLiteral", () => {
  it("recognises IPv4 and IPv6 addresses, bracketed or not", () => {
    for (const host of ["127.0.0.1", "10.1.2.3", "::1", "[::1]", "[2001:db8::1]"])
      expect(isIpLiteral(host), host).toBe(true);
    for (const host of ["localhost", "example.org", "[example.org]", "1.2.3", "999.1.1.1"]) {
      expect(isIpLiteral(host), host).toBe(false);
    }
    expect(unbracket("[::1]")).toBe("::1");
    expect(unbracket("::1")).toBe("::1");
  });
});
