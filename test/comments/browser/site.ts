/**
 * What the browser tests of the comment widget and the moderation page share (test/e2e/comments-
 * widget.test.ts, test/e2e/comments-admin.test.ts): a real `vigie` process with two websites, and a
 * static site served by a node:http server from another origin (another port), whose pages embed
 * the widget, so that every call of the widget is a real cross-origin request under CORS.
 *
 * - website `blog`: moderated; `allowed-origins` lists the static site's origin;
 * - website `auto`: `auto-approve: true`, same origin allowed;
 * - the comments admin token is fixed (VIGIE_COMMENTS_ADMIN_TOKEN), the registry admin is created
 *   at start-up (VIGIE_ADMIN_NAME / VIGIE_ADMIN_PASSWORD), and a tech user with `vigie user create`
 *   before the start;
 * - a rate limit high enough for the tests' hundred comments from 127.0.0.1.
 */
import { randomBytes } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { escapeHtml } from "../../../src/platform/html.js";
import {
  freePort,
  runCli,
  startVigie,
  stopVigie,
  temporaryDirectory,
  type VigieProcess,
} from "../../support/process.js";

/** The registry admin created at start-up. */
export const ADMIN_USER = { name: "moderator", password: "moderator-password" } as const;
/** A registry user who is not an admin. */
export const TECH_USER = { name: "writer", password: "writer-password" } as const;

/** A comment as the API returns it. */
export interface ApiComment {
  readonly id: string;
  readonly author: string;
  readonly content: string;
  readonly "author-website"?: string;
  readonly approved: boolean;
  readonly timestamp: number;
  readonly parent?: string;
}

/** The running Vigie and static site. */
export interface CommentsSite {
  readonly vigie: VigieProcess;
  /** Vigie's origin, `http://127.0.0.1:<port>`. */
  readonly api: string;
  /** The static site's origin, `http://127.0.0.1:<other port>`. */
  readonly site: string;
  /** The comments admin token. */
  readonly adminToken: string;
  /** Where screenshots go (`VIGIE_TEST_ARTIFACTS`, else under the test's temporary directory). */
  readonly artifacts: string;
  /**
   * The URL of a page of the static site at `path` embedding the widget; each option becomes a
   * `data-<name>` attribute of the script, but `counts` (articles of `[data-vigie-count]` elements
   * on the page) and `accent` (a page-wide `--vigie-accent`).
   */
  pageUrl(path: string, options?: Record<string, string>): string;
  /** Posts a comment through the API with a solved challenge; returns the answer's status. */
  post(
    website: string,
    article: string,
    fields: { author: string; content: string; "author-website"?: string; parent?: string },
  ): Promise<number>;
  /** Every comment of an article (admin route), oldest first. */
  comments(website: string, article: string): Promise<ApiComment[]>;
  /** Approves every pending comment of an article (admin route). */
  approveAll(website: string, article: string): Promise<void>;
  /** Stops both servers. */
  close(): Promise<void>;
}

/** The answer of a math question as the server words it (`what is the result of: 7 * 3`) or the widget shows it (`What is 7 × 3?`, `Combien font 7 × 3 ?`). */
export function solve(question: string): string {
  const match = /(\d+) ([-+*×]) (\d+)/.exec(question);
  if (match === null) throw new Error(`not a math question: ${question}`);
  const left = Number(match[1]);
  const right = Number(match[3]);
  const operator = match[2];
  return String(operator === "+" ? left + right : operator === "-" ? left - right : left * right);
}

/** Saves a full-page screenshot under `directory` and prints where. */
export async function screenshot(page: Page, directory: string, name: string): Promise<string> {
  mkdirSync(directory, { recursive: true });
  const path = join(directory, name);
  await page.screenshot({ path, fullPage: true });
  console.log(`screenshot: ${path}`);
  return path;
}

/** An HTML page of the static site: an article, optional count elements, the widget's script. */
function articlePage(api: string, url: URL): string {
  const attributes = ["data-website", "blog"];
  const counts: string[] = [];
  let accent = "";
  for (const [name, value] of url.searchParams) {
    if (name === "counts") counts.push(...value.split(","));
    else if (name === "accent") accent = value;
    else if (name === "website") attributes[1] = value;
    else attributes.push(`data-${name}`, value);
  }
  const script = [];
  for (let index = 0; index < attributes.length; index += 2) {
    script.push(`${attributes[index]}="${escapeHtml(attributes[index + 1] ?? "")}"`);
  }
  return [
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>A static article</title>',
    '<link rel="icon" href="data:,">',
    // A page that follows the system's scheme with the system's colours, in a serif font the
    // widget should inherit.
    "<style>:root{color-scheme:light dark;font:17px/1.5 Georgia,serif}",
    "body{max-width:42rem;margin:1.5rem auto;padding:0 1rem;background:Canvas;color:CanvasText}",
    accent === "" ? "" : `:root{--vigie-accent:${accent}}`,
    "</style></head><body><article><h1>A static article</h1>",
    "<p>Some text the comments are about.</p></article>",
    counts
      .map((article) => `<p>${escapeHtml(article)}: <span data-vigie-count="${escapeHtml(article)}">…</span></p>`)
      .join(""),
    `<script src="${api}/comments/widget.js" ${script.join(" ")} defer></script>`,
    "</body></html>",
  ].join("");
}

