import { describe, expect, it } from "vitest";
import { CompileError } from "../../src/streams/compile-error.js";
import { compileCondition } from "../../src/streams/condition.js";
import { ednToJson, parseEdn } from "../../src/streams/edn.js";
import { type Event, valuesEqual } from "../../src/streams/event.js";

const matches = (condition: string, event: Event) => compileCondition(parseEdn(condition), "condition")(event);

describe("where-conditions: signs, nested paths, combinations, regex, tags and missing fields", () => {
  it.each<[string, Event, boolean]>([
    ["[:pos? :metric]", { metric: 10 }, true],
    ["[:pos? :metric]", { metric: 0 }, false],
    ["[:pos? :metric]", { metric: -1 }, false],
    ["[:> [:foo :bar :metric] 20]", { foo: { bar: { metric: 31 } } }, true],
    ["[:and [:> :metric 20] [:< :metric 40]]", { metric: 30 }, true],
    ["[:and [:> :metric 20] [:< :metric 40]]", { metric: 50 }, false],
    ["[:or [:< :metric 20] [:> :metric 40]]", { metric: 50 }, true],
    ["[:or [:< :metric 20] [:> :metric 40]]", { metric: 30 }, false],
    ['[:regex :host "foo.*"]', { host: "foobar" }, true],
    ['[:regex :host "foo.*"]', { host: "bar" }, false],
    ['[:contains :tags "foo"]', { tags: ["foo"] }, true],
    ['[:contains :tags "foo"]', { metric: 1 }, false],
    ['[:absent :tags "foo"]', { metric: 1 }, true],
    ['[:absent :tags "foo"]', { tags: ["foo"] }, false],
    ['[:= [:attributes :host] "foo"]', { attributes: { host: "foo" } }, true],
    ['[:= [:attributes :host] "foo"]', { attributes: {} }, false],
    ['[:= :service "bar"]', { host: "foo" }, false],
    ["[:> :metric 10]", { host: "foo" }, false],
  ])("%s on %j → %s", (condition, event, expected) => {
    expect(matches(condition, event)).toBe(expected);
  });
});

