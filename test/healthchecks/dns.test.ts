import { describe, expect, it } from "vitest";
import { type DnsDefinition, validateDefinition } from "../../src/healthchecks/definition.js";
import { canonicalIp, runDns } from "../../src/healthchecks/dns.js";

const RULES = { minInterval: { text: "1s", milliseconds: 1_000 } };

function dns(fields: Record<string, unknown>): DnsDefinition {
  return validateDefinition("dns", { name: "resolve", interval: "10s", ...fields }, RULES, { unknownKeys: "ignore" });
}

describe("canonicalIp", () => {
  it("compresses IPv6 addresses and leaves IPv4 ones alone", () => {
    expect(canonicalIp("0:0:0:0:0:0:0:1")).toBe("::1");
    expect(canonicalIp("2001:DB8:0:0:0:0:0:1")).toBe("2001:db8::1");
    expect(canonicalIp("10.0.0.1")).toBe("10.0.0.1");
  });
});

describe("dns executor", () => {
  it("resolves localhost through the system resolver (/etc/hosts)", async () => {
    expect(await runDns(dns({ domain: "localhost" }))).toEqual({ success: true, message: "success" });
    expect(await runDns(dns({ domain: "localhost", "expected-ips": ["127.0.0.1"] }))).toEqual({
      success: true,
      message: "success",
    });
  });

  it("lists the expected IPs not found and the resolved ones", async () => {
    const outcome = await runDns(dns({ domain: "localhost", "expected-ips": ["127.0.0.1", "10.0.0.3", "10.0.0.4"] }));
    expect(outcome.success).toBe(false);
    expect(outcome.message).toMatch(/^expected IPs 10\.0\.0\.3, 10\.0\.0\.4 not found in (.+, )?127\.0\.0\.1(, .+)?$/);
  });

  it("reports the resolver's error code", async () => {
    expect(await runDns(dns({ domain: "does-not-exist.invalid" }))).toEqual({
      success: false,
      message: "DNS lookup failed for does-not-exist.invalid: ENOTFOUND",
    });
  });

  it("is abandoned when the module stops", async () => {
    const stop = new AbortController();
    stop.abort();
    expect(await runDns(dns({ domain: "localhost" }), stop.signal)).toEqual({
      success: false,
      message: "DNS lookup failed for localhost: the healthchecks module is stopping",
    });
  });
});
