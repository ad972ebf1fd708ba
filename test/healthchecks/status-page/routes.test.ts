/**
 * The status page's routes through `app.inject()` on a real server (docs/healthchecks.md): the
 * selectors checked at start-up and evaluated at each render, the page and its data (grouping,
 * states as text, escaping, nothing leaked), the headers (Content-Security-Policy, cache), the
 * size of the page with its script, the refresh parameter, the script route, and no route at all
 * when the page is disabled.
 *
 * The script is built from src by scripts/build-browser.mjs into a temporary directory (the route
 * reads it from dist otherwise, which the sources run by vitest have not).
 */
import { createHash } from "node:crypto";
import { createServer } from "node:http";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { Incident, IncidentStatus } from "../../../src/healthchecks/incidents/index.js";
import { healthchecksModule } from "../../../src/healthchecks/index.js";
import { collectStatus, lastDays, type StatusHistory } from "../../../src/healthchecks/status-page/data.js";
import { renderStatusPage, STATUS_CSP } from "../../../src/healthchecks/status-page/html.js";
import { isStatusData } from "../../../src/healthchecks/status-page/view.js";
import type { VigieServer } from "../../../src/server.js";
import { startTestServer } from "../../support/server.js";
import { until } from "../../support/until.js";
import { type Listening, listen } from "../local-servers.js";

vi.mock("../../../src/healthchecks/status-page/script.js", async (importOriginal) => {
  const { execFileSync } = await import("node:child_process");
  const { join, resolve } = await import("node:path");
  const { pathToFileURL } = await import("node:url");
  const { temporaryDirectory } = await import("../../support/temporary.js");
  const original = await importOriginal<typeof import("../../../src/healthchecks/status-page/script.js")>();
  const outdir = temporaryDirectory("vigie-status-script-");
  const root = resolve(import.meta.dirname, "../../..");
  execFileSync(process.execPath, [join(root, "scripts/build-browser.mjs"), "--outdir", outdir]);
  const built = pathToFileURL(join(outdir, "healthchecks/browser/status.js"));
  return { ...original, loadStatusScript: () => original.loadStatusScript(built) };
});

/** Strings the checks hold in their target, path, query, headers, labels and result messages. */
const SECRETS = {
  target: "leak-target-5e1.invalid",
  path: "/leak-path-8a2",
  query: "leak-query-3b7",
  header: "leak-header-9c4",
  token: "leak-token-1d6",
  host: "leak-host-2f8",
  label: "leak-label-7e3",
  body: "leak-body-4a9",
};
const HOSTILE = "<img src=x onerror=alert(1)>";
const ESCAPED_HOSTILE = "&lt;img src=x onerror=alert(1)&gt;";

let web: Listening;
let failing: Listening;
beforeAll(async () => {
  web = await listen(createServer((_request, response) => response.writeHead(200).end("ok")));
  failing = await listen(createServer((_request, response) => response.writeHead(500).end(`broken ${SECRETS.body}`)));
});
afterAll(async () => {
  await web?.close();
  await failing?.close();
});

const check = (name: string, port: number, fields: Record<string, unknown> = {}) => ({
  name,
  target: "127.0.0.1",
  port,
  "valid-status": [200],
  interval: "1s",
  timeout: "1s",
  ...fields,
});

function healthchecks(statusPage: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  return {
    "min-interval": "100ms",
    history: { retention: "2160h" },
    "status-page": { enabled: true, ...statusPage },
    "http-checks": [
      check("website", web.port, { description: "What visitors see", labels: { group: "Front end", team: "web" } }),
      check("api", failing.port, {
        description: "The public API",
        path: `${SECRETS.path}?q=${SECRETS.query}`,
        query: { extra: SECRETS.query },
        headers: { "X-Leak": SECRETS.header, Authorization: `Bearer ${SECRETS.token}` },
        host: SECRETS.host,
        labels: { group: "Back end", team: "web", owner: SECRETS.label },
      }),
      check("resolver", 80, { target: SECRETS.target, labels: { team: "web" } }),
      check(HOSTILE, web.port, { description: `"${HOSTILE}" & more`, labels: { team: "web", group: HOSTILE } }),
    ],
    "tcp-checks": [{ name: "unlisted", target: "127.0.0.1", port: web.port, interval: "1s", timeout: "1s" }],
    ...extra,
  };
}

