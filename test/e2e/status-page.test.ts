/**
 * The public status page through the real `vigie` process (docs/healthchecks.md):
 *
 * - `vigie serve` with a selector that selects no check exits 2 naming it;
 * - in Debian's Chromium (playwright-core driving /usr/bin/chromium, never a downloaded browser):
 *   a page over two checks against targets this test controls (an http server it switches
 *   between 503 and 200, a TCP port it listens on) shows the ok and the failing check with their
 *   states as text, works with JavaScript disabled, and, with JavaScript, turns the failing check
 *   ok on a refresh after its target comes back, without reloading (a marker set on `window`
 *   survives, no second navigation), announcing it in its live region; every request goes to
 *   Vigie's own origin and the console shows no error (a Content-Security-Policy violation would).
 *
 * Screenshots of the page before and after the recovery are kept under `VIGIE_TEST_ARTIFACTS`
 * when set, else under the test's temporary directory (printed).
 */
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { createServer as createHttpServer } from "node:http";
import { createServer as createTcpServer } from "node:net";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Listening, listen } from "../healthchecks/local-servers.js";
import { CHROMIUM, launchChromium } from "../support/browser.js";
import { freePort, runCli, startVigie, stopVigie, temporaryDirectory, type VigieProcess } from "../support/process.js";
import { until } from "../support/until.js";

/** A configuration file with a status page over `checks`, in `directory`. */
function writeConfig(directory: string, port: number, healthchecks: Record<string, unknown>): string {
  const file = join(directory, "vigie.yaml");
  const config = {
    http: { port },
    database: { url: `sqlite:${join(directory, "vigie.db")}` },
    healthchecks: { "min-interval": "1s", ...healthchecks },
  };
  // JSON is YAML: no quoting to get wrong.
  writeFileSync(file, JSON.stringify(config, null, 2));
  return file;
}

describe("the status page's configuration", () => {
  it("makes vigie serve exit 2 naming a selector that selects no check", async () => {
    const directory = temporaryDirectory();
    const tcp = {
      name: "database",
      target: "127.0.0.1",
      port: 9,
      interval: "1h",
      timeout: "1s",
      labels: { tier: "data" },
    };
    const cases = [
      [["nope"], 'healthchecks.status-page.checks[0]: selects no healthcheck: no check is named nope (got "nope")'],
      [
        ["database", "tier=web"],
        'healthchecks.status-page.checks[1]: selects no healthcheck: no check has the label tier=web (got "tier=web")',
      ],
    ] as const;
    for (const [checks, message] of cases) {
      const configFile = writeConfig(directory, await freePort(), {
        "status-page": { enabled: true, checks },
        "tcp-checks": [tcp],
      });
      const run = await runCli(["serve", "--config", configFile], { cwd: directory });
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr).toContain(`vigie: invalid configuration: ${message}`);
    }
  });
});

