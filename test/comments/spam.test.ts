/** The spam signals without I/O: links counted as words, the answer time. */
import { describe, expect, it } from "vitest";
import { answeredTooFast, countLinks } from "../../src/comments/spam.js";

describe("countLinks", () => {
  it("counts words starting with http://, https:// or www., in any case", () => {
    expect(countLinks("no links here, just example.org")).toBe(0);
    expect(countLinks("see https://a.example and http://b.example")).toBe(2);
    expect(countLinks("WWW.shop.example and Https://x.example")).toBe(2);
    expect(countLinks("https://www.x.example counts once")).toBe(1);
    expect(countLinks("(https://a.example) [www.b.example]\nhttp://c")).toBe(3);
    expect(countLinks("awww.x and nothttp://y and https:// alone")).toBe(0);
    expect(countLinks("")).toBe(0);
  });

  it("is the same on a second call (no state kept between texts)", () => {
    const text = "http://a http://b http://c http://d";
    expect(countLinks(text)).toBe(4);
    expect(countLinks(text)).toBe(4);
  });
});

describe("answeredTooFast", () => {
  it("is off at 0, else compares the time since issue", () => {
    expect(answeredTooFast(1000, 1000, 0)).toBe(false);
    expect(answeredTooFast(1000, 3999, 3000)).toBe(true);
    expect(answeredTooFast(1000, 4000, 3000)).toBe(false);
  });
});
