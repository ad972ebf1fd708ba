/**
 * The SVG of badges (src/healthchecks/badges/svg.ts): text widths from Verdana's table, XML
 * escaping, and documents that a strict XML parser reads, self-contained and with their title.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  BADGE_COLORS,
  type Badge,
  escapeXml,
  renderBadgeSvg,
  textWidth,
} from "../../../src/healthchecks/badges/svg.js";
import { expectSelfContainedBadge, parseSvg } from "./svg-document.js";

const badge = (fields: Partial<Badge> = {}): Badge => ({
  label: "website",
  message: "up",
  color: "brightgreen",
  title: "website status: up",
  ...fields,
});

describe("text widths", () => {
  it("sums Verdana's advance widths at 11 px", () => {
    // "build": (1300 + 1298 + 563 + 563 + 1300) / 2048 em of 11 px, about 27 pixels.
    expect(textWidth("build")).toBeCloseTo(26.98, 1);
    expect(textWidth("passing")).toBeCloseTo(42.02, 1);
    expect(textWidth("")).toBe(0);
    expect(textWidth("W")).toBeGreaterThan(textWidth("i") * 3);
  });

  it("gives other characters an average letter's width, wide ones a full em, combining marks none", () => {
    expect(textWidth("é")).toBeCloseTo(textWidth("e") * 1.07, 1);
    expect(textWidth("監視")).toBe(22);
    expect(textWidth("🟢")).toBe(11);
    expect(textWidth("e\u0301")).toBe(textWidth("e"));
  });
});

describe("XML escaping", () => {
  it("escapes markup and quotes", () => {
    expect(escapeXml(`<a href="x">&'`)).toBe("&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
  });

  it("replaces what XML cannot hold (controls, U+FFFE, U+FFFF, lone surrogates) by U+FFFD", () => {
    expect(escapeXml("a\u0000b\u001fc\ufffed\uffff")).toBe("a\ufffdb\ufffdc\ufffdd\ufffd");
    expect(escapeXml("x\ud800y\udc00")).toBe("x\ufffdy\ufffd");
    expect(escapeXml("tab\there\r\nline 🟢")).toBe("tab&#9;here&#13;&#10;line 🟢");
  });
});

describe("a badge's SVG", () => {
  it("is a self-contained image with its title, the label and message drawn over their colours", () => {
    const svg = renderBadgeSvg(badge());
    const document = expectSelfContainedBadge(svg, "website status: up");
    const texts = document.texts.filter((text) => text.element === "text").map((text) => text.text);
    // Each text twice: its shadow, then itself.
    expect(texts).toEqual(["website", "website", "up", "up"]);
    const fills = document.elements.filter((element) => element.name === "rect").map((rect) => rect.attributes.fill);
    expect(fills).toContain("#555");
    expect(fills).toContain(BADGE_COLORS.brightgreen);
    const root = document.elements[0]?.attributes;
    const labelWidth = Math.ceil(textWidth("website")) + 10;
    const messageWidth = Math.ceil(textWidth("up")) + 10;
    expect(root?.width).toBe(String(labelWidth + messageWidth));
    expect(root?.height).toBe("20");
    const shadowed = document.elements.filter(
      (element) => element.name === "text" && element.attributes["aria-hidden"],
    );
    expect(shadowed).toHaveLength(2);
  });

  it("escapes hostile labels and messages, which stay text", () => {
    const hostile = `<script>alert(1)</script><a href="https://evil.example">&amp;'`;
    const svg = renderBadgeSvg(badge({ label: hostile, message: hostile, title: hostile }));
    const document = expectSelfContainedBadge(svg, hostile);
    expect(document.texts.filter((text) => text.element === "text").map((text) => text.text)).toEqual([
      hostile,
      hostile,
      hostile,
      hostile,
    ]);
  });

  it("is well-formed whatever the texts (fast-check, any string)", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary" }), fc.string({ unit: "grapheme" }), (label, message) => {
        const svg = renderBadgeSvg(badge({ label, message, title: `${label}: ${message}` }));
        expect(() => parseSvg(svg)).not.toThrow();
        expectSelfContainedBadge(svg);
      }),
      { seed: 20_260_510, numRuns: 300 },
    );
  });

  it("has one colour per colour name", () => {
    for (const color of Object.keys(BADGE_COLORS) as (keyof typeof BADGE_COLORS)[]) {
      expect(renderBadgeSvg(badge({ color }))).toContain(`fill="${BADGE_COLORS[color]}"`);
    }
  });
});
