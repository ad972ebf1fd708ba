import { describe, expect, it } from "vitest";
import { EdnError, ednToJson, MAX_EDN_NESTING, parseEdn, toEdn } from "../../src/streams/edn.js";

describe("parseEdn", () => {
  it("reads one value, lists inside maps included", () => {
    expect(parseEdn("{:a 1 :children ({:b 2}) :c 3}")).toEqual({
      map: [
        [{ key: "a" }, 1],
        [{ key: "children" }, { list: [{ map: [[{ key: "b" }, 2]] }] }],
        [{ key: "c" }, 3],
      ],
    });
    expect(parseEdn("nil")).toBeNull();
    expect(parseEdn("  [1 2] ; trailing comment")).toEqual([1, 2]);
    expect(parseEdn("1;no line break after the comment")).toBe(1);
  });

  it("reads tags, sets, discards, strings and characters as edn-data does", () => {
    expect(parseEdn('{:a #_ :ignored 1 :b #{2} :c "x ] } \\" y" :d \\z}')).toEqual({
      map: [
        [{ key: "a" }, 1],
        [{ key: "b" }, { set: [2] }],
        [{ key: "c" }, 'x ] } " y'],
        [{ key: "d" }, { char: "z" }],
      ],
    });
    expect(parseEdn('[#inst "2026-01-01T00:00:00Z" #_ #foo 1 #foo 2]')).toEqual([
      new Date("2026-01-01T00:00:00Z"),
      { tag: "foo", val: 2 },
    ]);
  });

  it.each([
    ["", "invalid EDN: no value"],
    ["  ; only a comment", "invalid EDN: no value"],
    ["{:a", "invalid EDN: unexpected end of input: the { at line 1, column 1 is not closed at line 1, column 4"],
    ['{:a "x', "invalid EDN: unterminated string at line 1, column 5"],
    ["{:a 1} {:b 2}", "invalid EDN: more than one top-level value: a second one starts at line 1, column 8"],
    ["[1 2]\n  x", "invalid EDN: more than one top-level value: a second one starts at line 2, column 3"],
    [
      "{:a 1 :b}",
      "invalid EDN: the map opened at line 1, column 1 has 3 forms, not key-value pairs at line 1, column 9",
    ],
    ["{:a 1}]", "invalid EDN: unexpected ] with no collection open at line 1, column 7"],
    ["[1 2)", "invalid EDN: unexpected ): the [ at line 1, column 1 is not closed at line 1, column 5"],
    ["[1 #_]", "invalid EDN: a tag or #_ has no form before ] at line 1, column 6"],
    ["#foo", "invalid EDN: unexpected end of input after a tag or #_ at line 1, column 5"],
    [
      "[\\)]",
      "invalid EDN: a character literal of white space or a delimiter is not supported; write a string instead at line 1, column 2",
    ],
    ['"\\q"', "invalid EDN: Unexpected escape character: \\q"],
  ])("refuses %j naming the position", (text, message) => {
    expect(() => parseEdn(text)).toThrow(new EdnError(message));
  });

  it(`refuses collections nested deeper than ${MAX_EDN_NESTING} levels, without recursing`, () => {
    const deep = (levels: number) => `${"[".repeat(levels)}${"]".repeat(levels)}`;
    expect(() => parseEdn(deep(MAX_EDN_NESTING))).not.toThrow();
    expect(() => parseEdn(deep(MAX_EDN_NESTING + 1))).toThrow(
      `invalid EDN: collections nested deeper than ${MAX_EDN_NESTING} levels at line 1, column ${MAX_EDN_NESTING + 1}`,
    );
    expect(() => parseEdn(deep(100_000))).toThrow(EdnError);
  });
});

describe("toEdn", () => {
  it("prints text that parseEdn reads back as the same value, regular expression literals included", () => {
    const text =
      '{:where [:regex :service #"^a\\"b.*"] :s "# \\"kept\\" #\\"too\\"" :c \\z :t #inst "2026-01-01T00:00:00.000Z" :r #"\\\\"}';
    const value = parseEdn(text);
    expect(toEdn(value)).toBe(text);
    expect(parseEdn(toEdn(value))).toEqual(value);
  });
});

describe("ednToJson", () => {
  it("turns EDN data into event fields", () => {
    expect(ednToJson(parseEdn('{:host "a" :tags ["x" :y] :n 10N :nested {:k (1 2)} "s" #{1}}'))).toEqual({
      host: "a",
      tags: ["x", "y"],
      n: 10,
      nested: { k: [1, 2] },
      s: [1],
    });
  });
});
