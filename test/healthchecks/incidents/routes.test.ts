/**
 * Incidents through the API (`app.inject()` on a real server with two status pages): creating,
 * updating, listing, reading and deleting them, the 400s naming the field, the 404s and the 409 of
 * a full timeline; each page showing its open incidents and recently resolved ones (as text, never
 * HTML), in its data and its Atom feed (parsed as XML); the routes behind the token like the other
 * healthcheck writes, the pages and feeds public.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_UPDATES } from "../../../src/healthchecks/incidents/incident.js";
import { healthchecksModule } from "../../../src/healthchecks/index.js";
import { defineModule } from "../../../src/platform/module.js";
import type { VigieServer } from "../../../src/server.js";
import { startTestServer } from "../../support/server.js";
import { parseAtom } from "../status-page/atom.js";

const HOUR = 3_600_000;
const iso = (milliseconds: number) => new Date(milliseconds).toISOString();
const HOSTILE = "<img src=x onerror=alert(1)> & co";
const ESCAPED = "&lt;img src=x onerror=alert(1)&gt; &amp; co";

/** A tcp check of a closed port: it fails at once. */
function check(name: string, labels?: Record<string, string>) {
  return { name, target: "127.0.0.1", port: 9, timeout: "200ms", interval: "1s", ...(labels ? { labels } : {}) };
}

function client(server: VigieServer, authorization?: string) {
  const call = async (method: "GET" | "POST" | "DELETE", url: string, body?: unknown) => {
    const response = await server.app.inject({
      method,
      url,
      ...(body === undefined ? {} : { payload: body as Record<string, unknown> }),
      headers: authorization === undefined ? {} : { authorization },
    });
    const json = response.headers["content-type"]?.toString().startsWith("application/json");
    return {
      status: response.statusCode,
      type: String(response.headers["content-type"] ?? ""),
      body: json ? (response.json() as unknown) : response.body,
    };
  };
  return {
    call,
    post: (url: string, body: unknown) => call("POST", url, body),
    get: (url: string) => call("GET", url),
  };
}

const PAGES = [
  { slug: "", title: "Acme status", checks: ["website"] },
  { slug: "internal", title: "Internal", description: "For the team", checks: ["team=ops"] },
];

