/**
 * Publish/subscribe through the real `vigie` process with `security.require-token: true`
 * (docs/streams.md): a `ws` client, and Chromium's own WebSocket from a page of an allowed origin
 * (playwright-core driving Debian's /usr/bin/chromium, never a downloaded browser), both
 * subscribed with a query, receive only the matching events of a stream with `publish` and
 * `index`; a page of another origin is refused before the upgrade; no token reaches the log.
 *
 * The page's screenshot is kept under `VIGIE_TEST_ARTIFACTS` when set, else under the test's
 * temporary directory (printed).
 */
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHROMIUM, launchChromium } from "../support/browser.js";
import { freePort, startVigieWithToken, temporaryDirectory, type VigieProcess } from "../support/process.js";
import { until } from "../support/until.js";
import { refusedUpgrade, subscribe, type TestSubscriber } from "../support/websocket.js";

const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64");
const STREAM =
  "{:actions {:action :sdo :children [{:action :publish :params [:alerts]} {:action :index :params [[:host :service]]}]}}";

/**
 * The page: opens the WebSocket URL given in its own query string, lists what it receives, and
 * records how the connection ended (a refused upgrade is only an error and a 1006 close to a page).
 */
const PAGE = `<!doctype html>
<html><head><meta charset="utf-8"><title>Vigie channel</title>
<style>body{font:14px monospace;margin:1em} li{margin:.2em 0}</style></head>
<body><h1>Vigie channel</h1><p id="state">connecting</p><ol id="events"></ol>
<script>
  window.received = [];
  window.outcome = { opened: false, error: false, closeCode: null };
  const url = new URLSearchParams(location.search).get("ws");
  const socket = new WebSocket(url);
  const state = document.getElementById("state");
  socket.onopen = () => { window.outcome.opened = true; state.textContent = "subscribed to " + url.replace(/token=[^&]*/, "token=<redacted>"); };
  socket.onerror = () => { window.outcome.error = true; state.textContent = "error"; };
  socket.onclose = (event) => { window.outcome.closeCode = event.code; state.textContent += " (closed " + event.code + ")"; };
  socket.onmessage = (message) => {
    if (typeof message.data !== "string") { window.binary = true; return; }
    const event = JSON.parse(message.data);
    window.received.push(event);
    const item = document.createElement("li");
    item.textContent = message.data;
    document.getElementById("events").append(item);
  };
</script></body></html>`;

