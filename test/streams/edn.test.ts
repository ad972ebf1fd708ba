import { describe, expect, it } from "vitest";
import { EdnError, ednToJson, parseEdn } from "../../src/streams/edn.js";

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
  });

  it.each([
    ["", "invalid EDN: no value"],
    ["{:a", "invalid EDN: unexpected end of input"],
    ['{:a "x', "invalid EDN: unexpected end of input"],
    ["{:a 1} {:b 2}", "invalid EDN: more than one top-level value"],
    ["[1 2] x", "invalid EDN: more than one top-level value"],
  ])("refuses %j", (text, message) => {
    expect(() => parseEdn(text)).toThrow(new EdnError(message));
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