describe("incidents through the API", () => {
  let server: VigieServer;
  let api: ReturnType<typeof client>;
  beforeAll(async () => {
    server = await startTestServer({
      modules: [healthchecksModule],
      config: {
        healthchecks: {
          "status-pages": PAGES,
          "tcp-checks": [check("website"), check("db", { team: "ops" }), check("secret-check")],
        },
      },
    });
    api = client(server);
  });
  afterAll(() => server.close());

  const incident = (fields: Record<string, unknown> = {}) => ({
    title: "Slow checkout",
    status: "investigating",
    message: "Payments take a minute.",
    checks: ["website"],
    pages: [""],
    ...fields,
  });

  it("refuses invalid incidents with a 400 naming the field", async () => {
    const invalid = async (body: unknown, url = "/incident") => {
      const answer = await api.post(url, body);
      expect(answer.status, JSON.stringify(answer.body)).toBe(400);
      return (answer.body as { error: string }).error;
    };
    expect(await invalid(incident({ title: undefined }))).toBe("field title: is required");
    expect(await invalid(incident({ title: " " }))).toBe("field title: must not be empty");
    expect(await invalid(incident({ title: "x".repeat(256) }))).toBe("field title: must have at most 255 characters");
    expect(await invalid(incident({ status: "fixed" }))).toBe(
      "field status: must be one of investigating, identified, monitoring, resolved",
    );
    expect(await invalid(incident({ message: "m".repeat(10_001) }))).toBe(
      "field message: must have at most 10000 characters",
    );
    expect(await invalid(incident({ checks: ["nowhere"] }))).toBe("field checks[0]: no healthcheck is named nowhere");
    expect(await invalid(incident({ checks: ["website", "website"] }))).toBe(
      "field checks[1]: must not repeat an earlier one",
    );
    expect(await invalid(incident({ pages: ["ops"] }))).toBe('field pages[0]: no status page has the slug "ops"');
    expect(await invalid(incident({ severity: "high" }))).toMatch(/^field severity: unknown key/);
    expect(await invalid([])).toBe("request body must be an object");
  });

  it("creates, updates, reads, lists and deletes an incident", async () => {
    const created = await api.post("/incident", incident());
    expect(created.status).toBe(201);
    const { id } = created.body as { id: string };
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(await api.post(`/incident/${id}/update`, { status: "identified", message: "A slow database." })).toEqual({
      status: 200,
      type: expect.stringContaining("application/json"),
      body: { message: `Incident ${id} successfully updated` },
    });
    const read = await api.get(`/incident/${id}`);
    expect(read.body).toMatchObject({
      id,
      title: "Slow checkout",
      status: "identified",
      checks: ["website"],
      pages: [""],
      resolved: null,
      updates: [
        { status: "investigating", message: "Payments take a minute." },
        { status: "identified", message: "A slow database." },
      ],
    });
    expect(await api.post(`/incident/${id}/update`, { status: "resolved", message: "Fixed." })).toMatchObject({
      status: 200,
    });
    const resolved = (await api.get(`/incident/${id}`)).body as { resolved: string; updated: string };
    expect(resolved.resolved).toBe(resolved.updated);

    const listed = (await api.get("/incident?status-page=")).body as { id: string }[];
    expect(listed.map((item) => item.id)).toContain(id);
    expect(await api.get("/incident?status-page=internal")).toMatchObject({ status: 200, body: [] });
    expect((await api.get(`/incident?since=${iso(Date.now() + HOUR)}`)).body).toEqual([]);
    expect(((await api.get(`/incident?since=${iso(Date.now() - HOUR)}`)).body as unknown[]).length).toBeGreaterThan(0);
    expect(await api.get("/incident?status-page=ops")).toMatchObject({
      status: 400,
      body: { error: 'query parameter status-page: no status page has the slug "ops"' },
    });
    expect((await api.get("/incident?since=yesterday")).status).toBe(400);
    expect((await api.get("/incident?limit=0")).status).toBe(400);

    expect(await api.call("DELETE", `/incident/${id}`)).toMatchObject({
      status: 200,
      body: { message: `Successfully deleted incident ${id}` },
    });
    const gone = { status: 404, body: { error: `incident ${id} not found` } };
    expect(await api.get(`/incident/${id}`)).toMatchObject(gone);
    expect(await api.call("DELETE", `/incident/${id}`)).toMatchObject(gone);
    expect(await api.post(`/incident/${id}/update`, { status: "resolved", message: "x" })).toMatchObject(gone);
    expect(await api.get("/incident/not-a-uuid")).toMatchObject({ status: 404 });
  });

  it("puts an incident posted without pages on every page, and one with no pages on none", async () => {
    const { pages: _pages, ...everywhere } = incident();
    const all = (await api.post("/incident", everywhere)).body as { id: string };
    const none = (await api.post("/incident", incident({ pages: [] }))).body as { id: string };
    expect((await api.get(`/incident/${all.id}`)).body).toMatchObject({ pages: ["", "internal"] });
    expect((await api.get(`/incident/${none.id}`)).body).toMatchObject({ pages: [] });
    expect((await api.call("DELETE", `/incident/${all.id}`)).status).toBe(200);
    expect((await api.call("DELETE", `/incident/${none.id}`)).status).toBe(200);
  });

  it("refuses an update past the bound of the timeline with a 409", async () => {
    const { id } = (await api.post("/incident", incident({ pages: [] }))).body as { id: string };
    for (let index = 1; index < MAX_UPDATES; index += 1) {
      expect((await api.post(`/incident/${id}/update`, { status: "monitoring", message: `m${index}` })).status).toBe(
        200,
      );
    }
    expect((await api.post(`/incident/${id}/update`, { status: "resolved", message: "one more" })).status).toBe(409);
    expect((await api.call("DELETE", `/incident/${id}`)).status).toBe(200);
  });

  it("shows open incidents with their timeline and resolved ones on their pages, as text", async () => {
    const open = (
      await api.post("/incident", incident({ title: HOSTILE, checks: ["website", "db"], pages: ["", "internal"] }))
    ).body as { id: string };
    await api.post(`/incident/${open.id}/update`, { status: "monitoring", message: `A fix is out. ${HOSTILE}` });
    const done = (await api.post("/incident", incident({ title: "Mail delayed", pages: ["internal"] }))).body as {
      id: string;
    };
    await api.post(`/incident/${done.id}/update`, { status: "resolved", message: "Mail flows again." });
    const start = Date.now() + HOUR;
    const window = { name: "db-upgrade", checks: ["db", "website"], start: iso(start), end: iso(start + HOUR) };
    expect((await api.post("/maintenance", window)).status).toBe(201);
    // The pages' answers are computed at most once a second.
    await new Promise((resolve) => setTimeout(resolve, 1_100));

    const main = (await api.get("/status")).body as string;
    expect(main).toContain("<h2>Current incidents</h2>");
    expect(main).toContain(`<h3>${ESCAPED}</h3>`);
    expect(main).toContain(`<p>A fix is out. ${ESCAPED}</p>`);
    expect(main).not.toContain("<img");
    // Only the checks the page shows are named.
    expect(main).toContain("Affects website.");
    expect(main).not.toContain("Mail delayed");
    expect(main).toContain('href="/status/feed.atom"');

    const internal = (await api.get("/status/internal")).body as string;
    expect(internal).toContain('<p class="desc">For the team</p>');
    expect(internal).toContain("<h2>Resolved incidents, last 14 days</h2>");
    expect(internal).toContain("Mail flows again.");
    expect(internal).toContain("Affects db.");
    expect(internal).toContain('data-source="/status/internal/data"');

    const data = (await api.get("/status/internal/data")).body as { incidents: { title: string; resolved: unknown }[] };
    expect(data.incidents.map((item) => [item.title, item.resolved === null])).toEqual([
      [HOSTILE, true],
      ["Mail delayed", false],
    ]);

    const feed = await api.get("/status/internal/feed.atom");
    expect(feed.status).toBe(200);
    expect(feed.type).toBe("application/atom+xml; charset=utf-8");
    const parsed = parseAtom(feed.body as string);
    expect(parsed.title).toBe("Internal");
    expect(parsed.links).toContainEqual(expect.objectContaining({ rel: "self" }));
    expect(parsed.entries.map((entry) => entry.title)).toEqual(
      expect.arrayContaining([`Monitoring: ${HOSTILE}`, "Resolved: Mail delayed", "Maintenance: db-upgrade"]),
    );
    const hostile = parsed.entries.find((entry) => entry.id === `urn:uuid:${open.id}`);
    expect(hostile?.content).toContain(`A fix is out. ${HOSTILE}`);
    expect(hostile?.content).toContain("Payments take a minute.");
    // The raw text is escaped in the document, never markup.
    expect(feed.body).not.toContain("<img");
    const mainFeed = parseAtom((await api.get("/status/feed.atom")).body as string);
    expect(mainFeed.entries.map((entry) => entry.title)).not.toContain("Resolved: Mail delayed");
    expect(mainFeed.id).not.toBe(parsed.id);
  });
});

