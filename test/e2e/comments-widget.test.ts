/**
 * The comment widget as a reader uses it (docs/comments.md), in Debian's Chromium driven by
 * playwright-core (never a downloaded browser), against the real `vigie` process, on pages of a
 * static site served from another origin, so that CORS is real (test/comments/browser/site.ts):
 *
 * - reads the question, computes the answer, posts, sees "awaiting moderation", keeps nothing
 *   typed but the name after success; inherits the page's font;
 * - shows approved comments with the author linked (`rel="nofollow ugc noopener"`), a date, line
 *   breaks kept, the count as heading;
 * - an XSS payload shows as text: no element, no dialog, no request;
 * - a wrong answer shows the error beside the answer and a new question, keeping the text; a
 *   field the server refuses shows its sentence beside that field;
 * - posting with the keyboard alone; auto-approved comments show at once;
 * - `[data-vigie-count]` elements filled with one call, also on a page without widget;
 * - more than 50 comments: the newest 50, then "show older";
 * - French strings; dark mode (prefers-color-scheme) and the custom properties.
 *
 * Screenshots of the widget in light and dark are kept under `VIGIE_TEST_ARTIFACTS` when set, else
 * under the test's temporary directory (printed).
 */
import { existsSync } from "node:fs";
import type { Browser, BrowserContext, BrowserContextOptions, Locator, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CommentsSite, screenshot, solve, startCommentsSite } from "../comments/browser/site.js";
import { CHROMIUM, launchChromium } from "../support/browser.js";

const HAS_CHROMIUM = existsSync(CHROMIUM);
if (!HAS_CHROMIUM) {
  console.log(`skipping the Chromium tests of the comment widget: ${CHROMIUM} is missing (install Debian's chromium)`);
}

/** Everything a page did that a test looks at. */
interface Watched {
  readonly page: Page;
  /** Every URL the page requested. */
  readonly requests: string[];
  /** Messages of dialogs (alert, confirm, prompt) the page opened. */
  readonly dialogs: string[];
  /** Console errors and uncaught exceptions. */
  readonly errors: string[];
}

/**
 * A computed style property of the element of `locator`. The function runs in the page; the tests
 * are checked without the DOM library, so `element` is untyped here.
 */
function computed(locator: Locator, property: string): Promise<string> {
  return locator.evaluate(
    (element, name) => element.ownerDocument.defaultView?.getComputedStyle(element).getPropertyValue(name) ?? "",
    property,
  );
}

/** The `name` attribute of the focused element ("" when it has none). */
async function focusedName(page: Page): Promise<string> {
  const focused = page.locator(":focus");
  return (await focused.count()) === 0 ? "" : ((await focused.getAttribute("name")) ?? "");
}

