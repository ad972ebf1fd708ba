import { describe, expect, it } from "vitest";
import { alertOf, alertsPath, encodeAlertBatch } from "../../../src/platform/outputs/alertmanager-output.js";

const settings = { labels: ["host"] };
const now = 1_700_000_100;

describe("alertOf", () => {
  it("fires a non-ok event until time + ttl: alertname = service, listed fields as labels, summary/state/metric annotations", () => {
    expect(
      alertOf(
        {
          host: "web-1",
          service: "cpu",
          state: "critical",
          metric: 0.97,
          time: 1_700_000_000.25,
          ttl: 60,
          env: "prod",
        },
        settings,
        now,
      ),
    ).toEqual({
      labels: { alertname: "cpu", host: "web-1" },
      annotations: { summary: "cpu is critical on web-1", state: "critical", metric: "0.97" },
      startsAt: "2023-11-14T22:13:20.250Z",
      endsAt: "2023-11-14T22:14:20.250Z",
    });
  });

  it("resolves an ok event at its own time, with the same labels", () => {
    const firing = alertOf({ host: "web-1", service: "cpu", state: "critical", time: 1_700_000_000 }, settings, now);
    const resolved = alertOf({ host: "web-1", service: "cpu", state: "ok", time: 1_700_000_030 }, settings, now);
    expect(resolved).toEqual({
      labels: { alertname: "cpu", host: "web-1" },
      annotations: { summary: "cpu is ok on web-1", state: "ok" },
      startsAt: "2023-11-14T22:13:50.000Z",
      endsAt: "2023-11-14T22:13:50.000Z",
    });
    expect(resolved?.labels).toEqual(firing?.labels);
  });

  it("never ends an alert before it starts: a negative ttl resolves it at its start", () => {
    // Alertmanager answers 400 to a batch holding an alert with endsAt < startsAt (and keeps the
    // others): that answer would count every event of the batch as rejected.
    for (const ttl of [-30, -0.001, -1e300, Number.MIN_SAFE_INTEGER]) {
      const alert = alertOf({ service: "cpu", state: "critical", time: 1_700_000_000, ttl }, settings, now);
      expect(alert, `ttl ${ttl}`).toMatchObject({
        startsAt: "2023-11-14T22:13:20.000Z",
        endsAt: "2023-11-14T22:13:20.000Z",
      });
    }
    // A zero ttl already did so; a positive one still fires until time + ttl.
    expect(alertOf({ service: "cpu", state: "critical", time: 1_700_000_000, ttl: 0 }, settings, now)?.endsAt).toBe(
      "2023-11-14T22:13:20.000Z",
    );
    expect(alertOf({ service: "cpu", state: "critical", time: 1_700_000_000, ttl: 0.5 }, settings, now)?.endsAt).toBe(
      "2023-11-14T22:13:20.500Z",
    );
  });

  it("defaults ttl to 120 s and time to now; the description is the summary", () => {
    expect(alertOf({ service: "disk", state: "warning", description: "disk 91% full" }, settings, now)).toEqual({
      labels: { alertname: "disk" },
      annotations: { summary: "disk 91% full", state: "warning" },
      startsAt: "2023-11-14T22:15:00.000Z",
      endsAt: "2023-11-14T22:17:00.000Z",
    });
  });

  it("copies the listed fields present as non-empty strings, names sanitised, alertname and the first in name order winning", () => {
    const alert = alertOf(
      {
        service: "api",
        host: "web-1",
        "data-center": "par1",
        rack: 12,
        team: "",
        alertname: "other",
        data_center: "second",
        time: now,
      },
      {
        labels: ["host", "data-center", "rack", "team", "alertname", "data_center", "missing"],
        generatorUrl: "http://x/y",
      },
      now,
    );
    expect(alert?.labels).toEqual({ alertname: "api", host: "web-1", data_center: "par1" });
    expect(alert?.generatorURL).toBe("http://x/y");
    expect(alert?.annotations).toEqual({ summary: "api is unknown on web-1" });
  });

  it("keeps, of fields whose names sanitise alike, the first in name order, whatever the order of the list or the event", () => {
    // "-" (0x2d) < "." (0x2e) < "_" (0x5f): a-b wins over a.b, which wins over a_b.
    const lists = [
      ["a.b", "a-b", "a_b"],
      ["a_b", "a-b", "a.b"],
      ["a-b", "a_b", "a.b"],
    ];
    const events = [
      { service: "s", "a.b": "dot", "a-b": "dash", a_b: "underscore" },
      { service: "s", a_b: "underscore", "a-b": "dash", "a.b": "dot" },
    ];
    for (const labels of lists) {
      for (const event of events) {
        expect(alertOf(event, { labels }, now)?.labels, `${labels} ${Object.keys(event)}`).toEqual({
          alertname: "s",
          a_b: "dash",
        });
      }
      // The winner must give a label: when it is absent or empty, the next in name order does.
      expect(alertOf({ service: "s", a_b: "underscore", "a-b": "", "a.b": "dot" }, { labels }, now)?.labels).toEqual({
        alertname: "s",
        a_b: "dot",
      });
    }
  });

  it("refuses events without a service, or with times no date can hold", () => {
    expect(alertOf({ host: "a", state: "critical" }, settings, now)).toBeUndefined();
    expect(alertOf({ service: "", state: "critical" }, settings, now)).toBeUndefined();
    expect(alertOf({ service: 42, state: "critical" }, settings, now)).toBeUndefined();
    expect(alertOf({ service: "x", time: 1e300 }, settings, now)).toBeUndefined();
    expect(alertOf({ service: "x", time: now, ttl: 1e300 }, settings, now)).toBeUndefined();
  });
});

describe("encodeAlertBatch", () => {
  it("sends one JSON array of alerts and counts the events that are no alert as rejected", () => {
    const encoded = encodeAlertBatch(
      [
        { service: "cpu", host: "a", state: "critical", time: now },
        { host: "b", state: "critical" },
      ],
      settings,
      now,
    );
    expect(encoded.rejected).toBe(1);
    expect(encoded.units).toHaveLength(1);
    expect(encoded.units[0]?.events).toBe(1);
    expect(JSON.parse(encoded.units[0]?.payload ?? "")).toEqual([
      {
        labels: { alertname: "cpu", host: "a" },
        annotations: { summary: "cpu is critical on a", state: "critical" },
        startsAt: "2023-11-14T22:15:00.000Z",
        endsAt: "2023-11-14T22:17:00.000Z",
      },
    ]);
    expect(encodeAlertBatch([{ host: "b" }], settings, now)).toEqual({ units: [], rejected: 1 });
  });
});

describe("alertsPath", () => {
  it("appends /api/v2/alerts to the base path, whatever its trailing slash", () => {
    expect(alertsPath("/")).toBe("/api/v2/alerts");
    expect(alertsPath("")).toBe("/api/v2/alerts");
    expect(alertsPath("/alertmanager")).toBe("/alertmanager/api/v2/alerts");
    expect(alertsPath("/alertmanager/")).toBe("/alertmanager/api/v2/alerts");
  });
});
