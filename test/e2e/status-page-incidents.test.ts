/**
 * Incidents and maintenance on a status page through the real `vigie` process, in Debian's
 * Chromium (playwright-core driving /usr/bin/chromium, never a downloaded browser): a second page
 * (`healthchecks.status-pages`) shows an incident created and updated through the API with its
 * timeline, and a maintenance window planned through the API, as text; without JavaScript (the
 * server's first view) and with it, where a new update appears on the next refresh without a
 * reload. Messages holding markup show as text. Its Atom feed lists both.
 *
 * A screenshot is kept under `VIGIE_TEST_ARTIFACTS` when set, else under the test's temporary
 * directory (printed).
 */
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { createServer as createTcpServer } from "node:net";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Listening, listen } from "../healthchecks/local-servers.js";
import { CHROMIUM, launchChromium } from "../support/browser.js";
import { freePort, startVigie, stopVigie, temporaryDirectory, type VigieProcess } from "../support/process.js";

const HOUR = 3_600_000;
const MARKUP = "<b>bold</b> & <script>alert(1)</script>";

describe("incidents and maintenance on a status page in Chromium", () => {
  const directory = temporaryDirectory();
  const artifacts = process.env.VIGIE_TEST_ARTIFACTS ?? join(directory, "artifacts");
  let database: Listening | undefined;
  let vigie: VigieProcess | undefined;
  let browser: Browser | undefined;
  let baseUrl = "";

  const post = async (path: string, body: unknown) => {
    const response = await fetch(`${baseUrl}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    const answer: unknown = await response.json();
    expect(response.status, JSON.stringify(answer)).toBeLessThan(300);
    return answer as Record<string, string>;
  };

  beforeAll(async () => {
    database = await listen(createTcpServer((socket) => socket.end()));
    const port = await freePort();
    baseUrl = `http://127.0.0.1:${port}`;
    const configFile = join(directory, "vigie.yaml");
    const tcp = (name: string) => ({ name, target: "127.0.0.1", port: database?.port, interval: "1s", timeout: "1s" });
    const config = {
      http: { port },
      database: { url: `sqlite:${join(directory, "vigie.db")}` },
      healthchecks: {
        "min-interval": "1s",
        "status-pages": [
          { slug: "", title: "Acme status", checks: ["website"] },
          { slug: "ops", title: "Acme operations", description: "What the on-call team watches", checks: ["database"] },
        ],
        "tcp-checks": [tcp("website"), tcp("database")],
      },
    };
    writeFileSync(configFile, JSON.stringify(config, null, 2));
    vigie = await startVigie({ configFile, port, cwd: directory });
    if (existsSync(CHROMIUM)) browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    await stopVigie(vigie);
    await database?.close();
  });

  it.skipIf(!existsSync(CHROMIUM))(
    "shows an incident with its updates and a maintenance window, first without JavaScript, then refreshed",
    async () => {
      const { id } = await post("/incident", {
        title: "Orders are slow",
        status: "investigating",
        message: `Orders take a minute to confirm. ${MARKUP}`,
        checks: ["database"],
        pages: ["ops"],
      });
      await post(`/incident/${id}/update`, { status: "identified", message: "A missing index on the orders table." });
      const start = Date.now() + 2 * HOUR;
      await post("/maintenance", {
        name: "db-upgrade",
        checks: ["database"],
        start: new Date(start).toISOString(),
        end: new Date(start + HOUR).toISOString(),
      });
      // Each page computes its answers at most once a second.
      await new Promise((resolve) => setTimeout(resolve, 1_100));

      const still = await browser?.newContext({ javaScriptEnabled: false });
      if (still === undefined) throw new Error("no browser");
      try {
        const page = await still.newPage();
        await page.goto(`${baseUrl}/status/ops`);
        expect(await page.title()).toBe("Acme operations");
        const incident = page.locator(`article[data-id="${id}"]`);
        expect(await incident.getByRole("heading", { level: 3 }).innerText()).toBe("Orders are slow");
        const text = await incident.innerText();
        expect(text).toContain("Identified");
        expect(text).toContain("A missing index on the orders table.");
        expect(text).toContain(`Orders take a minute to confirm. ${MARKUP}`);
        expect(await page.locator("b, main script").count()).toBe(0);
        expect(await page.locator("header").innerText()).toContain("db-upgrade");
        expect(await page.locator("header").innerText()).toContain("What the on-call team watches");
        // The other page shows neither.
        await page.goto(`${baseUrl}/status`);
        expect(await page.locator("main").innerText()).not.toContain("Orders are slow");
      } finally {
        await still.close();
      }

      const context = await browser?.newContext({ viewport: { width: 900, height: 1000 } });
      if (context === undefined) throw new Error("no browser");
      try {
        const page = await context.newPage();
        const errors: string[] = [];
        page.on("console", (message) => {
          if (message.type() === "error") errors.push(message.text());
        });
        page.on("pageerror", (error) => errors.push(error.message));
        await page.goto(`${baseUrl}/status/ops?refresh=1`);
        await page.evaluate(() => Reflect.set(globalThis, "incidentMarker", 7));
        await post(`/incident/${id}/update`, { status: "resolved", message: "The index is built; orders are fast." });
        await page.getByText("The index is built; orders are fast.").waitFor({ timeout: 20_000 });
        expect(await page.getByRole("heading", { level: 2, name: "Resolved incidents, last 14 days" }).count()).toBe(1);
        expect(await page.evaluate(() => Reflect.get(globalThis, "incidentMarker"))).toBe(7);
        expect(errors).toEqual([]);
        mkdirSync(artifacts, { recursive: true });
        const path = join(artifacts, "status-page-incident.png");
        // The open state makes the better picture: reopen it for the screenshot.
        await post(`/incident/${id}/update`, { status: "monitoring", message: "Watching the orders after the fix." });
        await page.getByText("Watching the orders after the fix.").waitFor({ timeout: 20_000 });
        await page.screenshot({ path, fullPage: true });
        console.log(`screenshot of a status page with an incident: ${path}`);
      } finally {
        await context.close();
      }

      const feed = await (await fetch(`${baseUrl}/status/ops/feed.atom`)).text();
      expect(feed).toContain('<title type="text">Monitoring: Orders are slow</title>');
      expect(feed).toContain("Maintenance: db-upgrade");
      expect(feed).toContain("&lt;script&gt;");
    },
  );
});

if (!existsSync(CHROMIUM))
  console.log(`skipping the Chromium tests of incidents: ${CHROMIUM} is missing (install Debian's chromium)`);
