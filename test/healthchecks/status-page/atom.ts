/**
 * Reading an Atom feed in tests with saxes, a strict XML parser (namespaces tracked): the document
 * must be well-formed, and hold what RFC 4287 requires of a feed and of each entry (§4.1.1, §4.1.2):
 * an id that is an absolute IRI (here `urn:uuid:` or `tag:`), a title, an updated date-time
 * (§3.3), an author for the feed, and content as text.
 */
import { SaxesParser } from "saxes";
import { expect } from "vitest";

const ATOM = "http://www.w3.org/2005/Atom";
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const ID = /^(urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|tag:[^\s]+)$/;

/** An entry of the feed, as read. */
export interface AtomEntry {
  readonly id: string;
  readonly title: string;
  readonly updated: string;
  readonly content: string;
}

/** The feed, as read. */
export interface AtomFeed {
  readonly id: string;
  readonly title: string;
  readonly updated: string;
  readonly author: string;
  readonly links: readonly Readonly<Record<string, string>>[];
  readonly entries: readonly AtomEntry[];
}

/**
 * Parses `xml` and checks the elements RFC 4287 requires.
 * @throws Error saxes' error when the document is not well-formed; an assertion error otherwise
 */
export function parseAtom(xml: string): AtomFeed {
  const parser = new SaxesParser({ xmlns: true });
  const path: string[] = [];
  const feed: Record<string, string> = {};
  const links: Record<string, string>[] = [];
  const entries: Record<string, string>[] = [];
  let text = "";
  parser.on("opentag", (tag) => {
    expect(tag.uri, `<${tag.name}> in the Atom namespace`).toBe(ATOM);
    path.push(tag.local);
    text = "";
    if (tag.local === "entry") entries.push({});
    if (tag.local === "link" && path.length === 2) {
      links.push(Object.fromEntries(Object.entries(tag.attributes).map(([name, value]) => [name, value.value])));
    }
  });
  parser.on("text", (chunk) => {
    text += chunk;
  });
  parser.on("closetag", () => {
    const where = path.join("/");
    const name = path.pop() ?? "";
    if (where.startsWith("feed/entry/") && path.length === 2) {
      const entry = entries.at(-1);
      if (entry !== undefined) entry[name] = text;
    } else if (where === "feed/author/name") feed.author = text;
    else if (path.length === 1 && name !== "author") feed[name] = text;
    text = "";
  });
  parser.write(xml).close();
  for (const key of ["id", "title", "updated", "author"]) expect(feed[key], `feed ${key}`).toBeTruthy();
  expect(feed.id).toMatch(ID);
  expect(feed.updated).toMatch(RFC3339);
  for (const entry of entries) {
    expect(entry.id).toMatch(ID);
    expect(entry.title).toBeTruthy();
    expect(entry.updated).toMatch(RFC3339);
  }
  return {
    id: feed.id ?? "",
    title: feed.title ?? "",
    updated: feed.updated ?? "",
    author: feed.author ?? "",
    links,
    entries: entries.map((entry) => ({
      id: entry.id ?? "",
      title: entry.title ?? "",
      updated: entry.updated ?? "",
      content: entry.content ?? "",
    })),
  };
}
