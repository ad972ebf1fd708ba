/**
 * Streaming XML for the Disqus and WordPress imports: saxes reads the file chunk by chunk and this
 * module hands out one small element tree per record (a Disqus `<thread>` or `<post>`, a WordPress
 * `<item>`), dropping each once handed out, so memory holds one record and one chunk whatever the
 * file's size.
 */
import { createReadStream } from "node:fs";
import type * as Saxes from "saxes";
import { lazyLibrary } from "../../platform/lazy.js";
import { ImportFormatError } from "./items.js";

/** saxes, loaded with the first XML import (start-up skips it). */
const saxes = lazyLibrary<typeof Saxes>("saxes");

/** An element of a record: its attributes, its text (CDATA included) and its child elements. */
export interface XmlElement {
  readonly name: string;
  readonly attributes: Readonly<Record<string, string>>;
  text: string;
  readonly children: XmlElement[];
}

/** The first child of `element` named `name`. */
export function childOf(element: XmlElement | undefined, name: string): XmlElement | undefined {
  return element?.children.find((child) => child.name === name);
}

/** The trimmed text of the first child named `name`, or `undefined` when there is none. */
export function textOf(element: XmlElement | undefined, name: string): string | undefined {
  return childOf(element, name)?.text.trim();
}

/** What to read: the names of the records and their depth (1: children of the root element). */
export interface RecordSelection {
  readonly names: ReadonlySet<string>;
  readonly depth: number;
  /** Elements inside a record whose text is not kept (a WordPress post's body). */
  readonly skipText?: ReadonlySet<string>;
}

/**
 * The records of the XML file `path`, in document order, read in chunks of 64 KiB.
 * Element names are taken as written, prefix included (`wp:comment`), without namespace processing.
 * @throws ImportFormatError for malformed XML, naming the file, line and column
 */
export async function* xmlRecords(path: string, selection: RecordSelection): AsyncGenerator<XmlElement> {
  const parser = new (saxes().SaxesParser)({ fileName: path });
  const ready: XmlElement[] = [];
  const open: XmlElement[] = [];
  let depth = 0;
  let skipping = 0;
  parser.on("error", (error) => {
    throw new ImportFormatError(error.message);
  });
  parser.on("opentag", (tag) => {
    depth++;
    const parent = open.at(-1);
    if (parent === undefined && !(depth === selection.depth + 1 && selection.names.has(tag.name))) return;
    const element: XmlElement = {
      name: tag.name,
      attributes: tag.attributes as Record<string, string>,
      text: "",
      children: [],
    };
    parent?.children.push(element);
    open.push(element);
    if (selection.skipText?.has(tag.name)) skipping++;
  });
  const addText = (text: string) => {
    const current = open.at(-1);
    if (current !== undefined && skipping === 0) current.text += text;
  };
  parser.on("text", addText);
  parser.on("cdata", addText);
  parser.on("closetag", (tag) => {
    depth--;
    const element = open.pop();
    if (element === undefined) return;
    if (selection.skipText?.has(tag.name)) skipping--;
    if (open.length === 0) ready.push(element);
  });
  // The records completed before an error are handed out first, so that the batches before the
  // error are written whatever the chunk the error falls in.
  const step = function* (feed: () => void): Generator<XmlElement> {
    let failure: unknown;
    try {
      feed();
    } catch (error) {
      failure = error;
    }
    yield* ready.splice(0);
    if (failure !== undefined) throw failure;
  };
  for await (const chunk of createReadStream(path, { encoding: "utf8", highWaterMark: 64 * 1024 })) {
    yield* step(() => parser.write(chunk as string));
  }
  yield* step(() => parser.close());
}
