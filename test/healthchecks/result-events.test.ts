import { describe, expect, it } from "vitest";
import { validateDefinition, viewOf } from "../../src/healthchecks/definition.js";
import { ResultPublisher, resultEvent } from "../../src/healthchecks/result-events.js";
import type { HealthcheckResult } from "../../src/healthchecks/results.js";
import type { EventSink, SinkEvent } from "../../src/platform/events.js";

const rules = { minInterval: { text: "1s", milliseconds: 1000 } };

function definition(kind: "http" | "tcp" | "dns" | "tls" | "command", fields: Record<string, unknown>) {
  return validateDefinition(
    kind,
    { name: "check", description: "d", interval: "10s", timeout: "2s", ...fields },
    rules,
    {
      unknownKeys: "reject",
      tlsFiles: "paths",
    },
  );
}

function resultOf(success: boolean, labels?: Record<string, string>): HealthcheckResult {
  return {
    name: "check",
    configuration: viewOf(definition("tcp", { target: "db1", port: 5432 }), "configuration"),
    success,
    timestamp: "2026-11-24T10:00:02.500Z",
    message: success ? "success" : "connection refused",
    duration: 12.5,
    ...(labels === undefined ? {} : { labels }),
  };
}

describe("a periodic result as a stream event (docs/healthchecks.md)", () => {
  it("has the fields of the spec, labels included but never overriding them", () => {
    const labels = { team: "web", state: "should not win", service: "nor this" };
    const event = resultEvent(
      definition("http", {
        target: "example.org",
        port: 443,
        protocol: "https",
        path: "/",
        "valid-status": [200],
        labels,
      }),
      resultOf(false, labels),
      labels,
    );
    expect(event).toEqual({
      team: "web",
      service: "check",
      host: "example.org",
      state: "critical",
      metric: 0.0125,
      description: "connection refused",
      time: Date.parse("2026-11-24T10:00:02.500Z") / 1000,
      ttl: 20,
      tags: ["healthcheck", "http"],
    });
  });

  it("takes the host from the target, the domain, or localhost for commands", () => {
    const ok = resultOf(true);
    expect(resultEvent(definition("tcp", { target: "db1", port: 5432 }), ok, undefined)).toMatchObject({
      host: "db1",
      state: "ok",
      tags: ["healthcheck", "tcp"],
    });
    expect(resultEvent(definition("tls", { target: "web1", port: 443 }), ok, undefined).host).toBe("web1");
    expect(resultEvent(definition("dns", { domain: "example.org" }), ok, undefined).host).toBe("example.org");
    expect(resultEvent(definition("command", { command: "/bin/true" }), ok, undefined).host).toBe("localhost");
  });

  it("pushes one event into every configured stream, in order, and nothing when none is", () => {
    const pushed: Array<[string, readonly SinkEvent[]]> = [];
    const sink: EventSink = { push: (stream, events) => pushed.push([stream, events]) };
    const check = definition("tcp", { target: "db1", port: 5432 });
    new ResultPublisher(sink, []).publish(check, resultOf(true));
    expect(pushed).toEqual([]);
    new ResultPublisher(sink, ["checks", "default"]).publish(check, resultOf(true));
    expect(pushed.map(([stream]) => stream)).toEqual(["checks", "default"]);
    expect(pushed[0]?.[1]).toEqual([expect.objectContaining({ service: "check", state: "ok" })]);
  });
});