describe("incident routes with security.require-token", () => {
  const tokens = defineModule({
    name: "tokens",
    configShape: {},
    migrations: {},
    plugin: async (_app, { context }) => {
      context.auth.setVerifier((token) =>
        token === "tech-token"
          ? { outcome: "ok", principal: { id: "1", name: "ops", role: "tech" } }
          : { outcome: "invalid" },
      );
    },
  });
  let server: VigieServer;
  beforeAll(async () => {
    server = await startTestServer({
      modules: [tokens, healthchecksModule],
      config: {
        http: { host: "0.0.0.0" },
        security: { "require-token": true },
        healthchecks: { "status-page": { enabled: true } },
      },
    });
  });
  afterAll(() => server.close());

  it("ask for a registry token like the other healthcheck writes; the page and its feed stay public", async () => {
    const anonymous = client(server);
    const missing = { status: 401, body: { error: "missing token" } };
    const body = { title: "t", status: "investigating", message: "m", pages: [""] };
    expect(await anonymous.get("/incident")).toMatchObject(missing);
    expect(await anonymous.post("/incident", body)).toMatchObject(missing);
    const id = "00000000-0000-4000-8000-000000000000";
    expect(await anonymous.get(`/incident/${id}`)).toMatchObject(missing);
    expect(await anonymous.post(`/incident/${id}/update`, { status: "resolved", message: "m" })).toMatchObject(missing);
    expect(await anonymous.call("DELETE", `/incident/${id}`)).toMatchObject(missing);
    const tech = client(server, "Bearer tech-token");
    const created = await tech.post("/incident", body);
    expect(created.status).toBe(201);
    expect((await tech.get("/incident")).body).toHaveLength(1);
    expect((await anonymous.get("/status")).status).toBe(200);
    expect((await anonymous.get("/status/feed.atom")).status).toBe(200);
    expect((await tech.call("DELETE", `/incident/${(created.body as { id: string }).id}`)).status).toBe(200);
  });
});

describe("history.retention: 0", () => {
  it("starts, keeps only the latest result, and answers the history and the status page", async () => {
    const server = await startTestServer({
      modules: [healthchecksModule],
      config: {
        healthchecks: {
          "min-interval": "100ms",
          history: { retention: 0 },
          "status-page": { enabled: true },
          "tcp-checks": [{ ...check("website"), timeout: "100ms", interval: "100ms" }],
        },
      },
    });
    try {
      const api = client(server);
      const deadline = Date.now() + 5_000;
      while ((await api.get("/result/website")).status !== 200 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(await api.get("/result/website")).toMatchObject({ status: 200, body: { success: false } });
      const history = await api.get("/result/website/history");
      expect(history.status).toBe(200);
      expect((history.body as { results: unknown[] }).results.length).toBeLessThanOrEqual(1);
      expect((await api.get("/result/website/uptime")).status).toBe(200);
      const data = (await api.get("/status/data")).body as { days: number; periods: unknown[] };
      expect(data).toMatchObject({ days: 0, periods: [] });
    } finally {
      await server.close();
    }
  });
});
