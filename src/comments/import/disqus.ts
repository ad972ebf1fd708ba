/**
 * Disqus's XML export (Admin → Moderate → Export): after the categories, every `<thread
 * dsq:id="…">` (its `<link>` is the page's URL, `<id>` the identifier the site gave) then every
 * `<post dsq:id="…">` with its HTML `<message>` (CDATA), `<createdAt>` (RFC 3339, UTC),
 * `<isDeleted>`, `<isSpam>`, optional `<isApproved>`, `<author>` (`<name>`, `<email>`), `<thread
 * dsq:id>` and, for a reply, `<parent dsq:id>`.
 *
 * Memory: one post at a time, plus one small entry per thread (the threads come first and posts
 * refer to them), so a 500 MB file takes the memory of its threads' links, not of its posts.
 */
import { htmlToText } from "./html-text.js";
import { type ImportItem, type ThreadRef, timeOf } from "./items.js";
import { textOf, type XmlElement, xmlRecords } from "./xml.js";

const DSQ_ID = "dsq:id";

/** The thread of a `<thread>` record. */
function threadOf(record: XmlElement): ThreadRef {
  const identifier = textOf(record, "id");
  return {
    url: textOf(record, "link"),
    id: identifier === undefined || identifier === "" ? record.attributes[DSQ_ID] : identifier,
  };
}

/** The item of a `<post>` record. */
function postOf(record: XmlElement, threads: ReadonlyMap<string, ThreadRef>): ImportItem {
  if (textOf(record, "isSpam") === "true") return { kind: "skipped", reason: "spam" };
  if (textOf(record, "isDeleted") === "true") return { kind: "skipped", reason: "deleted" };
  const threadId = record.children.find((child) => child.name === "thread")?.attributes[DSQ_ID];
  const thread = threadId === undefined ? undefined : threads.get(threadId);
  const sourceId = record.attributes[DSQ_ID];
  const timestamp = timeOf(textOf(record, "createdAt"));
  if (thread === undefined || sourceId === undefined || timestamp === undefined) {
    return { kind: "skipped", reason: "no-thread" };
  }
  const author = record.children.find((child) => child.name === "author");
  return {
    kind: "comment",
    sourceId,
    thread,
    parentSourceId: record.children.find((child) => child.name === "parent")?.attributes[DSQ_ID],
    author: textOf(author, "name") || textOf(author, "username") || "",
    authorWebsite: undefined,
    email: textOf(author, "email"),
    content: htmlToText(textOf(record, "message") ?? ""),
    timestamp,
    approved: textOf(record, "isApproved") !== "false",
  };
}

/**
 * The comments of a Disqus export, in file order.
 * @throws ImportFormatError for malformed XML (file, line and column)
 */
export async function* disqusItems(path: string): AsyncGenerator<ImportItem> {
  const threads = new Map<string, ThreadRef>();
  const selection = { names: new Set(["thread", "post"]), depth: 1 };
  for await (const record of xmlRecords(path, selection)) {
    if (record.name === "thread") {
      const id = record.attributes[DSQ_ID];
      if (id !== undefined) threads.set(id, threadOf(record));
    } else yield postOf(record, threads);
  }
}
