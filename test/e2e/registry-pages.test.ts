/**
 * The Cargo registry's web pages and release announcements through the real `vigie` process
 * (docs/cargo.md):
 *
 * - a crate published by the stock `cargo` (its README.md sent by cargo) is announced by the
 *   example stream examples/streams/streams/release-announcements.edn to a Slack-like webhook this
 *   test runs, as `{"text": "root published hello-pages 0.1.0"}`, and its page shows the README;
 * - in Debian's Chromium (playwright-core, /usr/bin/chromium) with JavaScript off: the list, a
 *   search through the form, a crate page whose hostile README (a script, `javascript:` links, an
 *   image with `onerror`) opens no dialog and makes no request; every request stays on Vigie's
 *   origin and the console shows no error (a CSP violation would);
 * - a private registry (`auth-required`): the page asks for sign-in, a user signs in with a name and
 *   password, browses, searches, and signs out (the token the page created is deleted).
 *
 * Screenshots are kept under `VIGIE_TEST_ARTIFACTS` when set, else under the test's temporary
 * directory (printed).
 */
import { copyFileSync, existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dependency, publication } from "../registry/cargo/frames.js";
import { CHROMIUM, launchChromium } from "../support/browser.js";
import { freePort, startVigie, stopVigie, temporaryDirectory, type VigieProcess } from "../support/process.js";
import { type Receiver, startReceiver } from "../support/receiver.js";
import { CARGO, CargoHome, outputOf, writeCrate } from "./cargo/cargo.js";
import { putCrate } from "./cargo/frame.js";

const ROOT = { name: "root", password: "root-password" };
const CRATES_IO = "https://github.com/rust-lang/crates.io-index";
const EXAMPLE = resolve(import.meta.dirname, "../../examples/streams/streams/release-announcements.edn");

const HOSTILE_README = [
  "# Hostile",
  "",
  "<script>alert('script')</script>",
  "",
  "[click](javascript:alert('link')) [data](data:text/html,<script>alert(1)</script>)",
  "",
  '<img src="http://127.0.0.2:9/x.png" onerror="alert(\'img\')">',
  "",
  "![remote](http://127.0.0.2:9/badge.svg) and <https://example.org>",
].join("\n");

/** Starts a Vigie with the Cargo registry, its events going to the example stream and `webhook`. */
async function startRegistry(directory: string, authRequired: boolean, webhook: string): Promise<VigieProcess> {
  const port = await freePort();
  const streams = join(directory, "streams");
  mkdirSync(streams, { recursive: true });
  copyFileSync(EXAMPLE, join(streams, "release-announcements.edn"));
  const configFile = join(directory, "vigie.yaml");
  const config = {
    http: { host: "127.0.0.1", port },
    "log-level": "warn",
    database: { url: `sqlite:${join(directory, "vigie.db")}` },
    streams: { directories: [streams], outputs: { chat: { type: "http", url: webhook, format: "slack" } } },
    registry: {
      enabled: true,
      streams: ["release-announcements"],
      cargo: { enabled: true, "auth-required": authRequired, storage: join(directory, "crates") },
    },
  };
  // JSON is YAML: no quoting to get wrong.
  writeFileSync(configFile, JSON.stringify(config, null, 2));
  return startVigie({
    configFile,
    port,
    cwd: directory,
    env: { VIGIE_ADMIN_NAME: ROOT.name, VIGIE_ADMIN_PASSWORD: ROOT.password },
  });
}

async function tokenOf(vigie: VigieProcess, name: string): Promise<string> {
  const response = await fetch(`${vigie.baseUrl}/api/v1/registry/token`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ name, user: ROOT.name, password: ROOT.password }),
  });
  expect(response.status).toBe(201);
  return ((await response.json()) as { token: string }).token;
}

/** Publishes over HTTP (no cargo needed) and expects 200. */
async function published(vigie: VigieProcess, token: string, name: string, vers: string, fields = {}) {
  const answer = await putCrate(vigie.baseUrl, token, (await publication(name, vers, fields)).body);
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
}