describe("where-conditions: the rest of the grammar", () => {
  it("compares numbers by value and other values by content", () => {
    expect(matches("[:= :metric 1]", { metric: 1.0 })).toBe(true);
    expect(matches("[:= :metric 1.5]", { metric: 1.5 })).toBe(true);
    expect(matches('[:= :metric "1"]', { metric: 1 })).toBe(false);
    expect(matches('[:= :tags ["a" "b"]]', { tags: ["a", "b"] })).toBe(true);
    expect(matches('[:not= :state "ok"]', { state: "critical" })).toBe(true);
    expect(matches('[:not= :state "ok"]', {})).toBe(true);
    expect(matches('[:not= :state "ok"]', { state: "ok" })).toBe(false);
  });

  it("decides := and :not= with a scalar as with any argument, on top-level and nested fields", () => {
    const values: unknown[] = ["node", "", 1, 1.5, 0, -0, Number.NaN, true, false, null, undefined, ["node"], {}];
    const scalars = ['"node"', '""', "1", "1.0", "1.5", "0", "true", "false", "nil"];
    for (const argument of scalars) {
      const expected = valuesEqual.bind(undefined, ednToJson(parseEdn(argument)));
      for (const value of values) {
        for (const [field, event] of [
          [":job", value === undefined ? {} : { job: value }],
          ["[:labels :job]", { labels: value === undefined ? {} : { job: value } }],
        ] as const) {
          const label = `${argument} on ${field} = ${String(value)}`;
          expect(matches(`[:= ${field} ${argument}]`, event), label).toBe(expected(value));
          expect(matches(`[:not= ${field} ${argument}]`, event), label).toBe(!expected(value));
        }
      }
    }
    // An inherited property is read as the general reader reads it.
    expect(matches("[:= :constructor nil]", {})).toBe(false);
    expect(matches("[:not= :constructor nil]", {})).toBe(true);
  });

  it("handles every comparison, sign and nil test without throwing on wrong types", () => {
    expect(matches("[:>= :metric 10]", { metric: 10 })).toBe(true);
    expect(matches("[:<= :metric 10]", { metric: 10.5 })).toBe(false);
    expect(matches("[:< :metric 10]", { metric: "5" })).toBe(false);
    expect(matches("[:neg? :metric]", { metric: -0.5 })).toBe(true);
    expect(matches("[:neg? :metric]", { metric: "-1" })).toBe(false);
    expect(matches("[:zero? :metric]", { metric: 0 })).toBe(true);
    expect(matches("[:zero? :metric]", { metric: null })).toBe(false);
    expect(matches("[:nil? :metric]", {})).toBe(true);
    expect(matches("[:nil? :metric]", { metric: null })).toBe(true);
    expect(matches("[:nil? :metric]", { metric: 0 })).toBe(false);
    expect(matches("[:not-nil? :metric]", { metric: 0 })).toBe(true);
    expect(matches("[:not-nil? :metric]", {})).toBe(false);
    expect(matches('[:regex :host "foo"]', { host: "foobar" })).toBe(false);
    expect(matches('[:regex :host "foo"]', { host: 12 })).toBe(false);
    expect(matches('[:contains :tags "foo"]', { tags: "foo" })).toBe(false);
    expect(matches("[:> [:a :b :c] 1]", { a: "not an object" })).toBe(false);
  });

  it(":regex gives the same answers from its memory of values as without, for short, long and many values", () => {
    const predicate = compileCondition(parseEdn('[:regex :host "host-1.*"]'), "actions.params[0]");
    const long = `host-1${"x".repeat(300)}`;
    for (let round = 0; round < 2; round++) {
      for (let i = 0; i < 5000; i++) expect(predicate({ host: `host-${i}` })).toBe(String(i).startsWith("1"));
      expect(predicate({ host: long })).toBe(true);
      expect(predicate({ host: `h${long}` })).toBe(false);
    }
    // An EDN regex literal works too.
    expect(compileCondition(parseEdn('[:regex :host #"a+"]'), "q")({ host: "aaa" })).toBe(true);
  });

  it("supports :not, :always-true and :true", () => {
    expect(matches("[:not [:> :metric 10]]", { metric: 5 })).toBe(true);
    expect(matches("[:not [:> :metric 10]]", { metric: 50 })).toBe(false);
    expect(matches("[:always-true]", {})).toBe(true);
    expect(matches("[:true]", {})).toBe(true);
    expect(matches("[:and [:true] [:> :metric 1] [:< :metric 3]]", { metric: 2 })).toBe(true);
    expect(matches("[:or [:> :metric 5] [:< :metric 0] [:= :metric 2]]", { metric: 2 })).toBe(true);
  });

  it.each([
    ["[]", "a condition must be a vector starting with an operator keyword"],
    ['["=" :host "a"]', "a condition must be a vector starting with an operator keyword"],
    ["[:foo :host 1]", "unknown condition operator :foo"],
    ['[:> :metric "ten"]', ":> compares with a number"],
    ["[:> :metric]", ":> takes a field and one argument"],
    ['[:= "host" "a"]', "a field must be a keyword or a vector of keywords"],
    ['[:regex :host "("]', 'invalid regular expression "("'],
    ["[:not]", ":not takes exactly one condition"],
    ["[:and]", ":and needs at least one condition"],
    ["[:pos? :metric 1]", ":pos? takes a field only"],
  ])("refuses %s at compile time", (condition, problem) => {
    let error: unknown;
    try {
      compileCondition(parseEdn(condition), "actions.params[0]");
    } catch (thrown) {
      error = thrown;
    }
    expect(error).toBeInstanceOf(CompileError);
    expect((error as CompileError).message).toContain(`invalid stream config: actions.params[0]`);
    expect((error as CompileError).message).toContain(problem);
  });
});
