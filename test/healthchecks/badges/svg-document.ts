/**
 * Reading a badge's SVG in tests with saxes, a strict XML parser: the document must be well-formed
 * XML, and what it holds (elements, attributes, texts) is returned to be checked.
 */
import { SaxesParser } from "saxes";
import { expect } from "vitest";

/** An element of the document: its name and attributes. */
export interface SvgElement {
  readonly name: string;
  readonly attributes: Readonly<Record<string, string>>;
}

/** What a parsed badge holds. */
export interface SvgDocument {
  /** Every element, in document order; the first is the root. */
  readonly elements: readonly SvgElement[];
  /** The text of each element that has some, by element name, in document order. */
  readonly texts: readonly { readonly element: string; readonly text: string }[];
}

/**
 * Parses `svg` with saxes (XML 1.0, namespaces not tracked).
 * @throws Error saxes' error when the document is not well-formed
 */
export function parseSvg(svg: string): SvgDocument {
  const parser = new SaxesParser();
  const elements: SvgElement[] = [];
  const texts: { element: string; text: string }[] = [];
  const open: string[] = [];
  parser.on("opentag", (tag) => {
    const attributes: Record<string, string> = {};
    for (const [name, value] of Object.entries(tag.attributes)) attributes[name] = String(value);
    elements.push({ name: tag.name, attributes });
    open.push(tag.name);
  });
  parser.on("closetag", () => {
    open.pop();
  });
  parser.on("text", (text) => {
    texts.push({ element: open.at(-1) ?? "", text });
  });
  parser.write(svg).close();
  return { elements, texts };
}

/**
 * Checks that `svg` is a self-contained, accessible badge: well-formed, an `<svg>` root in the SVG
 * namespace with `role="img"` and an `aria-label` equal to its one `<title>` (`title`, when given);
 * no script, no link (`href` in any namespace), no style sheet, no reference outside the document
 * (`url(...)` only to an element of its own), no other URL in an attribute than the namespace's.
 */
export function expectSelfContainedBadge(svg: string, title?: string): SvgDocument {
  const document = parseSvg(svg);
  const [root] = document.elements;
  expect(root?.name).toBe("svg");
  expect(root?.attributes.xmlns).toBe("http://www.w3.org/2000/svg");
  expect(root?.attributes.role).toBe("img");
  const titles = document.texts.filter((text) => text.element === "title").map((text) => text.text);
  expect(titles).toHaveLength(1);
  expect(root?.attributes["aria-label"]).toBe(titles[0]);
  if (title !== undefined) expect(titles[0]).toBe(title);
  for (const element of document.elements) {
    expect(["script", "style", "image", "use", "a", "foreignObject", "iframe"]).not.toContain(element.name);
    for (const [name, value] of Object.entries(element.attributes)) {
      expect(name.toLowerCase()).not.toMatch(/href$|^on/);
      for (const reference of value.matchAll(/url\(([^)]*)\)/g)) expect(reference[1]).toMatch(/^#[a-z]+$/);
      // The label in words (aria-label) is text, whatever it says.
      if (name === "aria-label" || (element === root && name === "xmlns")) continue;
      expect(value).not.toMatch(/[a-z]+:\/\/|^\/\/|javascript:|data:/i);
    }
  }
  expect(svg).not.toMatch(/<!DOCTYPE|<!ENTITY|<\?xml-stylesheet|@import|@font-face/i);
  return document;
}