describe.skipIf(!HAS_CHROMIUM)("the comment widget in Chromium", () => {
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

  /** A new page in a new context, watched; `url` loaded and the widget's heading shown. */
  const open = async (url: string, options: BrowserContextOptions = {}): Promise<Watched> => {
    const context = await browser.newContext({ viewport: { width: 760, height: 900 }, ...options });
    contexts.push(context);
    const page = await context.newPage();
    const watched: Watched = { page, requests: [], dialogs: [], errors: [] };
    page.on("request", (request) => watched.requests.push(request.url()));
    page.on("dialog", (dialog) => {
      watched.dialogs.push(dialog.message());
      void dialog.dismiss();
    });
    page.on("console", (message) => {
      if (message.type() === "error") watched.errors.push(message.text());
    });
    page.on("pageerror", (error) => watched.errors.push(error.message));
    await page.goto(url);
    return watched;
  };

  /** The widget's heading, once it shows the count. */
  const countHeading = async (page: Page) => {
    const heading = page.locator(".vigie h2");
    await expect.poll(() => heading.innerText()).toMatch(/^\d+ comm/);
    return heading.innerText();
  };

  /** The label of the answer: the question once fetched. */
  const question = (page: Page) => page.locator(".vigie label[for$='-answer']");

  /** Focuses the form (which fetches the question), then waits for the question. */
  const askQuestion = async (page: Page): Promise<string> => {
    await page.locator(".vigie [name=author]").focus();
    await expect.poll(() => question(page).innerText()).toMatch(/\d+ [-+×] \d+/);
    return question(page).innerText();
  };

  /** Fills the form and posts it with the right answer (or `answer`). */
  const fillAndPost = async (
    page: Page,
    fields: { author: string; content: string; website?: string; answer?: string },
  ): Promise<void> => {
    const asked = await askQuestion(page);
    await page.locator(".vigie [name=author]").fill(fields.author);
    await page.locator(".vigie [name=author-website]").fill(fields.website ?? "");
    await page.locator(".vigie [name=content]").fill(fields.content);
    await page.locator(".vigie [name=answer]").fill(fields.answer ?? solve(asked));
    await page.locator(".vigie form button").click();
  };

  /** The form's status line. */
  const formStatus = (page: Page) => page.locator(".vigie form [role=status]");

  /** The requests of a page to a path of Vigie's API starting with `prefix`. */
  const apiRequests = (watched: Watched, prefix: string) =>
    watched.requests.filter((url) => url.startsWith(`${site.api}${prefix}`));

  it("reads the question, computes the answer, posts across origins, and says it awaits moderation", async () => {
    const watched = await open(site.pageUrl("/posts/hello/"));
    const { page } = watched;
    expect(await countHeading(page)).toBe("0 comments");
    // The question is asked for only when the form gets the focus.
    expect(apiRequests(watched, "/api/v1/challenge/")).toEqual([]);
    // Labels of every field, the answer's before the question is known.
    for (const label of ["Name", "Website (optional)", "Comment", "Anti-spam question"]) {
      expect(await page.getByLabel(label, { exact: true }).count(), label).toBe(1);
    }
    await fillAndPost(page, {
      author: "Ann",
      website: "ann.example.org",
      content: "First line\nSecond line & <b>bold</b>?",
    });
    await expect.poll(() => formStatus(page).innerText()).toBe("Thank you! Your comment is awaiting moderation.");
    // The article is the page's path reduced to the article characters.
    expect(apiRequests(watched, "/api/v1/challenge/")).toEqual([`${site.api}/api/v1/challenge/blog/posts-hello`]);
    const stored = await site.comments("blog", "posts-hello");
    expect(stored).toMatchObject([
      {
        author: "Ann",
        "author-website": "ann.example.org",
        content: "First line\nSecond line &amp; &lt;b&gt;bold&lt;/b&gt;?",
        approved: false,
      },
    ]);
    // The comment and the question go; the name stays for the next comment.
    expect(await page.locator(".vigie [name=content]").inputValue()).toBe("");
    expect(await page.locator(".vigie [name=answer]").inputValue()).toBe("");
    expect(await page.locator(".vigie [name=author]").inputValue()).toBe("Ann");
    expect(await question(page).innerText()).toBe("Anti-spam question");
    expect(await page.locator(".vigie li").count()).toBe(0);
    // It inherits the page's font; every request went to the page's own origin or to Vigie's.
    expect(await computed(page.locator(".vigie"), "font-family")).toBe("Georgia, serif");
    for (const url of watched.requests) expect([site.site, site.api], url).toContain(new URL(url).origin);
    expect(watched.errors).toEqual([]);
  });

  it("shows approved comments: author linked, local date, line breaks kept, the count as heading", async () => {
    await site.post("blog", "showcase", {
      author: "Ann",
      "author-website": "ann.example.org",
      content: "A first comment.\nOn two lines.",
    });
    await site.post("blog", "showcase", { author: "Bob", content: 'I agree: 2 < 3 && "quotes" aren\'t a problem.' });
    await site.post("blog", "showcase", {
      author: "Chloé",
      "author-website": "https://chloe.example.net/about",
      content: "Merci pour l’article !",
    });
    await site.approveAll("blog", "showcase");
    const { page, errors } = await open(site.pageUrl("/posts/showcase.html", { article: "showcase" }));
    expect(await countHeading(page)).toBe("3 comments");
    const items = page.locator(".vigie li");
    expect(await items.count()).toBe(3);
    const first = items.nth(0);
    const link = first.getByRole("link", { name: "Ann" });
    expect(await link.getAttribute("href")).toBe("https://ann.example.org/");
    expect(await link.getAttribute("rel")).toBe("nofollow ugc noopener");
    expect(await first.locator(".v-c").innerText()).toBe("A first comment.\nOn two lines.");
    const datetime = await first.locator("time").getAttribute("datetime");
    const stored = await site.comments("blog", "showcase");
    expect(datetime).toBe(new Date(stored[0]?.timestamp ?? 0).toISOString());
    expect(await first.locator("time").innerText()).toMatch(/\d/);
    // Bob gave no website: his name is not a link.
    expect(await items.nth(1).getByRole("link").count()).toBe(0);
    expect(await items.nth(1).locator(".v-c").innerText()).toBe('I agree: 2 < 3 && "quotes" aren\'t a problem.');
    expect(await items.nth(2).getByRole("link", { name: "Chloé" }).getAttribute("href")).toBe(
      "https://chloe.example.net/about",
    );
    // One style element, scoped under .vigie.
    expect(await page.locator("style#vigie-style").count()).toBe(1);
    expect(await page.locator("style#vigie-style").textContent()).toMatch(/^\.vigie\{/);
    await askQuestion(page);
    await page.locator(".vigie [name=author]").fill("Dan");
    await page.locator(".vigie [name=content]").fill("A comment being written…");
    await screenshot(page, site.artifacts, "comments-widget-light.png");
    expect(errors).toEqual([]);
  });

  it("shows an XSS payload as text: no element, no dialog, no request", async () => {
    const payload = "<img src=x onerror=alert(1)>";
    await site.post("blog", "xss", { author: "<script>alert(2)</script>", content: `${payload}\n&lt;b&gt; &amp; 'q'` });
    await site.post("blog", "xss", {
      author: "Eve",
      "author-website": "eve.example.org",
      content: "<svg onload=alert(4)>",
    });
    // A website with quotes and angle brackets never reaches a page: the server refuses it.
    const refused = await site.post("blog", "xss", {
      author: "Eve",
      "author-website": 'https://example.org/"><img src=y onerror=alert(3)>',
      content: "refused",
    });
    expect(refused).toBe(400);
    await site.approveAll("blog", "xss");
    const watched = await open(site.pageUrl("/posts/xss/", { article: "xss" }));
    const { page } = watched;
    expect(await countHeading(page)).toBe("2 comments");
    expect(await page.locator(".vigie li").nth(1).locator(".v-c").innerText()).toBe("<svg onload=alert(4)>");
    const first = page.locator(".vigie li").nth(0);
    expect(await first.locator(".v-c").innerText()).toBe(`${payload}\n&lt;b&gt; &amp; 'q'`);
    expect(await first.locator("strong").innerText()).toBe("<script>alert(2)</script>");
    expect(await page.locator(".vigie img, .vigie script, .vigie svg").count()).toBe(0);
    await page.waitForTimeout(300);
    expect(watched.dialogs).toEqual([]);
    const foreign = watched.requests.filter((url) => {
      const { origin, pathname } = new URL(url);
      if (origin === site.site) return pathname !== "/posts/xss/";
      return !(origin === site.api && /^\/(comments\/widget\.js|api\/v1\/(comment|count)\/blog\b)/.test(pathname));
    });
    expect(foreign).toEqual([]);
    expect(watched.errors).toEqual([]);
  });

  it("shows a wrong answer's error beside the answer, asks a new question and keeps the text", async () => {
    const watched = await open(site.pageUrl("/posts/wrong/"));
    const { page } = watched;
    await countHeading(page);
    const asked = await askQuestion(page);
    await fillAndPost(page, {
      author: "Fay",
      content: "Kept after a wrong answer",
      answer: String(Number(solve(asked)) + 1),
    });
    const answerError = page.locator(".vigie [name=answer] + .v-e");
    await expect.poll(() => answerError.innerText()).toBe("Bad challenge response");
    expect(await page.locator(".vigie [name=answer]").getAttribute("aria-invalid")).toBe("true");
    expect(await answerError.getAttribute("aria-live")).toBe("polite");
    // A new question is fetched; the text stays; the answer is emptied and has the focus.
    await expect.poll(() => apiRequests(watched, "/api/v1/challenge/").length).toBe(2);
    await expect.poll(() => question(page).innerText()).toMatch(/^What is \d+ [-+×] \d+\?$/);
    expect(await page.locator(".vigie [name=content]").inputValue()).toBe("Kept after a wrong answer");
    expect(await page.locator(".vigie [name=answer]").inputValue()).toBe("");
    expect(await focusedName(page)).toBe("answer");
    expect(await formStatus(page).innerText()).toBe("");
    // The new question, answered right, is accepted.
    await page.locator(".vigie [name=answer]").fill(solve(await question(page).innerText()));
    await page.locator(".vigie form button").click();
    await expect.poll(() => formStatus(page).innerText()).toBe("Thank you! Your comment is awaiting moderation.");
    expect(await answerError.innerText()).toBe("");
    expect(await site.comments("blog", "posts-wrong")).toMatchObject([{ content: "Kept after a wrong answer" }]);
  });

  it("shows the server's sentence beside the field it names", async () => {
    const { page } = await open(site.pageUrl("/posts/fields/"));
    await countHeading(page);
    await fillAndPost(page, { author: "Gus", website: "ftp://example.org", content: "My website is refused" });
    const websiteError = page.locator(".vigie [name=author-website] + .v-e");
    await expect
      .poll(() => websiteError.innerText())
      .toBe("Must be a bare domain (example.org) or an http:// or https:// URL of at most 200 characters");
    expect(await focusedName(page)).toBe("author-website");
    expect(await page.locator(".vigie [name=content]").inputValue()).toBe("My website is refused");
    // Corrected, the same question still holds (the server refused the field before the answer).
    await page.locator(".vigie [name=author-website]").fill("gus.example.org");
    await page.locator(".vigie form button").click();
    await expect.poll(() => formStatus(page).innerText()).toBe("Thank you! Your comment is awaiting moderation.");
    expect(await websiteError.innerText()).toBe("");
  });

  it("posts with the keyboard alone", async () => {
    const { page } = await open(site.pageUrl("/posts/keyboard/"));
    await countHeading(page);
    const focused = () => focusedName(page);
    for (let presses = 0; (await focused()) !== "author"; presses++) {
      if (presses > 20) throw new Error("Tab never reached the name field");
      await page.keyboard.press("Tab");
    }
    await page.keyboard.type("Hal");
    await page.keyboard.press("Tab");
    expect(await focused()).toBe("author-website");
    await page.keyboard.press("Tab");
    expect(await focused()).toBe("email");
    await page.keyboard.type("hal@example.org");
    await page.keyboard.press("Tab");
    // "Notify me of replies", ticked with the space bar; the hidden honeypot is never reached.
    expect(await page.locator(":focus").getAttribute("type")).toBe("checkbox");
    await page.keyboard.press("Space");
    expect(await page.getByLabel("Notify me of replies").isChecked()).toBe(true);
    await page.keyboard.press("Tab");
    expect(await focused()).toBe("content");
    await page.keyboard.type("Typed with the keyboard");
    await page.keyboard.press("Enter");
    await page.keyboard.type("on two lines");
    await page.keyboard.press("Tab");
    expect(await focused()).toBe("answer");
    await expect.poll(() => question(page).innerText()).toMatch(/\d/);
    await page.keyboard.type(solve(await question(page).innerText()));
    await page.keyboard.press("Enter");
    await expect.poll(() => formStatus(page).innerText()).toBe("Thank you! Your comment is awaiting moderation.");
    expect(await site.comments("blog", "posts-keyboard")).toMatchObject([
      { author: "Hal", content: "Typed with the keyboard\non two lines" },
    ]);
  });

  it("shows an auto-approved comment at once", async () => {
    const { page } = await open(site.pageUrl("/posts/auto/", { website: "auto" }));
    expect(await countHeading(page)).toBe("0 comments");
    await fillAndPost(page, { author: "Ivy", content: "Published at once" });
    await expect.poll(() => formStatus(page).innerText()).toBe("Thank you! Your comment is published.");
    expect(await page.locator(".vigie h2").innerText()).toBe("1 comment");
    expect(await page.locator(".vigie li .v-c").allInnerTexts()).toEqual(["Published at once"]);
  });

  it("fills every [data-vigie-count] of a page with one call, also on a page without widget", async () => {
    await site.post("blog", "counted", { author: "Jo", content: "one" });
    await site.post("blog", "counted", { author: "Jo", content: "two" });
    await site.approveAll("blog", "counted");
    const index = await open(site.pageUrl("/", { target: "#no-widget-here", counts: "counted,showcase,none-yet" }));
    const counts = index.page.locator("[data-vigie-count]");
    await expect.poll(() => counts.allInnerTexts()).toEqual(["2 comments", "3 comments", "0 comments"]);
    expect(apiRequests(index, "/api/v1/count/")).toEqual([
      `${site.api}/api/v1/count/blog?article=counted&article=showcase&article=none-yet`,
    ]);
    // No widget there, and no other call.
    expect(await index.page.locator(".vigie").count()).toBe(0);
    expect(apiRequests(index, "/api/v1/").length).toBe(1);

    // On an article page, its own count comes with the others, in the same call.
    const article = await open(site.pageUrl("/posts/counted/", { article: "counted", counts: "showcase" }));
    expect(await countHeading(article.page)).toBe("2 comments");
    await expect.poll(() => article.page.locator("[data-vigie-count]").innerText()).toBe("3 comments");
    expect(apiRequests(article, "/api/v1/count/")).toEqual([
      `${site.api}/api/v1/count/blog?article=counted&article=showcase`,
    ]);
  });

  it("shows the newest 50 of more than 50 comments, then the older ones on demand", async () => {
    for (let index = 1; index <= 55; index++) {
      expect(await site.post("blog", "paging", { author: "Kim", content: `comment ${index}` })).toBe(201);
    }
    await site.approveAll("blog", "paging");
    const all = (await site.comments("blog", "paging")).map((comment) => comment.content);
    const watched = await open(site.pageUrl("/posts/paging/", { article: "paging" }));
    const { page } = watched;
    expect(await countHeading(page)).toBe("55 comments");
    const contents = page.locator(".vigie li .v-c");
    expect(await contents.allInnerTexts()).toEqual(all.slice(-50));
    const older = page.getByRole("button", { name: "Show older comments" });
    expect(await older.isVisible()).toBe(true);
    await older.click();
    await expect.poll(() => contents.count()).toBe(55);
    expect(await contents.allInnerTexts()).toEqual(all);
    expect(await older.isVisible()).toBe(false);
    // The focus goes to the list rather than to nowhere.
    expect(await page.locator(".vigie ol:focus").count()).toBe(1);
    const lists = apiRequests(watched, "/api/v1/comment/").map((url) => new URL(url).search);
    expect(lists[0]).toBe("?limit=51");
    expect(lists[1]).toMatch(/^\?limit=5\d&before=\d+$/);
  });

  it("shows replies as threads, a deleted parent as deleted, and answers a comment with Reply", async () => {
    /** Posts a comment of the article "threads", approves it and returns its id. */
    const approved = async (author: string, parent?: string): Promise<string> => {
      const fields = { author, content: `by ${author}`, ...(parent === undefined ? {} : { parent }) };
      expect(await site.post("blog", "threads", fields)).toBe(201);
      await site.approveAll("blog", "threads");
      return (await site.comments("blog", "threads")).at(-1)?.id ?? "";
    };
    const ann = await approved("Ann");
    const bob = await approved("Bob", ann);
    const cy = await approved("Cy", bob);
    await approved("Dee", cy);
    const gone = await approved("Gone");
    await approved("Eve", gone);
    const deleted = await fetch(`${site.api}/api/admin/comment/blog/threads/${gone}`, {
      method: "DELETE",
      headers: { authorization: site.adminToken },
    });
    expect(deleted.status).toBe(200);

    const { page, errors } = await open(site.pageUrl("/posts/threads/", { article: "threads" }));
    // Replies count: 5 comments left (the deleted one does not).
    expect(await countHeading(page)).toBe("5 comments");
    const items = page.locator(".vigie li");
    expect(await items.count()).toBe(6);
    const lines = [];
    for (let index = 0; index < 6; index++) {
      const item = items.nth(index);
      lines.push([
        await computed(item, "margin-left"),
        // The first line without its date: the author, and whom a deep reply answers.
        ((await item.innerText()).split("\n")[0] ?? "").replace(/ .*?(?= ·|$)/, ""),
      ]);
    }
    // 1.5em per level, on the page's 17px.
    expect(lines).toEqual([
      ["0px", "Ann"],
      ["25.5px", "Bob"],
      ["51px", "Cy"],
      // Deeper than three levels: at the third, saying whom it answers.
      ["51px", "Dee · in reply to Cy"],
      ["0px", "Deleted"],
      ["25.5px", "Eve"],
    ]);

    // Reply moves the form under Bob's comment; the button then cancels.
    const bobItem = items.nth(1);
    await bobItem.getByRole("button", { name: "Reply" }).click();
    expect(await items.nth(4).locator("em").innerText()).toBe("Deleted comment");
    expect(await bobItem.locator("form").count()).toBe(1);
    expect(await focusedName(page)).toBe("content");
    await bobItem.getByRole("button", { name: "Cancel reply" }).click();
    expect(await bobItem.locator("form").count()).toBe(0);
    await bobItem.getByRole("button", { name: "Reply" }).click();
    await screenshot(page, site.artifacts, "comments-widget-thread.png");
    await fillAndPost(page, { author: "Fay", content: "An answer to Bob" });
    await expect.poll(() => formStatus(page).innerText()).toBe("Thank you! Your comment is awaiting moderation.");
    expect((await site.comments("blog", "threads")).at(-1)).toMatchObject({ author: "Fay", parent: bob });
    // The form is back at the end.
    expect(await page.locator(".vigie > form").count()).toBe(1);
    expect(errors).toEqual([]);
  });

  it("speaks French with data-lang=fr", async () => {
    const { page } = await open(site.pageUrl("/posts/en-francais/", { lang: "fr" }));
    await expect.poll(() => page.locator(".vigie h2").innerText()).toBe("0 commentaire");
    expect(await page.locator(".vigie").getAttribute("lang")).toBe("fr");
    for (const label of ["Nom", "Site web (facultatif)", "Commentaire", "Question anti-spam"]) {
      expect(await page.getByLabel(label, { exact: true }).count(), label).toBe(1);
    }
    expect(await page.locator(".vigie form button").innerText()).toBe("Publier le commentaire");
    await page.locator(".vigie [name=author]").focus();
    await expect.poll(() => question(page).innerText()).toMatch(/^Combien font \d+ [-+×] \d+ \?$/);
    await fillAndPost(page, { author: "Léa", content: "Très bien" });
    await expect.poll(() => formStatus(page).innerText()).toBe("Merci ! Votre commentaire attend la modération.");
  });

  it("follows prefers-color-scheme and the page's custom properties", async () => {
    const accentOf = (page: Page) => computed(page.locator(".vigie form button"), "background-color");
    const light = await open(site.pageUrl("/posts/showcase.html", { article: "showcase" }), { colorScheme: "light" });
    await countHeading(light.page);
    expect(await accentOf(light.page)).toBe("rgb(9, 105, 218)");

    const dark = await open(site.pageUrl("/posts/showcase.html", { article: "showcase" }), { colorScheme: "dark" });
    await countHeading(dark.page);
    expect(await accentOf(dark.page)).toBe("rgb(68, 147, 248)");
    // The text colour is the page's (light on dark here), not the widget's.
    const pageColour = await computed(dark.page.locator("body"), "color");
    expect(pageColour).not.toBe("rgb(0, 0, 0)");
    expect(await computed(dark.page.locator(".vigie li").first(), "color")).toBe(pageColour);
    await dark.page.locator(".vigie [name=content]").fill("A comment being written…");
    await screenshot(dark.page, site.artifacts, "comments-widget-dark.png");

    const custom = await open(
      site.pageUrl("/posts/showcase.html", { article: "showcase", accent: "rgb(176, 0, 32)" }),
      {
        colorScheme: "dark",
      },
    );
    await countHeading(custom.page);
    expect(await accentOf(custom.page)).toBe("rgb(176, 0, 32)");
    expect(await computed(custom.page.locator(".vigie li a").first(), "color")).toBe("rgb(176, 0, 32)");
  });
});