async function get(server: VigieServer, url: string, headers: Record<string, string> = {}) {
  const response = await server.app.inject({ method: "GET", url, headers });
  return { status: response.statusCode, headers: response.headers, body: response.body };
}

/** Waits until every named check has a result (checks first run within their interval). */
async function results(server: VigieServer, names: readonly string[]): Promise<void> {
  for (const name of names) {
    await until(
      async () => ((await get(server, `/result/${encodeURIComponent(name)}`)).status === 200 ? true : undefined),
      `a result of ${name}`,
    );
  }
}

describe("the status page of a server with checks", () => {
  let server: VigieServer;
  beforeAll(async () => {
    server = await startTestServer({
      modules: [healthchecksModule],
      config: { healthchecks: healthchecks({ title: "Acme <status>", checks: ["website", "team=web"] }) },
    });
    await results(server, ["website", "api", "resolver", HOSTILE, "unlisted"]);
  });
  afterAll(() => server?.close());

  it("answers the page with its headers: HTML, no-cache, a strict Content-Security-Policy", async () => {
    const page = await get(server, "/status");
    expect(page.status).toBe(200);
    expect(page.headers["content-type"]).toBe("text/html; charset=utf-8");
    expect(page.headers["cache-control"]).toBe("no-cache");
    expect(page.headers["x-content-type-options"]).toBe("nosniff");
    expect(page.headers["content-security-policy"]).toBe(STATUS_CSP);
    const policy = String(page.headers["content-security-policy"]);
    for (const directive of ["default-src 'none'", "script-src 'self'", "connect-src 'self'", "img-src 'self' data:"]) {
      expect(policy).toContain(directive);
    }
    // The one inline style is the one the policy allows by hash; nothing inline runs.
    const styles = [...page.body.matchAll(/<style>([^<]*)<\/style>/g)].map((match) => match[1] ?? "");
    expect(styles).toHaveLength(1);
    expect(policy).toContain(
      `'sha256-${createHash("sha256")
        .update(styles[0] ?? "")
        .digest("base64")}'`,
    );
    expect(page.body.match(/<script[^>]*>/g)).toEqual(['<script src="/status/status.js" defer>']);
    expect(page.body).not.toMatch(/\s(on[a-z]+|style)="|javascript:/i);
    // No URL of another origin anywhere in the page.
    expect(page.body).not.toMatch(/(https?:)?\/\/[a-z0-9]/i);

    const data = await get(server, "/status/data");
    expect(data.status).toBe(200);
    expect(data.headers["content-type"]).toBe("application/json; charset=utf-8");
    expect(data.headers["cache-control"]).toBe("no-cache");
    expect(data.headers["content-security-policy"]).toBe(STATUS_CSP);
  });

  it("shows the selected checks grouped by their group label, with their states as text", async () => {
    const { body } = await get(server, "/status");
    expect(body).toContain('<html lang="en">');
    expect(body).toContain("<title>Acme &lt;status&gt;</title>");
    expect(body).toContain("<h1>Acme &lt;status&gt;</h1>");
    // Groups in the order of their first check: website first (its own selector), then those of
    // team=web by name ("<" sorts before letters); the checks without a group last.
    expect(body.match(/<h2>[^<]*<\/h2>/g)).toEqual([
      "<h2>Front end</h2>",
      `<h2>${ESCAPED_HOSTILE}</h2>`,
      "<h2>Back end</h2>",
      "<h2>Other services</h2>",
    ]);
    expect(body.match(/<h3>[^<]*<\/h3>/g)).toEqual([
      "<h3>website</h3>",
      `<h3>${ESCAPED_HOSTILE}</h3>`,
      "<h3>api</h3>",
      "<h3>resolver</h3>",
    ]);
    const stateOf = (name: string) =>
      body.match(
        new RegExp(
          `data-name="${name}" data-state="[a-z]+"><div class="head"><h3>[^<]*</h3><p class="state [a-z]+"><span aria-hidden="true">.</span> ([A-Za-z ]+)</p>`,
        ),
      )?.[1];
    expect(stateOf("website")).toBe("Operational");
    expect(stateOf("api")).toBe("Down");
    expect(stateOf("resolver")).toBe("Down");
    expect(body).toContain("What visitors see");
    expect(body).toContain("2 of 4 checks are down");
    expect(body).not.toContain("unlisted");
    // Escaped everywhere: the name, the group, the description.
    expect(body).not.toContain("<img");
    expect(body).toContain(`<p class="desc">&quot;${ESCAPED_HOSTILE}&quot; &amp; more</p>`);
    // The bar covers the retention's 90 days; the periods it covers are shown.
    expect(body.match(/<ol aria-hidden="true">(<li[^>]*><\/li>){90}<\/ol>/g)).toHaveLength(4);
    expect(body).toContain("<dt>Uptime 30 days</dt>");
  });

  it("answers the same data as JSON for the refresh script", async () => {
    const response = await get(server, "/status/data");
    const data: unknown = JSON.parse(response.body);
    expect(isStatusData(data)).toBe(true);
    if (!isStatusData(data)) return;
    expect(data).toMatchObject({ title: "Acme <status>", days: 90, periods: ["24h", "7d", "30d"] });
    expect(data.groups.map((group) => [group.name, group.checks.map((c) => [c.name, c.state])])).toEqual([
      ["Front end", [["website", "up"]]],
      [HOSTILE, [[HOSTILE, "up"]]],
      ["Back end", [["api", "down"]]],
      [null, [["resolver", "down"]]],
    ]);
    const website = data.groups[0]?.checks[0];
    expect(Object.keys(website ?? {})).toEqual([
      "name",
      "description",
      "state",
      "since",
      "checked",
      "uptime",
      "daily",
      "response-times",
    ]);
    expect(website?.checked).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    expect(website?.daily.map((day) => day.day)).toEqual(lastDays(90, Date.parse(data.generated)));
  });

  it("never shows a target, path, query, header, result message or label other than group", async () => {
    // The secrets are there to leak: in the results' messages and labels.
    expect((await get(server, "/result/api")).body).toContain(SECRETS.body);
    expect((await get(server, "/result/api")).body).toContain(SECRETS.label);
    expect((await get(server, "/result/resolver")).body).toContain(SECRETS.target);
    for (const url of ["/status", "/status/data"]) {
      const { body } = await get(server, url);
      for (const secret of Object.values(SECRETS)) expect(body, `${url} shows ${secret}`).not.toContain(secret);
      for (const word of ["owner", "team", "127.0.0.1", String(failing.port), "HTTP request failed", "broken"]) {
        expect(body, `${url} shows ${word}`).not.toContain(word);
      }
    }
  });

  it("weighs under 30 kB with its CSS and script", async () => {
    const page = await get(server, "/status");
    const script = await get(server, "/status/status.js");
    const bytes = Buffer.byteLength(page.body) + Buffer.byteLength(script.body);
    console.log(`/status ${Buffer.byteLength(page.body)} bytes + script ${Buffer.byteLength(script.body)} bytes`);
    expect(bytes).toBeLessThan(30_000);
  });

  it("stays under 30 kB for four checks with 90 days of history, a full chart and incidents", async () => {
    const nowMs = Date.now();
    // An open incident with five updates of 300 characters, and two resolved ones.
    const message = (index: number) =>
      `Update ${index}: ${"the orders take longer than usual to confirm ".repeat(7)}`.slice(0, 300);
    const incident = (id: string, statuses: IncidentStatus[]): Incident => ({
      id,
      title: `Orders are slow (${id})`,
      checks: ["website", "api"],
      pages: [""],
      updates: statuses.map((status, index) => ({
        status,
        message: message(index),
        timeMs: nowMs - 3_600_000 + index,
      })),
    });
    const incidents = [
      incident("open", ["investigating", "identified", "monitoring", "monitoring", "monitoring"]),
      incident("done-1", ["investigating", "identified", "resolved"]),
      incident("done-2", ["investigating", "resolved"]),
    ];
    const history: StatusHistory = {
      uptime: async () => ({ "1h": 1, "24h": 0.9993, "7d": 0.9997, "30d": 0.9999, incidents: [] }),
      daily: async (names, days) =>
        new Map(
          names.map((name) => [name, lastDays(days, nowMs).map((day, i) => ({ day, ratio: i % 9 ? 1 : 0.9987 }))]),
        ),
      responseTimes: async (_name, sinceMs) =>
        Array.from({ length: 288 }, (_, i) => ({ time: sinceMs + i * 300_000 + 1, duration: 100 + ((i * 37) % 900) })),
      stateSince: async () => nowMs - 86_400_000,
    };
    const names = ["website", "api", "database", "mail"];
    const data = await collectStatus(
      {
        title: "Status of Acme",
        selectors: [],
        checks: () =>
          names.map((name, i) => ({
            definition: { name, description: `The ${name} of Acme` },
            labels: { group: i < 2 ? "Web" : "Back end" },
          })),
        results: {
          get: () => ({ success: true, timestamp: new Date(nowMs).toISOString() }),
        },
        history,
        retentionMs: 90 * 86_400_000,
      },
      nowMs,
      incidents,
    );
    expect(data.incidents.map((shown) => shown.updates.length)).toEqual([5, 1, 1]);
    const page = renderStatusPage(data, { refreshMs: 30_000, script: true });
    const script = await get(server, "/status/status.js");
    const bytes = Buffer.byteLength(page) + Buffer.byteLength(script.body);
    console.log(
      `four full checks: page ${Buffer.byteLength(page)} bytes + script ${Buffer.byteLength(script.body)} bytes = ${bytes}`,
    );
    expect(bytes).toBeLessThan(30_000);
  });

  it("serves the built script, revalidated by its entity tag", async () => {
    const script = await get(server, "/status/status.js");
    expect(script.status).toBe(200);
    expect(script.headers["content-type"]).toBe("text/javascript; charset=utf-8");
    expect(script.headers["cache-control"]).toBe("no-cache");
    expect(script.body).toContain("/status/data");
    const etag = String(script.headers.etag);
    expect(etag).toMatch(/^"[\w-]{22}"$/);
    const again = await get(server, "/status/status.js", { "if-none-match": etag });
    expect(again.status).toBe(304);
    expect(again.body).toBe("");
  });

  it("refreshes every 30 s, or as often as ?refresh=<seconds> asks (1 to 3600)", async () => {
    expect((await get(server, "/status")).body).toContain('data-refresh-ms="30000"');
    expect((await get(server, "/status?refresh=2")).body).toContain('data-refresh-ms="2000"');
    for (const value of ["0", "3601", "abc", "1.5", "-1", ""]) {
      const refused = await get(server, `/status?refresh=${value}`);
      expect(refused.status, value).toBe(400);
      expect(JSON.parse(refused.body)).toEqual({
        error: "query parameter refresh: must be an integer number of seconds between 1 and 3600",
      });
    }
    expect((await get(server, "/status?refresh=1&refresh=2")).status).toBe(400);
  });

  it("answers HEAD, and keeps the platform's Host check", async () => {
    const head = await server.app.inject({ method: "HEAD", url: "/status" });
    expect(head.statusCode).toBe(200);
    expect(head.body).toBe("");
    expect((await get(server, "/status", { host: "evil.example" })).status).toBe(421);
  });
});

describe("checks that come and go", () => {
  let server: VigieServer;
  const data = async () => {
    const parsed: unknown = JSON.parse((await get(server, "/status/data")).body);
    return isStatusData(parsed) ? parsed.groups.flatMap((group) => group.checks.map((c) => c.name)) : undefined;
  };
  beforeAll(async () => {
    server = await startTestServer({
      modules: [healthchecksModule],
      config: {
        healthchecks: healthchecks(
          { checks: ["unlisted", "team=ops"] },
          { "http-checks": [check("x", web.port, { labels: { team: "ops" } })] },
        ),
      },
    });
  });
  afterAll(() => server?.close());

  it("evaluates the selectors at each render: added checks appear, removed ones go, without error", async () => {
    expect(await data()).toEqual(["unlisted", "x"]);
    const added = await server.app.inject({
      method: "POST",
      url: "/healthcheck/tcp",
      payload: {
        name: "later",
        target: "127.0.0.1",
        port: web.port,
        interval: "1h",
        timeout: "1s",
        labels: { team: "ops" },
      },
    });
    expect(added.statusCode).toBe(201);
    await until(async () => ((await data())?.includes("later") ? true : undefined), "the added check on the page");
    expect(await data()).toEqual(["unlisted", "later", "x"]);
    for (const name of ["later", "x", "unlisted"]) {
      expect((await server.app.inject({ method: "DELETE", url: `/healthcheck/${name}` })).statusCode).toBe(200);
    }
    await until(async () => ((await data())?.length === 0 ? true : undefined), "an empty page");
    const page = await get(server, "/status");
    expect(page.status).toBe(200);
    expect(page.body).toContain("No checks to show");
  });
});

describe("the status page's configuration", () => {
  it("refuses at start-up a selector that selects no check, naming its index", async () => {
    await expect(
      startTestServer({
        modules: [healthchecksModule],
        config: { healthchecks: healthchecks({ checks: ["website", "nope"] }) },
      }),
    ).rejects.toThrow(
      'invalid configuration: healthchecks.status-page.checks[1]: selects no healthcheck: no check is named nope (got "nope")',
    );
    await expect(
      startTestServer({
        modules: [healthchecksModule],
        config: { healthchecks: healthchecks({ checks: ["team=ops"] }) },
      }),
    ).rejects.toThrow(
      'invalid configuration: healthchecks.status-page.checks[0]: selects no healthcheck: no check has the label team=ops (got "team=ops")',
    );
  });

  it("shows every check when the list is empty", async () => {
    const server = await startTestServer({ modules: [healthchecksModule], config: { healthchecks: healthchecks({}) } });
    try {
      const parsed: unknown = JSON.parse((await get(server, "/status/data")).body);
      const names = isStatusData(parsed) ? parsed.groups.flatMap((group) => group.checks.map((c) => c.name)) : [];
      expect(names.sort()).toEqual([HOSTILE, "api", "resolver", "unlisted", "website"].sort());
    } finally {
      await server.close();
    }
  });

  it("registers no route when the page is disabled", async () => {
    const server = await startTestServer({
      modules: [healthchecksModule],
      config: { healthchecks: { ...healthchecks({}), "status-page": { enabled: false, checks: ["nope"] } } },
    });
    try {
      for (const url of ["/status", "/status/data", "/status/status.js"]) {
        const response = await get(server, url);
        expect(response.status).toBe(404);
        expect(JSON.parse(response.body)).toEqual({ error: `route GET ${url} not found` });
      }
      expect(server.routes.filter((route) => route.url.startsWith("/status"))).toEqual([]);
    } finally {
      await server.close();
    }
  });

  it("stays public when the API requires a token", async () => {
    const server = await startTestServer({
      modules: [healthchecksModule],
      config: { security: { "require-token": true }, healthchecks: healthchecks({ checks: ["website"] }) },
    });
    try {
      expect((await get(server, "/healthcheck")).status).toBe(401);
      expect((await get(server, "/status")).status).toBe(200);
      expect((await get(server, "/status/data")).status).toBe(200);
      expect((await get(server, "/status/status.js")).status).toBe(200);
    } finally {
      await server.close();
    }
  });
});
