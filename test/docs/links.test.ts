/**
 * Every relative link of the documentation (README.md, CONTRIBUTING.md when there is one, and
 * docs/*.md) leads somewhere: to a file or directory of the repository and, with a `#anchor`, to a
 * heading of that page (GitHub's anchors). Links to other sites are not followed.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { anchors, links, slug } from "./markdown.js";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

/** The pages checked: the root ones that exist, then every page of docs/. */
function pages(): string[] {
  const top = ["README.md", "CONTRIBUTING.md"].filter((name) => existsSync(join(root, name)));
  const docs = readdirSync(join(root, "docs"))
    .filter((name) => name.endsWith(".md"))
    .sort()
    .map((name) => `docs/${name}`);
  return [...top, ...docs];
}

const anchorCache = new Map<string, Set<string>>();

function anchorsOf(file: string): Set<string> {
  let found = anchorCache.get(file);
  if (found === undefined) {
    found = anchors(readFileSync(file, "utf8"));
    anchorCache.set(file, found);
  }
  return found;
}

/**
 * What is wrong with one link of `page` (a path from the repository root), or undefined when it
 * resolves. `pageText` is the page itself, for links to its own anchors.
 */
function brokenLink(page: string, pageText: string, target: string): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith("//")) return undefined; // another site, mailto:
  const hash = target.indexOf("#");
  const path = decodeURIComponent(hash === -1 ? target : target.slice(0, hash));
  const anchor = hash === -1 ? undefined : decodeURIComponent(target.slice(hash + 1));
  const file = path === "" ? join(root, page) : resolve(dirname(join(root, page)), path.split("?")[0] as string);
  if (!file.startsWith(root)) return `${target}: leaves the repository`;
  if (!existsSync(file)) return `${target}: ${relative(root, file)} does not exist`;
  if (anchor === undefined || anchor === "") return undefined;
  if (statSync(file).isDirectory() || !file.endsWith(".md"))
    return `${target}: an anchor into a file that is not a page`;
  const offered = path === "" ? anchors(pageText) : anchorsOf(file);
  if (!offered.has(anchor)) return `${target}: ${relative(root, file)} has no heading with the anchor #${anchor}`;
  return undefined;
}

describe("the Markdown reader", () => {
  it("computes GitHub's anchors", () => {
    expect(slug("Publish and subscribe (WebSocket)")).toBe("publish-and-subscribe-websocket");
    expect(slug("Backups and `vigie registry check`")).toBe("backups-and-vigie-registry-check");
    expect(slug("The `io` action")).toBe("the-io-action");
    expect(slug("Sizes, durations: and [links](x.md)")).toBe("sizes-durations-and-links");
    expect(slug("Worked example: a per-host HTTP error rate alert")).toBe(
      "worked-example-a-per-host-http-error-rate-alert",
    );
    expect([...anchors("# A\n## A\n```\n# not a heading\n```\n### A")]).toEqual(["a", "a-1", "a-2"]);
  });

  it("finds links outside code, and reports the broken ones", () => {
    const page = [
      "See [ok](README.md), [missing](docs/nowhere.md), [here](#a-heading) and [there](#nowhere).",
      "`[not a link](x.md)`",
      "```",
      "[not a link either](y.md)",
      "```",
      "# A heading",
      "![image](docs/absent.png) [site](https://example.org/x.md)",
    ].join("\n");
    const found = links(page).map((link) => link.target);
    expect(found).toEqual([
      "README.md",
      "docs/nowhere.md",
      "#a-heading",
      "#nowhere",
      "docs/absent.png",
      "https://example.org/x.md",
    ]);
    const broken = found.filter((target) => brokenLink("README.md", page, target) !== undefined);
    expect(broken).toEqual(["docs/nowhere.md", "#nowhere", "docs/absent.png"]);
  });
});

describe("links of the documentation", () => {
  it("checks the README and at least the pages of docs/", () => {
    expect(pages()).toContain("README.md");
    expect(pages().filter((page) => page.startsWith("docs/")).length).toBeGreaterThanOrEqual(11);
  });

  for (const page of pages()) {
    it(`${page}: every relative link resolves`, () => {
      const text = readFileSync(join(root, page), "utf8");
      const broken = links(text)
        .map((link) => ({ line: link.line, problem: brokenLink(page, text, link.target) }))
        .filter((link) => link.problem !== undefined)
        .map((link) => `${page}:${link.line}: ${link.problem}`);
      expect(broken).toEqual([]);
    });
  }
});