describe("the Cargo registry's pages and release announcements", () => {
  const directory = temporaryDirectory();
  const artifacts = process.env.VIGIE_TEST_ARTIFACTS ?? join(directory, "artifacts");
  let webhook: Receiver;
  let vigie: VigieProcess;
  let privateVigie: VigieProcess;
  let browser: Browser | undefined;
  let token: string;

  const screenshot = async (page: Page, name: string) => {
    mkdirSync(artifacts, { recursive: true });
    const path = join(artifacts, name);
    await page.screenshot({ path, fullPage: true });
    console.log(`screenshot of the registry pages: ${path}`);
  };

  /** A page that records its requests, dialogs and console errors. */
  const watched = async (context: BrowserContext) => {
    const page = await context.newPage();
    const requests: string[] = [];
    const dialogs: string[] = [];
    const errors: string[] = [];
    page.on("request", (request) => requests.push(request.url()));
    page.on("dialog", (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
    page.on("console", (message) => {
      if (message.type() === "error") errors.push(message.text());
    });
    page.on("pageerror", (error) => errors.push(error.message));
    return { page, requests, dialogs, errors };
  };

  beforeAll(async () => {
    webhook = await startReceiver();
    vigie = await startRegistry(join(directory, "public"), false, `${webhook.url}/hooks/releases`);
    privateVigie = await startRegistry(join(directory, "private"), true, `${webhook.url}/hooks/private`);
    token = await tokenOf(vigie, "pages-test");
    await published(vigie, token, "hostile", "0.1.0", {
      description: "A crate whose README attacks",
      readme: HOSTILE_README,
    });
    await published(vigie, token, "quiet-parser", "1.2.0", {
      description: "Parses quietly",
      keywords: ["parser"],
      repository: "https://git.example.org/quiet-parser",
      deps: [dependency("hostile", "^0.1"), dependency("helper", "^1", { kind: "dev", registry: CRATES_IO })],
      readme: [
        "# quiet-parser",
        "",
        "Parses expressions **without a sound**: no allocation, no panic, no log line.",
        "",
        "```rust",
        'let tree = quiet_parser::parse("1 + 2 * x")?;',
        'assert_eq!(tree.eval(&[("x", 3)]), 7);',
        "```",
        "",
        "| feature | what it adds |",
        "|---|---|",
        "| `std` | `Error` implementations |",
        "| `serde` | (de)serialisation of trees |",
        "",
        "See [the changelog](https://git.example.org/quiet-parser/CHANGES.md).",
      ].join("\n"),
    });
    const privateToken = await tokenOf(privateVigie, "pages-test");
    await published(privateVigie, privateToken, "secret-sauce", "0.3.0", {
      description: "Only for signed-in users",
      readme: "# Secret sauce\n\nThe recipe.\n",
    });
    if (existsSync(CHROMIUM)) browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await stopVigie(vigie);
    await stopVigie(privateVigie);
    await webhook?.close();
  });

  it("announces every publish to the chat webhook through the example stream", async () => {
    await webhook.acceptedAtLeast(3);
    const texts = webhook.accepted.map((request) => [request.url, JSON.parse(request.body.toString("utf8")).text]);
    expect(texts).toEqual(
      expect.arrayContaining([
        ["/hooks/releases", "root published hostile 0.1.0"],
        ["/hooks/releases", "root published quiet-parser 1.2.0"],
        ["/hooks/private", "root published secret-sauce 0.3.0"],
      ]),
    );
  });

  it.skipIf(CARGO === "")(
    "announces a cargo publish, and the crate's page shows the README cargo sent",
    async () => {
      const before = webhook.accepted.length;
      const cargo = new CargoHome(join(directory, "cargo"), { vigie: vigie.baseUrl });
      const crate = writeCrate(join(directory, "hello-pages"), {
        name: "hello-pages",
        version: "0.1.0",
        description: "Says hello from a page",
        publish: ["vigie"],
        lib: 'pub fn hello() -> &\'static str {\n    "hello"\n}\n',
      });
      writeFileSync(join(crate, "README.md"), "# Hello pages\n\nUse `hello()`.\n");
      const result = await cargo.run(["publish", "--registry", "vigie"], { cwd: crate, tokens: { vigie: token } });
      expect(result.code, outputOf(result)).toBe(0);
      await webhook.acceptedAtLeast(before + 1);
      const last = webhook.accepted.at(-1);
      expect(JSON.parse(last?.body.toString("utf8") ?? "{}")).toMatchObject({
        text: "root published hello-pages 0.1.0",
      });
      const page = await (await fetch(`${vigie.baseUrl}/registry/hello-pages`)).text();
      expect(page).toContain("<h3>Hello pages</h3>");
      expect(page).toContain("<p>Use <code>hello()</code>.</p>");
    },
    180_000,
  );

  it.skipIf(!existsSync(CHROMIUM))(
    "works without JavaScript: list, search, a crate page whose hostile README is inert",
    async () => {
      const context = await browser?.newContext({ javaScriptEnabled: false, viewport: { width: 1000, height: 900 } });
      if (context === undefined) throw new Error("no browser");
      try {
        const { page, requests, dialogs, errors } = await watched(context);
        await page.goto(`${vigie.baseUrl}/registry`);
        expect(await page.title()).toBe("Crates");
        expect(await page.getAttribute("html", "lang")).toBe("en");
        await expect(page.getByRole("heading", { level: 1, name: "Crates" }).count()).resolves.toBe(1);
        await expect(page.getByRole("main").count()).resolves.toBe(1);
        await expect(page.getByRole("search").count()).resolves.toBe(1);
        await screenshot(page, "registry-list.png");

        await page.getByLabel("Search crates").fill("parser");
        await page.getByRole("button", { name: "Search" }).click();
        await page.waitForURL(/\/registry\?q=parser$/);
        expect(await page.locator("main").innerText()).toContain("quiet-parser");
        expect(await page.locator("main").innerText()).not.toContain("hostile");

        await page.getByRole("link", { name: "quiet-parser" }).click();
        await page.waitForURL(/\/registry\/quiet-parser$/);
        await expect(page.getByRole("heading", { level: 1 }).innerText()).resolves.toContain("quiet-parser");
        expect(await page.locator("main").innerText()).toContain("cargo add quiet-parser --registry vigie");
        await screenshot(page, "registry-crate.png");

        await page.goto(`${vigie.baseUrl}/registry/hostile`);
        const readme = page.locator(".readme");
        expect(await readme.innerText()).toContain("<script>alert('script')</script>");
        expect(await readme.locator("script, img, iframe").count()).toBe(0);
        for (const href of await readme
          .locator("a[href]")
          .evaluateAll((links) => links.map((a) => a.getAttribute("href")))) {
          expect(href).toMatch(/^https?:/);
        }
        await screenshot(page, "registry-hostile-readme.png");
        await page.waitForTimeout(300);
        expect(dialogs).toEqual([]);
        const foreign = requests.map((url) => new URL(url)).filter((url) => url.protocol !== "data:");
        for (const url of foreign) expect(url.origin, url.href).toBe(vigie.baseUrl);
        expect(errors).toEqual([]);
      } finally {
        await context.close();
      }
    },
    60_000,
  );

  it.skipIf(!existsSync(CHROMIUM))(
    "asks for sign-in on a private registry, then browses with the token and signs out",
    async () => {
      const context = await browser?.newContext({ viewport: { width: 1000, height: 900 } });
      if (context === undefined) throw new Error("no browser");
      try {
        const { page, requests, errors } = await watched(context);
        const base = privateVigie.baseUrl;
        await page.goto(`${base}/registry`);
        await page.getByLabel("User name").waitFor();
        expect(await page.locator("main").innerText()).not.toContain("secret-sauce");
        await screenshot(page, "registry-sign-in.png");

        await page.getByLabel("User name").fill(ROOT.name);
        await page.getByLabel("Password").fill("wrong password");
        await page.getByRole("button", { name: "Sign in", exact: true }).click();
        await page.getByText("Sign-in refused").waitFor();

        await page.getByLabel("Password").fill(ROOT.password);
        await page.getByRole("button", { name: "Sign in", exact: true }).click();
        await page.getByText("Signed in as root.").waitFor();
        expect(await page.locator("main").innerText()).toContain("secret-sauce");

        await page.getByRole("link", { name: "secret-sauce" }).click();
        await page.getByRole("heading", { level: 3, name: "Secret sauce" }).waitFor();
        expect(page.url()).toBe(`${base}/registry/secret-sauce`);
        await screenshot(page, "registry-private-crate.png");

        await page.getByRole("link", { name: "Crates" }).click();
        await page.getByLabel("Search crates").fill("nothing-like-it");
        await page.getByRole("button", { name: "Search" }).click();
        await page.getByText("No crate found.").waitFor();
        expect(page.url()).toBe(`${base}/registry?q=nothing-like-it`);

        // The session survives a reload (sessionStorage), and sign-out deletes the token it made.
        await page.reload();
        await page.getByText("Signed in as root.").waitFor();
        // (The test's types have no DOM: the browser's sessionStorage reached through globalThis.)
        const kept = await page.evaluate(() => {
          const storage = Reflect.get(globalThis, "sessionStorage") as { getItem(key: string): string | null };
          return storage.getItem("vigie-registry-pages");
        });
        const session = JSON.parse(kept ?? "{}") as { token: string; tokenName: string };
        expect(session.tokenName).toMatch(/^registry-pages-[0-9a-f]{16}$/);
        await page.getByRole("button", { name: "Sign out" }).click();
        await page.getByText("Signed out.").waitFor();
        const after = await fetch(`${base}/registry`, { headers: { authorization: `Bearer ${session.token}` } });
        expect(after.status).toBe(401);

        const script = await (await fetch(`${base}/registry/registry.js`)).text();
        expect(Buffer.byteLength(script)).toBeLessThan(10_000);
        for (const url of requests.map((text) => new URL(text)).filter((url) => url.protocol !== "data:")) {
          expect(url.origin, url.href).toBe(base);
        }
        expect(errors.filter((error) => !error.includes("401"))).toEqual([]);
      } finally {
        await context.close();
      }
    },
    60_000,
  );
});
