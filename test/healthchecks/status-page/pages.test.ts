/**
 * Several status pages in the configuration (src/healthchecks/status-page/pages.ts): the list and
 * its rules (slugs, unique, not `data`), the older single key, both keys refused together, and
 * the pages a server serves from either.
 */
import { describe, expect, it } from "vitest";
import type { HealthchecksSection } from "../../../src/healthchecks/config.js";
import { healthchecksModule } from "../../../src/healthchecks/index.js";
import { pagePath, statusPagesOf } from "../../../src/healthchecks/status-page/pages.js";
import { parseConfig } from "../../../src/platform/config.js";
import { startTestServer } from "../../support/server.js";

const parse = (healthchecks: unknown) => parseConfig({ healthchecks }, {}, [healthchecksModule]);
const section = (healthchecks: unknown): HealthchecksSection => parse(healthchecks).modules.healthchecks as never;

describe("healthchecks.status-pages", () => {
  it("lists pages with their defaults; the single key stays accepted as /status", () => {
    expect(statusPagesOf(section({ "status-pages": [{ slug: "" }, { slug: "ops-2", title: "Ops" }] }))).toEqual([
      { slug: "", title: "Status", description: "", checks: [], key: "healthchecks.status-pages[0]" },
      { slug: "ops-2", title: "Ops", description: "", checks: [], key: "healthchecks.status-pages[1]" },
    ]);
    expect(statusPagesOf(section({ "status-page": { enabled: true, title: "Acme", checks: ["a"] } }))).toEqual([
      { slug: "", title: "Acme", description: "", checks: ["a"], key: "healthchecks.status-page" },
    ]);
    expect(statusPagesOf(section({ "status-page": { enabled: false } }))).toEqual([]);
    expect(statusPagesOf(section(undefined))).toEqual([]);
    expect(pagePath("")).toBe("/status");
    expect(pagePath("ops")).toBe("/status/ops");
  });

  it("refuses both keys, bad slugs and duplicate slugs, naming the key", () => {
    const refusal = (healthchecks: unknown) => {
      try {
        parse(healthchecks);
      } catch (error) {
        return (error as Error).message;
      }
      return "accepted";
    };
    expect(refusal({ "status-page": { enabled: true }, "status-pages": [{ slug: "" }] })).toContain(
      "healthchecks.status-pages: cannot be set together with healthchecks.status-page",
    );
    // Written but disabled: still both keys; an empty list is the default, as `vigie init` writes it.
    expect(refusal({ "status-page": { enabled: false }, "status-pages": [{ slug: "ops" }] })).toContain(
      "cannot be set together",
    );
    expect(refusal({ "status-page": { enabled: false }, "status-pages": [] })).toBe("accepted");
    expect(refusal({ "status-pages": [{ slug: "Ops" }] })).toContain(
      'healthchecks.status-pages[0].slug: must be "" or 1 to 64 characters of a-z 0-9 -',
    );
    expect(refusal({ "status-pages": [{ slug: "x".repeat(65) }] })).toContain("healthchecks.status-pages[0].slug");
    expect(refusal({ "status-pages": [{ slug: "a/b" }] })).toContain("healthchecks.status-pages[0].slug");
    expect(refusal({ "status-pages": [{ title: "no slug" }] })).toContain(
      "healthchecks.status-pages[0].slug: is required",
    );
    expect(refusal({ "status-pages": [{ slug: "data" }] })).toContain(
      "healthchecks.status-pages[0].slug: must not be data",
    );
    expect(refusal({ "status-pages": [{ slug: "ops" }, { slug: "ops" }] })).toContain(
      "healthchecks.status-pages[1].slug: must be unique (healthchecks.status-pages[0] has the same slug)",
    );
    expect(refusal({ "status-pages": [{ slug: "ops", colour: "red" }] })).toContain(
      "healthchecks.status-pages[0].colour",
    );
  });

  it("serves each page at its path, checks each page's selectors at start-up, gives badges to any page's checks", async () => {
    const check = (name: string) => ({ name, target: "127.0.0.1", port: 9, timeout: "1s", interval: "10s" });
    await expect(
      startTestServer({
        modules: [healthchecksModule],
        config: { healthchecks: { "status-pages": [{ slug: "ops", checks: ["nowhere"] }] } },
      }),
    ).rejects.toThrow("healthchecks.status-pages[0].checks[0]: selects no healthcheck: no check is named nowhere");
    const server = await startTestServer({
      modules: [healthchecksModule],
      config: {
        healthchecks: {
          "status-pages": [
            { slug: "", title: "Public", checks: ["web"] },
            { slug: "ops", title: "Ops", checks: ["db"] },
          ],
          "tcp-checks": [check("web"), check("db"), check("hidden")],
        },
      },
    });
    try {
      const get = (url: string) => server.app.inject({ method: "GET", url });
      expect((await get("/status")).body).toContain("<h1>Public</h1>");
      expect((await get("/status/ops")).body).toContain("<h1>Ops</h1>");
      expect((await get("/status/ops/data")).json()).toMatchObject({
        title: "Ops",
        groups: [{ checks: [{ name: "db" }] }],
      });
      expect((await get("/status/nowhere")).statusCode).toBe(404);
      expect((await get("/badge/web/status.json")).statusCode).toBe(200);
      expect((await get("/badge/db/status.json")).statusCode).toBe(200);
      expect((await get("/badge/hidden/status.json")).statusCode).toBe(404);
    } finally {
      await server.close();
    }
  });
});
