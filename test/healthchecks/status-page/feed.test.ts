/**
 * The Atom feed of a status page (src/healthchecks/status-page/feed.ts), parsed with saxes: the
 * elements RFC 4287 requires, entries newest first, stable ids, and any text (markup, characters
 * XML cannot hold, lone surrogates) escaped or left out so that the document stays well-formed.
 */
import { describe, expect, it } from "vitest";
import type { Incident } from "../../../src/healthchecks/incidents/incident.js";
import { MAX_ENTRY_TEXT, nameUuid, renderFeed, xmlText } from "../../../src/healthchecks/status-page/feed.js";
import { parseAtom } from "./atom.js";

const NOW = Date.parse("2026-05-10T12:00:00.000Z");
const PAGE = { title: "Acme <status>", description: "What & why", url: "https://status.example.org/status" };

describe("the Atom feed", () => {
  it("is valid with no entry: its updated is now", () => {
    const feed = parseAtom(renderFeed(PAGE, [], [], new Set(), NOW));
    expect(feed).toMatchObject({
      title: "Acme <status>",
      author: "Acme <status>",
      updated: "2026-05-10T12:00:00.000Z",
    });
    expect(feed.links).toContainEqual(
      expect.objectContaining({ rel: "self", href: "https://status.example.org/status/feed.atom" }),
    );
    expect(feed.entries).toEqual([]);
  });

  it("lists incidents with their whole timeline and maintenance windows, newest first, all text escaped", () => {
    const hostile = "<script>alert(1)</script> \u0001\u000b\ud800 & ]]>";
    const incident: Incident = {
      id: "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9",
      title: hostile,
      checks: ["website", "private"],
      pages: [""],
      updates: [
        { status: "investigating", message: "First look.", timeMs: NOW - 7_200_000 },
        { status: "identified", message: hostile, timeMs: NOW - 3_600_000 },
      ],
    };
    const window = {
      name: "db-upgrade",
      start: "2026-05-11T02:00:00.000Z",
      end: "2026-05-11T04:00:00.000Z",
      ongoing: false,
      checks: ["website"],
    };
    const xml = renderFeed(PAGE, [incident], [window], new Set(["website"]), NOW);
    expect(xml).not.toContain("<script>");
    const feed = parseAtom(xml);
    expect(feed.updated).toBe("2026-05-10T11:00:00.000Z");
    expect(feed.entries.map((entry) => entry.title)).toEqual([
      "Identified: <script>alert(1)</script>  & ]]>",
      "Maintenance: db-upgrade",
    ]);
    const [first, second] = feed.entries;
    expect(first?.id).toBe(`urn:uuid:${incident.id}`);
    expect(first?.content).toContain("Affects website.");
    expect(first?.content).not.toContain("private");
    expect(first?.content).toContain("2026-05-10 10:00 UTC, Investigating:\nFirst look.");
    expect(second?.content).toBe("Planned maintenance from 2026-05-11 02:00 UTC to 2026-05-11 04:00 UTC, for website.");
    // The same window has the same id at each rendering; it was announced 7 days before it starts.
    expect(second?.id).toBe(parseAtom(renderFeed(PAGE, [], [window], new Set(), NOW + 60_000)).entries[0]?.id);
    expect(second?.updated).toBe("2026-05-04T02:00:00.000Z");
  });

  it("keeps the newest updates of a long timeline that fit in an entry", () => {
    const updates = Array.from({ length: 30 }, (_, index) => ({
      status: "monitoring" as const,
      message: `${index} ${"x".repeat(9_000)}`,
      timeMs: NOW - (30 - index) * 60_000,
    }));
    const incident: Incident = {
      id: "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9",
      title: "t",
      checks: [],
      pages: [],
      updates,
    };
    const [entry] = parseAtom(renderFeed(PAGE, [incident], [], new Set(), NOW)).entries;
    expect(entry?.content.length).toBeLessThanOrEqual(MAX_ENTRY_TEXT + 100);
    expect(entry?.content).toContain("Monitoring:\n29 x");
    expect(entry?.content).toContain("28 earlier updates left out.");
  });

  it("escapes text and keeps only what XML 1.0 can hold", () => {
    expect(xmlText(`<a href="x">'&'</a>`)).toBe("&lt;a href=&quot;x&quot;&gt;&apos;&amp;&apos;&lt;/a&gt;");
    expect(xmlText("tab\there\nline\r\u0000\u001f\ufffe\uffff")).toBe("tab\there\nline\r");
    expect(xmlText("𝄞 \ud834 \udd1e")).toBe("𝄞  ");
    expect(nameUuid("a")).toMatch(/^urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(nameUuid("a")).toBe(nameUuid("a"));
    expect(nameUuid("a")).not.toBe(nameUuid("b"));
  });
});
