/**
 * The moderation page as a moderator uses it (docs/comments.md), in Debian's Chromium driven
 * by playwright-core (never a downloaded browser), against the real `vigie` process, with the
 * widget on a static site of another origin (test/comments/browser/site.ts):
 *
 * - a reader posts and sees "awaiting moderation"; the moderator signs in with the comments admin
 *   token, sees the pending comment (website, article, author, content as text, date), approves it
 *   with one click; the reader reloads the article and sees it;
 * - sign-in with a registry user name and password: a token `comments-admin-<hex>` valid one day,
 *   in sessionStorage and no cookie; approve and delete several at once; the approved comments of
 *   an article, with delete; changes made through the API show on a refresh; sign-out deletes the
 *   registry token;
 * - refused sign-ins (wrong token, wrong password, a user who is not an admin) leave no token;
 *   a token deleted elsewhere signs the page out.
 *
 * The page's Content-Security-Policy is strict (src/comments/admin-page.ts): any violation would
 * show as a console error, and none may. A screenshot of the page is kept under
 * `VIGIE_TEST_ARTIFACTS` when set, else under the test's temporary directory (printed).
 */
import { existsSync } from "node:fs";
import type { Browser, BrowserContext, Page, Request } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ADMIN_USER,
  type CommentsSite,
  screenshot,
  solve,
  startCommentsSite,
  TECH_USER,
} from "../comments/browser/site.js";
import { CHROMIUM, launchChromium } from "../support/browser.js";

const HAS_CHROMIUM = existsSync(CHROMIUM);
if (!HAS_CHROMIUM) {
  console.log(`skipping the Chromium tests of the moderation page: ${CHROMIUM} is missing (install Debian's chromium)`);
}

/** A registry token as GET /api/v1/registry/token lists it. */
interface ListedToken {
  readonly name: string;
  readonly "created-at": string;
  readonly "expires-at": string;
}