describe("the status page in Chromium", () => {
  const directory = temporaryDirectory();
  const artifacts = process.env.VIGIE_TEST_ARTIFACTS ?? join(directory, "artifacts");
  let healthy = false;
  let website: Listening | undefined;
  let database: Listening | undefined;
  let vigie: VigieProcess | undefined;
  let browser: Browser | undefined;
  let baseUrl = "";

  /** The state a result route reports for `name`: "up", "down", or undefined before the first run. */
  const resultState = async (name: string) => {
    const response = await fetch(`${baseUrl}/result/${name}`);
    if (response.status !== 200) return undefined;
    const result: unknown = await response.json();
    return typeof result === "object" && result !== null && Reflect.get(result, "success") === true ? "up" : "down";
  };

  /** The state text shown for the check `name`: "Operational", "Down" or "No data". */
  const shownState = async (page: Page, name: string) =>
    (await page.locator(`article[data-name="${name}"] .state`).innerText()).replace(/^\S+\s+/, "");

  const screenshot = async (page: Page, name: string) => {
    mkdirSync(artifacts, { recursive: true });
    const path = join(artifacts, name);
    await page.screenshot({ path, fullPage: true });
    console.log(`screenshot of the status page: ${path}`);
  };

  beforeAll(async () => {
    website = await listen(
      createHttpServer((_request, response) => {
        response.writeHead(healthy ? 200 : 503).end(healthy ? "ok" : "maintenance");
      }),
    );
    database = await listen(createTcpServer((socket) => socket.end()));
    const port = await freePort();
    baseUrl = `http://127.0.0.1:${port}`;
    const configFile = writeConfig(directory, port, {
      history: { retention: "2160h" },
      "status-page": { enabled: true, title: "Acme status", checks: ["website", "tier=data"] },
      "http-checks": [
        {
          name: "website",
          description: "The public website",
          target: "127.0.0.1",
          port: website.port,
          path: "/leak-path",
          "valid-status": [200],
          interval: "1s",
          timeout: "1s",
          labels: { group: "Web", owner: "leak-label" },
        },
      ],
      "tcp-checks": [
        {
          name: "database",
          description: "Orders and invoices",
          target: "127.0.0.1",
          port: database.port,
          interval: "1s",
          timeout: "1s",
          labels: { group: "Data", tier: "data" },
        },
        { name: "unlisted", target: "127.0.0.1", port: database.port, interval: "1s", timeout: "1s" },
      ],
    });
    vigie = await startVigie({ configFile, port, cwd: directory });
    await until(
      async () =>
        (await resultState("website")) === "down" && (await resultState("database")) === "up" ? true : undefined,
      "a failing website and a working database",
    );
    if (existsSync(CHROMIUM)) browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    await stopVigie(vigie);
    await website?.close();
    await database?.close();
  });

  it.skipIf(!existsSync(CHROMIUM))("works with JavaScript disabled: the server renders the states", async () => {
    const context = await browser?.newContext({ javaScriptEnabled: false });
    if (context === undefined) throw new Error("no browser");
    try {
      const page = await context.newPage();
      await page.goto(`${baseUrl}/status`);
      expect(await page.title()).toBe("Acme status");
      expect(await page.getAttribute("html", "lang")).toBe("en");
      expect(await shownState(page, "website")).toBe("Down");
      expect(await shownState(page, "database")).toBe("Operational");
      expect(await page.locator("h2").allInnerTexts()).toEqual(["Web", "Data"]);
      expect(await page.content()).not.toMatch(/unlisted|leak-/);
      await screenshot(page, "status-page-no-javascript.png");
    } finally {
      await context.close();
    }
  });

  it.skipIf(!existsSync(CHROMIUM))(
    "shows the states as text and picks up a recovery on a refresh, without reload or foreign request",
    async () => {
      const context = await browser?.newContext({ viewport: { width: 900, height: 900 } });
      if (context === undefined) throw new Error("no browser");
      try {
        const page = await context.newPage();
        const requests: string[] = [];
        const errors: string[] = [];
        let navigations = 0;
        page.on("request", (request) => requests.push(request.url()));
        page.on("console", (message) => {
          if (message.type() === "error") errors.push(message.text());
        });
        page.on("pageerror", (error) => errors.push(error.message));
        page.on("framenavigated", (frame) => {
          if (frame === page.mainFrame()) navigations += 1;
        });
        // Refreshes every second rather than every 30 s.
        await page.goto(`${baseUrl}/status?refresh=1`);

        // Accessibility basics: language, title, landmarks, a heading per group, states as text.
        expect(await page.getAttribute("html", "lang")).toBe("en");
        expect(await page.title()).toBe("Acme status");
        await expect(page.getByRole("heading", { level: 1, name: "Acme status" }).count()).resolves.toBe(1);
        for (const group of ["Web", "Data"]) {
          await expect(page.getByRole("heading", { level: 2, name: group }).count()).resolves.toBe(1);
        }
        for (const check of ["website", "database"]) {
          await expect(page.getByRole("heading", { level: 3, name: check }).count()).resolves.toBe(1);
        }
        await expect(page.getByRole("main").count()).resolves.toBe(1);
        await expect(page.getByRole("status").count()).resolves.toBe(1);
        expect(await shownState(page, "website")).toBe("Down");
        expect(await shownState(page, "database")).toBe("Operational");
        expect(await page.locator("main").innerText()).toContain("1 of 2 checks is down");
        await screenshot(page, "status-page-before-recovery.png");

        await page.evaluate(() => Reflect.set(globalThis, "statusPageMarker", 42));
        healthy = true;
        // The script patches the article's data-state with the state it shows.
        await page.locator('article[data-name="website"][data-state="up"]').waitFor({ timeout: 20_000 });
        expect(await shownState(page, "website")).toBe("Operational");
        expect(await shownState(page, "database")).toBe("Operational");
        expect(await page.locator("main").innerText()).toContain("All checks are operational");
        expect(await page.getByRole("status").innerText()).toContain("website is now Operational");
        // Patched in place: the same document, never navigated again.
        expect(await page.evaluate(() => Reflect.get(globalThis, "statusPageMarker"))).toBe(42);
        expect(navigations).toBe(1);
        await screenshot(page, "status-page-after-recovery.png");

        // The page, its script and its data, all from Vigie; nothing else, and no CSP violation.
        const paths = requests.map((url) => new URL(url)).filter((url) => url.protocol !== "data:");
        for (const url of paths) expect(url.origin, url.href).toBe(baseUrl);
        const seen = new Set(paths.map((url) => url.pathname));
        expect([...seen].sort()).toEqual(["/status", "/status/data", "/status/status.js"]);
        expect(errors).toEqual([]);
      } finally {
        await context.close();
      }
    },
  );
});

if (!existsSync(CHROMIUM))
  console.log(`skipping the Chromium tests of the status page: ${CHROMIUM} is missing (install Debian's chromium)`);