/** Serves {@link PAGE} on 127.0.0.1; resolves with the server and its origin. */
async function servePage(): Promise<{ server: Server; origin: string }> {
  const server = createServer((_request, response) => {
    response.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(PAGE);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address !== null ? address.port : 0;
  return { server, origin: `http://127.0.0.1:${port}` };
}

describe("publish/subscribe against the real process", () => {
  const directory = temporaryDirectory();
  const artifacts = process.env.VIGIE_TEST_ARTIFACTS ?? join(directory, "artifacts");
  let vigie: VigieProcess | undefined;
  let allowedPage: { server: Server; origin: string } | undefined;
  let foreignPage: { server: Server; origin: string } | undefined;
  let browser: Browser | undefined;
  const subscribers: TestSubscriber[] = [];
  let token = "";
  let port = 0;

  const api = async (method: string, path: string, body?: unknown, bearer: string | undefined = token) => {
    const headers: Record<string, string> = {};
    if (bearer !== undefined) headers.authorization = `Bearer ${bearer}`;
    if (body !== undefined) headers["content-type"] = "application/json";
    const response = await fetch(`http://127.0.0.1:${port}${path}`, {
      method,
      headers,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, body: text.startsWith("{") ? JSON.parse(text) : text };
  };
  const push = (events: unknown[]) => api("PUT", "/api/v1/stream/web", { events });
  const metrics = async () => (await fetch(`http://127.0.0.1:${port}/metrics`)).text();

  beforeAll(async () => {
    allowedPage = await servePage();
    foreignPage = await servePage();
    port = await freePort();
    const configFile = join(directory, "vigie.yaml");
    writeFileSync(
      configFile,
      [
        "http:",
        `  port: ${port}`,
        `  allowed-origins: [${JSON.stringify(allowedPage.origin)}]`,
        "security:",
        "  require-token: true",
        "log-level: debug",
        `database:\n  url: ${JSON.stringify(`sqlite:${join(directory, "vigie.db")}`)}`,
        "",
      ].join("\n"),
    );
    ({ vigie, token } = await startVigieWithToken({ configFile, port, cwd: directory }));
    expect(await api("POST", "/api/v1/stream/web", { config: b64(STREAM) })).toMatchObject({ status: 201 });
  });

  afterAll(async () => {
    for (const subscriber of subscribers.splice(0)) subscriber.socket.terminate();
    await browser?.close();
    vigie?.child.kill("SIGKILL");
    await Promise.all(
      [allowedPage, foreignPage].map(
        (page) => new Promise<void>((resolve) => (page === undefined ? resolve() : page.server.close(() => resolve()))),
      ),
    );
  });

  it("sends a ws client, with a token and a query, only the matching events of publish and index", async () => {
    const channel = `ws://127.0.0.1:${port}/api/v1/channel`;
    expect(await refusedUpgrade(`${channel}/alerts`)).toMatchObject({ status: 401, body: { error: "missing token" } });
    const cpu = await subscribe(`${channel}/alerts?query=${encodeURIComponent(b64('[:= :service "cpu"]'))}`, {
      authorization: `Bearer ${token}`,
    });
    subscribers.push(cpu);
    const indexed = await subscribe(
      `${channel}/web-index?token=${token}&query=${encodeURIComponent(b64('[:and [:= :host "db"] [:> :metric 0.5]]'))}`,
    );
    subscribers.push(indexed);

    const events = [
      { host: "web", service: "cpu", metric: 0.2, time: 10 },
      { host: "db", service: "cpu", metric: 0.9, time: 11 },
      { host: "db", service: "disk", metric: 0.1, time: 12 },
      { host: "db", service: "disk", metric: 0.7, time: 13, description: "déjà vu" },
    ];
    expect(await push(events)).toEqual({ status: 200, body: { message: "ok" } });
    expect(await cpu.received(2)).toEqual([events[0], events[1]]);
    expect(await indexed.received(2)).toEqual([events[1], events[3]]);
    // A later event that matches proves nothing else was queued in between.
    await push([{ host: "db", service: "cpu", metric: 1, time: 14 }]);
    await cpu.received(3);
    await indexed.received(3);
    expect(cpu.events).toHaveLength(3);
    expect(indexed.events).toHaveLength(3);
    expect(cpu.binaryFrames + indexed.binaryFrames).toBe(0);

    const text = await metrics();
    expect(text).toContain('stream_subscribers{channel="alerts"} 1');
    expect(text).toContain('stream_subscribers{channel="web-index"} 1');
    expect(text).toContain('stream_published_events_total{channel="alerts"} 5');
  });

  it.skipIf(!existsSync(CHROMIUM))(
    "lets a page of an allowed origin subscribe with Chromium's WebSocket and ?token=, and refuses another origin",
    async () => {
      browser = await launchChromium();
      const query = encodeURIComponent(b64('[:= :service "http"]'));
      const wsUrl = `ws://127.0.0.1:${port}/api/v1/channel/alerts?query=${query}&token=${token}`;
      const context = await browser.newContext();
      try {
        const page = await context.newPage();
        await page.goto(`${allowedPage?.origin}/?ws=${encodeURIComponent(wsUrl)}`);
        await page.waitForFunction(() => Reflect.get(globalThis, "outcome")?.opened === true, undefined, {
          timeout: 10_000,
        });
        await until(
          async () => ((await metrics()).includes('stream_subscribers{channel="alerts"} 2') ? true : undefined),
          "the page's subscription in the gauge",
        );

        const events = [
          { host: "web", service: "http", metric: 200, time: 20 },
          { host: "web", service: "cpu", metric: 0.3, time: 21 },
          { host: "api", service: "http", metric: 503, time: 22, state: "critical" },
        ];
        expect(await push(events)).toMatchObject({ status: 200 });
        await page.waitForFunction(() => Reflect.get(globalThis, "received")?.length >= 2, undefined, {
          timeout: 10_000,
        });
        expect(await page.evaluate(() => Reflect.get(globalThis, "received"))).toEqual([events[0], events[2]]);
        expect(await page.evaluate(() => Reflect.get(globalThis, "binary"))).toBeUndefined();
        mkdirSync(artifacts, { recursive: true });
        const screenshot = join(artifacts, "channels-chromium.png");
        await page.screenshot({ path: screenshot, fullPage: true });
        console.log(`screenshot of the subscribed page: ${screenshot}`);

        const foreign = await context.newPage();
        await foreign.goto(`${foreignPage?.origin}/?ws=${encodeURIComponent(wsUrl)}`);
        await foreign.waitForFunction(() => Reflect.get(globalThis, "outcome")?.closeCode !== null, undefined, {
          timeout: 10_000,
        });
        expect(await foreign.evaluate(() => Reflect.get(globalThis, "outcome"))).toEqual({
          opened: false,
          error: true,
          closeCode: 1006,
        });
        const text = await metrics();
        expect(text).toMatch(/http_requests_total\{method="GET",route="\/api\/v1\/channel\/:channel",status="403"\} 1/);
        expect(text).toContain('stream_subscribers{channel="alerts"} 2');
      } finally {
        await context.close();
      }
    },
  );

  it("never logs a token, though the URLs held one and the log level is debug", () => {
    expect(vigie?.output()).not.toBe("");
    expect(vigie?.output()).not.toContain(token);
  });
});

if (!existsSync(CHROMIUM))
  console.log(`skipping the Chromium test: ${CHROMIUM} is missing (install Debian's chromium)`);