describe.skipIf(!HAS_CHROMIUM)("the moderation page in Chromium", () => {
  let site: CommentsSite;
  let browser: Browser;
  const contexts: BrowserContext[] = [];

  beforeAll(async () => {
    site = await startCommentsSite();
    browser = await launchChromium();
  });

  afterAll(async () => {
    for (const context of contexts) await context.close();
    await browser?.close();
    await site?.close();
  });

  /** A new page in a new context (its own storage), with its console errors collected. */
  const newPage = async (): Promise<{ page: Page; errors: string[] }> => {
    const context = await browser.newContext({ viewport: { width: 1200, height: 800 } });
    contexts.push(context);
    const page = await context.newPage();
    // A step that cannot happen fails naming its locator, within the test's time, rather than as a
    // bare 30 s test timeout (Playwright actions have no timeout of their own by default).
    page.setDefaultTimeout(10_000);
    const errors: string[] = [];
    page.on("console", (message) => {
      if (message.type() !== "error") return;
      errors.push(message.text());
    });
    page.on("pageerror", (error) => errors.push(error.message));
    return { page, errors };
  };

  /** The page's live region. */
  const notice = (page: Page) => page.locator("#moderation .notice");

  /** Opens the moderation page and signs in with the comments admin token. */
  const signInWithToken = async (page: Page, token: string) => {
    await page.goto(`${site.api}/comments/admin`);
    await page.getByLabel("Admin token").fill(token);
    await page.getByRole("button", { name: "Sign in with the token" }).click();
  };

  /** Opens the moderation page and signs in with a registry user name and password. */
  const signInAsUser = async (page: Page, user: string, password: string) => {
    await page.goto(`${site.api}/comments/admin`);
    await page.getByLabel("User name").fill(user);
    await page.getByLabel("Password").fill(password);
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
  };

  /** Types the websites to moderate and shows their pending comments. */
  const showWebsites = async (page: Page, names: string) => {
    await page.getByLabel("Websites").fill(names);
    await page.getByRole("button", { name: "Show", exact: true }).first().click();
  };

  /** The rows of the pending table, each as its cells' text. */
  const pendingRows = async (page: Page): Promise<string[][]> => {
    // The main table (a direct child); the Spam section has its own.
    const rows = page.locator("#panel-pending > .table tbody tr");
    const cells: string[][] = [];
    for (let index = 0; index < (await rows.count()); index++) {
      cells.push(await rows.nth(index).locator("td").allInnerTexts());
    }
    return cells;
  };

  /** The registry tokens of a user, listed with a token made for the purpose. */
  const tokensOf = async (user: string, password: string): Promise<ListedToken[]> => {
    const name = `check-${Math.random().toString(16).slice(2)}`;
    const created = await fetch(`${site.api}/api/v1/registry/token`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name, user, password, validity: 1 }),
    });
    expect(created.status).toBe(201);
    const token = String(Reflect.get(Object(await created.json()), "token"));
    const listed: unknown = await (
      await fetch(`${site.api}/api/v1/registry/token`, { headers: { authorization: `Bearer ${token}` } })
    ).json();
    await fetch(`${site.api}/api/v1/registry/token/${name}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${token}` },
    });
    const tokens: unknown = Reflect.get(Object(listed), "tokens");
    if (!Array.isArray(tokens)) throw new Error(`no token list: ${JSON.stringify(listed)}`);
    return tokens.filter((each: ListedToken) => each.name !== name);
  };

  /** The session the page keeps, parsed. */
  const storedSession = async (page: Page): Promise<Record<string, unknown> | null> => {
    const text = await page.evaluate<string | null>("sessionStorage.getItem('vigie-comments-admin')");
    return text === null ? null : JSON.parse(text);
  };

  it("lists comments a spam check held in a Spam section apart, where one click approves them", async () => {
    expect(await site.post("blog", "spam-check", { author: "Kim", content: "Honest words" })).toBe(201);
    expect(await site.post("blog", "spam-check", { author: "Bot", content: "Best casino bonus" })).toBe(201);
    const { page, errors } = await newPage();
    await signInWithToken(page, site.adminToken);
    await showWebsites(page, "blog");
    const spam = page.locator("#panel-pending section.spam");
    await spam.getByRole("heading", { name: "Spam" }).waitFor();
    await expect
      .poll(() => spam.locator("tbody tr").allInnerTexts())
      .toEqual([expect.stringContaining("Best casino bonus")]);
    const others = await pendingRows(page);
    expect(others.flat().join(" ")).toContain("Honest words");
    expect(others.flat().join(" ")).not.toContain("casino");
    await spam
      .locator("tbody tr")
      .getByRole("button", { name: /approve/i })
      .click();
    await expect
      .poll(async () => (await site.comments("blog", "spam-check")).map((c) => [c.author, c.approved]))
      .toEqual([
        ["Kim", false],
        ["Bot", true],
      ]);
    await expect.poll(() => spam.isHidden()).toBe(true);
    expect(errors).toEqual([]);
    // The other tests count the pending comments of the website: leave none.
    const cleared = await fetch(`${site.api}/api/admin/comment/blog/spam-check`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${site.adminToken}` },
    });
    expect(cleared.status).toBe(200);
  });

  it("lists each pending comment once when a refresh overtakes the first read of the list", async () => {
    expect(await site.post("blog", "overtaken", { author: "Uma", content: "Only once" })).toBe(201);
    const { page, errors } = await newPage();
    // The sign-in's read of blog's pending comments is held until the refresh's read has shown them:
    // a slow first answer (a loaded server) landing after a second read was started.
    let release = () => {};
    const held = new Promise<void>((done) => {
      release = done;
    });
    const blogReads: Request[] = [];
    await page.route("**/api/admin/comment/blog?*", async (route) => {
      blogReads.push(route.request());
      if (blogReads.length === 1) await held;
      await route.continue();
    });
    await signInWithToken(page, site.adminToken);
    await expect.poll(() => blogReads.length).toBe(1);
    await page.getByRole("button", { name: "Refresh" }).click();
    await expect.poll(async () => (await pendingRows(page)).map((row) => row[4])).toEqual(["Uma"]);
    release();
    await (await blogReads[0]?.response())?.finished();
    // The page has handled the late answer once this timer fires (it needs no network).
    await page.evaluate(() => new Promise((done) => setTimeout(done, 200)));
    expect((await pendingRows(page)).map((row) => row[4])).toEqual(["Uma"]);
    expect(errors).toEqual([]);
    const cleared = await fetch(`${site.api}/api/admin/comment/blog/overtaken`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${site.adminToken}` },
    });
    expect(cleared.status).toBe(200);
  });

  it("approves a reader's comment with one click, after which the reader sees it on reload", async () => {
    // A reader posts on the static site, across origins.
    const reader = await newPage();
    await reader.page.goto(site.pageUrl("/posts/moderated/"));
    await reader.page.locator(".vigie [name=author]").focus();
    const question = reader.page.locator(".vigie label[for$='-answer']");
    await expect.poll(() => question.innerText()).toMatch(/\d+ [-+×] \d+/);
    await reader.page.locator(".vigie [name=author]").fill("Mia");
    await reader.page.locator(".vigie [name=content]").fill("Waiting for <b>approval</b>\non two lines");
    await reader.page.locator(".vigie [name=answer]").fill(solve(await question.innerText()));
    await reader.page.locator(".vigie form button").click();
    const status = reader.page.locator(".vigie form [role=status]");
    await expect.poll(() => status.innerText()).toBe("Thank you! Your comment is awaiting moderation.");
    // A newer one on another article, and one already published on the other website.
    expect(await site.post("blog", "another-post", { author: "Noé", content: "Newer, elsewhere" })).toBe(201);
    expect(await site.post("auto", "published", { author: "Oli", content: "Published at once" })).toBe(201);

    const { page, errors } = await newPage();
    await signInWithToken(page, site.adminToken);
    await expect.poll(() => notice(page).innerText()).toBe("Signed in with the admin token.");
    // Nothing typed: the pending comments of every website the server has.
    expect(await page.getByLabel("Websites").inputValue()).toBe("");
    await expect.poll(async () => (await pendingRows(page)).length).toBe(2);
    const [newest, oldest] = await pendingRows(page);
    // Select, date, website, article, author, comment, actions; newest first; text as typed.
    expect(newest?.slice(2, 6)).toEqual(["blog", "another-post", "Noé", "Newer, elsewhere"]);
    expect(oldest?.slice(2, 6)).toEqual([
      "blog",
      "posts-moderated",
      "Mia",
      "Waiting for <b>approval</b>\non two lines",
    ]);
    expect(oldest?.[1]).toMatch(/\d/);
    expect(await page.locator("#panel-pending tbody b").count()).toBe(0);
    expect(await page.locator("#panel-pending").innerText()).toContain("2 pending comments on blog, auto.");
    await screenshot(page, site.artifacts, "comments-moderation.png");

    await page.getByRole("button", { name: "Approve the comment of Mia on blog/posts-moderated" }).click();
    await expect.poll(() => notice(page).innerText()).toBe("Approved 1 comment.");
    await expect.poll(async () => (await pendingRows(page)).length).toBe(1);
    // At once through the API.
    expect(await site.comments("blog", "posts-moderated")).toMatchObject([{ author: "Mia", approved: true }]);

    await reader.page.reload();
    const heading = reader.page.locator(".vigie h2");
    await expect.poll(() => heading.innerText()).toBe("1 comment");
    expect(await reader.page.locator(".vigie li .v-c").allInnerTexts()).toEqual([
      "Waiting for <b>approval</b>\non two lines",
    ]);
    // The token lives in sessionStorage, never in a cookie; no CSP violation, no error.
    expect(await storedSession(page)).toEqual({ token: site.adminToken });
    expect(await page.context().cookies()).toEqual([]);
    expect(errors).toEqual([]);
    expect(reader.errors).toEqual([]);
  });

  it("signs in with a registry account, moderates several at once, and deletes its token on sign-out", async () => {
    for (const author of ["Pia", "Quentin", "Rosa"]) {
      expect(await site.post("blog", "bulk", { author, content: `From ${author}` })).toBe(201);
    }
    const { page, errors } = await newPage();
    await signInAsUser(page, ADMIN_USER.name, ADMIN_USER.password);
    await expect.poll(() => notice(page).innerText()).toBe(`Signed in as ${ADMIN_USER.name}.`);

    // A registry token named comments-admin-<16 hex digits>, valid one day, kept in sessionStorage.
    const session = await storedSession(page);
    expect(session?.tokenName).toMatch(/^comments-admin-[0-9a-f]{16}$/);
    expect(session?.token).toMatch(/^vigie_[A-Za-z0-9_-]{43}$/);
    const tokens = await tokensOf(ADMIN_USER.name, ADMIN_USER.password);
    const created = tokens.find((token) => token.name === session?.tokenName);
    expect(created).toBeDefined();
    const validity = Date.parse(created?.["expires-at"] ?? "") - Date.parse(created?.["created-at"] ?? "");
    expect(validity).toBe(24 * 3600 * 1000);
    expect(await page.context().cookies()).toEqual([]);

    await showWebsites(page, "blog");
    await expect
      .poll(async () => (await pendingRows(page)).map((row) => row[4]))
      .toEqual(["Rosa", "Quentin", "Pia", "Noé"]);
    // Approve two at once, then delete one, with the checkboxes.
    await page.getByLabel("Select the comment of Rosa on blog/bulk").check();
    await page.getByLabel("Select the comment of Pia on blog/bulk").check();
    await page.getByRole("button", { name: "Approve selected" }).click();
    await expect.poll(() => notice(page).innerText()).toBe("Approved 2 comments.");
    await expect.poll(async () => (await pendingRows(page)).map((row) => row[4])).toEqual(["Quentin", "Noé"]);
    await page.getByLabel("Select the comment of Quentin on blog/bulk").check();
    await page.locator("#panel-pending").getByRole("button", { name: "Delete selected" }).click();
    await expect.poll(() => notice(page).innerText()).toBe("Deleted 1 comment.");
    await expect.poll(async () => (await pendingRows(page)).map((row) => row[4])).toEqual(["Noé"]);
    expect((await site.comments("blog", "bulk")).map((comment) => [comment.author, comment.approved])).toEqual([
      ["Pia", true],
      ["Rosa", true],
    ]);

    // A change made through the API shows on a refresh: no copy kept by the page.
    await site.approveAll("blog", "another-post");
    await page.getByRole("button", { name: "Refresh" }).click();
    await expect.poll(async () => (await pendingRows(page)).length).toBe(0);

    // The approved comments of an article, reached with the keyboard (arrow keys between tabs).
    await page.getByRole("tab", { name: "Pending" }).focus();
    await page.keyboard.press("ArrowRight");
    expect(await page.getByRole("tab", { name: "Approved, by article" }).getAttribute("aria-selected")).toBe("true");
    expect(await page.locator("#panel-approved").isVisible()).toBe(true);
    expect(await page.locator("#panel-pending").isVisible()).toBe(false);
    expect(await page.getByLabel("Website", { exact: true }).inputValue()).toBe("blog");
    await page.getByLabel("Article", { exact: true }).fill("bulk");
    await page.getByLabel("Article", { exact: true }).press("Enter");
    const approvedRows = page.locator("#panel-approved tbody tr");
    await expect.poll(() => approvedRows.count()).toBe(2);
    await page.getByRole("button", { name: "Delete the comment of Pia on blog/bulk" }).click();
    await expect.poll(() => notice(page).innerText()).toBe("Deleted 1 comment.");
    await expect.poll(() => approvedRows.count()).toBe(1);
    expect((await site.comments("blog", "bulk")).map((comment) => comment.author)).toEqual(["Rosa"]);

    await page.getByRole("button", { name: "Sign out" }).click();
    await expect.poll(() => notice(page).innerText()).toBe("Signed out.");
    expect(await page.getByLabel("Admin token").isVisible()).toBe(true);
    expect(await storedSession(page)).toBeNull();
    const left = await tokensOf(ADMIN_USER.name, ADMIN_USER.password);
    expect(left.filter((token) => token.name.startsWith("comments-admin-"))).toEqual([]);
    expect(errors).toEqual([]);
  });

  it("refuses a wrong token, a wrong password and a user who is not an admin, leaving no token", async () => {
    const { page, errors } = await newPage();
    const alert = page.locator("#moderation .signin [role=alert]");
    await signInWithToken(page, "not-the-token");
    await expect.poll(() => alert.innerText()).toBe("Sign-in refused: invalid token.");
    await signInAsUser(page, ADMIN_USER.name, "wrong-password");
    await expect.poll(() => alert.innerText()).toBe("Sign-in refused: invalid user or password.");
    await signInAsUser(page, TECH_USER.name, TECH_USER.password);
    await expect.poll(() => alert.innerText()).toBe("Sign-in refused: forbidden (only admins moderate comments).");
    await screenshot(page, site.artifacts, "comments-moderation-sign-in.png");
    expect(await storedSession(page)).toBeNull();
    // The tech user's token, created to try, was deleted at once.
    const left = await tokensOf(TECH_USER.name, TECH_USER.password);
    expect(left.filter((token) => token.name.startsWith("comments-admin-"))).toEqual([]);
    // 401s of the sign-in attempts are the only console errors (the browser logs failed requests).
    expect(errors.filter((error) => !/status of 40[13]/.test(error))).toEqual([]);
  });

  // Retried: twice in fresh-clone CI runs (not alone, nor under load in a warm checkout) one step of
  // this test waited past the 30 s test timeout; the cause is not found yet.
  it("signs out by itself when its registry token is deleted elsewhere", { retry: 2 }, async () => {
    const { page } = await newPage();
    await signInAsUser(page, ADMIN_USER.name, ADMIN_USER.password);
    await expect.poll(() => notice(page).innerText()).toBe(`Signed in as ${ADMIN_USER.name}.`);
    const session = await storedSession(page);
    const deleted = await fetch(`${site.api}/api/v1/registry/token/${String(session?.tokenName)}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${String(session?.token)}` },
    });
    expect(deleted.status).toBe(200);
    await showWebsites(page, "blog");
    await expect.poll(() => notice(page).innerText()).toBe("Signed out: invalid token. Sign in again.");
    expect(await page.getByLabel("Admin token").isVisible()).toBe(true);
    expect(await storedSession(page)).toBeNull();
  });
});