/** Starts Vigie and the static site. */
export async function startCommentsSite(): Promise<CommentsSite> {
  const directory = temporaryDirectory();
  const artifacts = process.env.VIGIE_TEST_ARTIFACTS ?? join(directory, "artifacts");
  const port = await freePort();
  const api = `http://127.0.0.1:${port}`;

  let siteOrigin = "";
  const server: Server = createServer((request, response) => {
    const url = new URL(request.url ?? "/", siteOrigin);
    response.writeHead(200, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" });
    response.end(articlePage(api, url));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  siteOrigin = `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}`;

  // An Akismet-compatible receiver: "casino" in a comment is spam, anything else is not.
  const akismet = createServer((request, response) => {
    let body = "";
    request.on("data", (chunk: Buffer) => {
      body += chunk.toString("utf8");
    });
    request.on("end", () => {
      const content = new URLSearchParams(body).get("comment_content") ?? "";
      response.end(content.includes("casino") ? "true" : "false");
    });
  });
  await new Promise<void>((resolve) => akismet.listen(0, "127.0.0.1", resolve));
  const akismetAddress = akismet.address();
  const akismetPort = typeof akismetAddress === "object" && akismetAddress !== null ? akismetAddress.port : 0;

  const adminToken = randomBytes(32).toString("base64url");
  const configFile = join(directory, "vigie.yaml");
  const config = {
    http: { port },
    database: { url: `sqlite:${join(directory, "vigie.db")}` },
    comments: {
      "rate-limit": { comments: 1000, per: "10m" },
      akismet: { key: "site-key", url: `http://127.0.0.1:${akismetPort}/1.1/comment-check` },
      websites: [
        { name: "blog", "allowed-origins": [siteOrigin] },
        { name: "auto", "allowed-origins": [siteOrigin], "auto-approve": true },
      ],
    },
  };
  // JSON is YAML: no quoting to get wrong.
  writeFileSync(configFile, JSON.stringify(config, null, 2));
  const created = await runCli(["user", "create", "--name", TECH_USER.name, "--role", "tech", "--config", configFile], {
    cwd: directory,
    input: `${TECH_USER.password}\n`,
  });
  if (created.code !== 0) throw new Error(`vigie user create failed: ${created.stderr}`);
  const vigie = await startVigie({
    configFile,
    port,
    cwd: directory,
    env: {
      VIGIE_COMMENTS_ADMIN_TOKEN: adminToken,
      VIGIE_ADMIN_NAME: ADMIN_USER.name,
      VIGIE_ADMIN_PASSWORD: ADMIN_USER.password,
    },
  });
  const asAdmin = { authorization: `Bearer ${adminToken}` };

  const comments = async (website: string, article: string): Promise<ApiComment[]> => {
    const response = await fetch(`${api}/api/admin/comment/${website}/${article}`, { headers: asAdmin });
    if (response.status !== 200) throw new Error(`admin list: ${response.status} ${await response.text()}`);
    const body: unknown = await response.json();
    if (!Array.isArray(body)) throw new Error("admin list: not an array");
    return body;
  };

  return {
    vigie,
    api,
    site: siteOrigin,
    adminToken,
    artifacts,
    pageUrl: (path, options = {}) => `${siteOrigin}${path}?${new URLSearchParams(options)}`,
    async post(website, article, fields) {
      const challenge: unknown = await (await fetch(`${api}/api/v1/challenge/${website}/${article}`)).json();
      const question = typeof challenge === "object" && challenge !== null ? Reflect.get(challenge, "question") : "";
      const response = await fetch(`${api}/api/v1/comment/${website}/${article}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          ...fields,
          answer: solve(String(question)),
          signature: Reflect.get(Object(challenge), "signature"),
          timestamp: Reflect.get(Object(challenge), "timestamp"),
        }),
      });
      await response.body?.cancel();
      return response.status;
    },
    comments,
    async approveAll(website, article) {
      for (const comment of await comments(website, article)) {
        if (comment.approved) continue;
        const response = await fetch(`${api}/api/admin/comment/${website}/${article}/${comment.id}`, {
          method: "POST",
          headers: asAdmin,
        });
        if (response.status !== 200) throw new Error(`approve: ${response.status} ${await response.text()}`);
      }
    },
    async close() {
      await stopVigie(vigie);
      akismet.closeAllConnections();
      await new Promise<void>((resolve) => akismet.close(() => resolve()));
      // Chromium keeps connections alive; they would hold close() until they time out.
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
