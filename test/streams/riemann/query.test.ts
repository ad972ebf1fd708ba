import { describe, expect, it } from "vitest";
import { toEdn } from "../../../src/streams/edn.js";
import type { Event } from "../../../src/streams/event.js";
import {
  compileQuery,
  likePattern,
  MAX_QUERY_LENGTH,
  MAX_QUERY_NESTING,
  parseQuery,
  QueryError,
  toCondition,
} from "../../../src/streams/riemann/query.js";

/** The where-condition a query translates to, as EDN text. */
const condition = (query: string) => toEdn(toCondition(parseQuery(query)));

/**
 * Riemann's own test shape (test/riemann/query_test.clj, `f`): the query matches every `good`
 * event and no `evil` one.
 */
function holds(query: string, good: readonly Event[], evil: readonly Event[]): void {
  const predicate = compileQuery(query);
  for (const event of good) expect(predicate(event), `${query} on ${JSON.stringify(event)}`).toBe(true);
  for (const event of evil) expect(predicate(event), `${query} on ${JSON.stringify(event)}`).toBe(false);
}

/** The QueryError a query raises. */
function failure(query: string): QueryError {
  try {
    compileQuery(query);
  } catch (error) {
    if (error instanceof QueryError) return error;
    throw error;
  }
  throw new Error(`${query} compiled`);
}

describe("parsing Riemann queries", () => {
  it("reads fields, literals and every operator", () => {
    expect(parseQuery("state = true")).toEqual({
      kind: "compare",
      operator: "=",
      left: { kind: "field", name: "state", position: 0 },
      right: { kind: "literal", value: true, position: 8 },
      position: 6,
    });
    const right = (query: string) => {
      const node = parseQuery(query);
      return node.kind === "compare" ? node.right : undefined;
    };
    expect(right("ttl = 64")).toMatchObject({ value: 64 });
    expect(right("state = -1")).toMatchObject({ value: -1 });
    expect(right("state = 0.0")).toMatchObject({ value: 0 });
    expect(right("state = -1.5")).toMatchObject({ value: -1.5 });
    expect(right("state = 1e5")).toMatchObject({ value: 1e5 });
    expect(right("state = 1E5")).toMatchObject({ value: 1e5 });
    expect(right("state = -1.2e-5")).toMatchObject({ value: -1.2e-5 });
    expect(right("state = 2.5e+3")).toMatchObject({ value: 2500 });
    expect(right('state = ""')).toMatchObject({ value: "" });
    expect(right('state = "\\b\\t\\n\\f\\r"')).toMatchObject({ value: "\b\t\n\f\r" });
    expect(right('state = " \\" \\\\ "')).toMatchObject({ value: ' " \\ ' });
    expect(right('state = "\\u00e9\\/"')).toMatchObject({ value: "é/" });
    expect(right('state = "辻斬"')).toMatchObject({ value: "辻斬" });
    expect(right("state = nil")).toMatchObject({ value: null });
    expect(right("state = null")).toMatchObject({ value: null });
    expect(right("state = false")).toMatchObject({ value: false });
    for (const operator of ["=", "!=", "<", "<=", ">", ">="]) {
      expect(parseQuery(`metric ${operator} 2`)).toMatchObject({ kind: "compare", operator });
    }
    expect(parseQuery('host =~ "%foo%"')).toMatchObject({
      kind: "like",
      subject: { kind: "field", name: "host" },
      pattern: "%foo%",
    });
    expect(parseQuery('host ~= "[a-z]+"')).toMatchObject({ kind: "regex", pattern: "[a-z]+" });
    expect(parseQuery('tagged "cat"')).toEqual({ kind: "tagged", tag: "cat" });
    expect(parseQuery("true")).toEqual({ kind: "value", value: { kind: "literal", value: true, position: 0 } });
    expect(parseQuery("metric")).toEqual({ kind: "value", value: { kind: "field", name: "metric", position: 0 } });
  });

  it("gives not the tightest binding, then and, then or; parentheses group", () => {
    const eq = (name: string, value: number) => ({
      kind: "compare",
      operator: "=",
      left: { kind: "field", name },
      right: { kind: "literal", value },
    });
    expect(parseQuery("(host = 1)")).toMatchObject(eq("host", 1));
    expect(parseQuery("((host = 1))")).toMatchObject(eq("host", 1));
    expect(parseQuery("not host = 1 and host = 2")).toMatchObject({
      kind: "and",
      operands: [{ kind: "not", operand: eq("host", 1) }, eq("host", 2)],
    });
    expect(parseQuery("not host = 1 or host = 2 and host = 3")).toMatchObject({
      kind: "or",
      operands: [
        { kind: "not", operand: eq("host", 1) },
        { kind: "and", operands: [eq("host", 2), eq("host", 3)] },
      ],
    });
    expect(parseQuery("not ((host = 1 or host = 2) and host = 3)")).toMatchObject({
      kind: "not",
      operand: { kind: "and", operands: [{ kind: "or", operands: [eq("host", 1), eq("host", 2)] }, eq("host", 3)] },
    });
    expect(parseQuery("not not host = 1")).toMatchObject({
      kind: "not",
      operand: { kind: "not", operand: eq("host", 1) },
    });
    // Chains are flat, so a long query costs no recursion in the evaluator.
    expect(parseQuery("a = 1 and b = 2 and c = 3")).toMatchObject({ kind: "and", operands: [{}, {}, {}] });
  });

  it("accepts blanks, commas and line breaks between tokens, and none around operators", () => {
    expect(condition("metric>-1")).toBe("[:> :metric -1]");
    expect(condition('host="a",and\n\tservice!="b"')).toBe('[:and [:= :host "a"] [:not= :service "b"]]');
    expect(condition('collectd.plugin = "cpu" or trace-id = "x" or ns:key = 1')).toBe(
      '[:or [:= :collectd.plugin "cpu"] [:= :trace-id "x"] [:= :ns:key 1]]',
    );
  });
});

describe("translating queries to where-conditions", () => {
  it("maps each construct to its condition", () => {
    expect(condition('service = "cpu" and metric > 0.9')).toBe('[:and [:= :service "cpu"] [:> :metric 0.9]]');
    expect(condition('state != "ok"')).toBe('[:not= :state "ok"]');
    expect(condition("metric <= 1")).toBe("[:<= :metric 1]");
    expect(condition("metric_f >= 1 or metric_d < 2 or metric_sint64 = 3")).toBe(
      "[:or [:>= :metric 1] [:< :metric 2] [:= :metric 3]]",
    );
    expect(condition('tagged "prod"')).toBe('[:contains :tags "prod"]');
    expect(condition("description = null")).toBe("[:nil? :description]");
    expect(condition("description != nil")).toBe("[:not-nil? :description]");
    expect(condition("metric")).toBe("[:not-nil? :metric]");
    expect(condition("true")).toBe("[:true]");
    expect(condition("false")).toBe("[:not [:true]]");
    expect(condition("null")).toBe("[:not [:true]]");
    expect(condition('host =~ "web%"')).toBe('[:regex :host "web(?s:.*)"]');
    expect(condition('host =~ "web-1"')).toBe('[:= :host "web-1"]');
    expect(condition('host ~= "web[0-9]+"')).toBe('[:regex :host "(?s:.*)(?:web[0-9]+)(?s:.*)"]');
    expect(condition("not host = 1")).toBe("[:not [:= :host 1]]");
    // A literal on the left: = is symmetric, an ordering is turned around.
    expect(condition('"a" = host')).toBe('[:= :host "a"]');
    expect(condition("1 = 1")).toBe("[:true]");
    expect(condition('1 = "1"')).toBe("[:not [:true]]");
    expect(condition("2 > 1")).toBe("[:true]");
  });

  it("quotes everything but % in a LIKE pattern", () => {
    expect(likePattern("a.b%")).toBe("a\\.b(?s:.*)");
    expect(likePattern("%(x)[y]{2}^$|+*?\\%")).toBe("(?s:.*)\\(x\\)\\[y\\]\\{2\\}\\^\\$\\|\\+\\*\\?\\\\(?s:.*)");
  });
});

describe("evaluating queries (Riemann's query_test.clj)", () => {
  it("truthy literals", () => {
    holds("true", [{ state: "foo" }, {}], []);
    holds("false", [], [{ state: "foo" }, {}]);
    holds("null", [], [{ state: "foo" }, {}]);
    holds("nil", [], [{ state: "foo" }, {}]);
  });

  it("equal and not equal", () => {
    holds('state = "foo"', [{ state: "foo" }], [{ state: "bar" }, {}]);
    holds("state != 1", [{ state: 0.5 }, {}], [{ state: 1 }]);
  });

  it("compares numbers by value and never a string with a number", () => {
    holds("metric = 1", [{ metric: 1 }, { metric: 1.0 }], [{ metric: "1" }, { metric: 1.5 }, {}]);
    holds('metric = "1"', [{ metric: "1" }], [{ metric: 1 }]);
    holds("metric = 1e2", [{ metric: 100 }], [{ metric: 10 }]);
    holds("metric > 1", [{ metric: 2 }], [{ metric: "2" }, { metric: true }, {}]);
  });

  it("wildcard (LIKE)", () => {
    holds('host =~ "%s."', [{ host: "s." }, { host: "foos." }], [{ host: "a." }, { host: "s.murf" }, {}]);
    holds('host =~ "web%"', [{ host: "web" }, { host: "web-1" }, { host: "web\nx" }], [{ host: "aweb" }, { host: 1 }]);
    // Everything but % is literal: . and _ are not wildcards.
    holds('host =~ "a.b_%"', [{ host: "a.b_c" }], [{ host: "axb_c" }, { host: "a.bxc" }]);
    holds('host =~ "%"', [{ host: "" }, { host: "x" }], [{}]);
  });

  it("regular expression search, unanchored", () => {
    holds(
      'host ~= "foo?[1-9]+"',
      [{ host: "foo19" }, { host: "foo1" }, { host: "fo42" }, { host: "x-fo42-y" }],
      [{ host: "abc" }, { host: "foo" }, { host: "fooo42" }, {}],
    );
    holds('host ~= "^web"', [{ host: "web-1" }], [{ host: "a-web" }]);
    holds('host ~= "(?i)WEB$"', [{ host: "a-web" }], [{ host: "web-a" }]);
    holds('description ~= "b"', [{ description: "a\nb\nc" }], [{ description: "a\nc" }]);
    // \Q without \E quotes to the end of the pattern: still a literal search.
    holds('host ~= "\\\\Qa.b"', [{ host: "xa.by" }], [{ host: "axb" }]);
  });

  it("inequalities", () => {
    holds("metric > 1e10", [{ metric: 1e11 }], [{ metric: 1e10 }, {}]);
    holds("metric >= -1", [{ metric: 0 }, { metric: -1 }], [{ metric: -2 }, {}]);
    holds("metric < 1.2e2", [{ metric: 1.5e1 }], [{ metric: 1.2e2 }, {}]);
    holds("metric <= 1", [{ metric: 1 }, { metric: -20 }], [{ metric: 2 }, {}]);
    holds(
      "ttl > 60 and time < 100",
      [{ ttl: 61, time: 99 }],
      [
        { ttl: 60, time: 99 },
        { ttl: 61, time: 100 },
      ],
    );
  });

  it("tagged", () => {
    holds('tagged "cat"', [{ tags: ["cat", "dog"] }, { tags: ["cat"] }], [{ tags: ["dog"] }, {}, { tags: "cat" }]);
  });

  it("null", () => {
    holds(
      "time = null and description != nil",
      [{ time: null, description: true }, { description: "hey" }],
      [{ time: 2, description: true }, { description: null }, {}],
    );
  });

  it("boolean operators", () => {
    holds("not ((host = 1 or host = 2) and service = 3)", [{ host: 1 }, { service: 3 }, {}], [{ host: 2, service: 3 }]);
  });

  it("custom fields", () => {
    holds(
      'paws = 4 and tagged "catz"',
      [{ paws: 4, time: 2, tags: ["fuzzy", "catz"] }],
      [
        { paws: 4, time: 2, tags: ["fuzzy"] },
        { paws: 4, time: 2, tags: [] },
        { paws: 4, time: 2 },
        { paws: 3, time: 2, tags: ["fuzzy", "catz"] },
        { paws: null, time: 2, tags: ["fuzzy", "catz"] },
        { time: 2, tags: ["fuzzy", "catz"] },
      ],
    );
  });

  it("a bare field is true when present, a metric of 0 included", () => {
    holds("metric", [{ metric: 0 }, { metric: 5 }, { metric: "x" }], [{}, { metric: null }]);
    holds("metric_f and host", [{ metric: 0, host: "a" }], [{ metric: 0 }, { host: "a" }]);
  });

  it("reads metric_f, metric_d and metric_sint64 as metric", () => {
    holds("metric_f > 0.5", [{ metric: 0.75 }], [{ metric: 0.25 }, { metric_f: 0.75 }]);
    holds("metric_sint64 = 3", [{ metric: 3 }], [{ metric: 4 }]);
    holds("metric_d <= 2", [{ metric: 2 }], [{ metric: 3 }]);
  });

  it("is fast enough for a hot index (Riemann's `fast` test: 1 000 events well under 50 ms)", () => {
    const predicate = compileQuery('host =~ "api %" and state = "ok" and metric > 0');
    const events: Event[] = [
      { host: "api 1", state: "ok", metric: 1.2 },
      { host: "other", state: "ok", metric: 1.2 },
      { host: "api 2", state: "no", metric: 1.2 },
      { host: "api 3", state: "ok", metric: 0.5 },
      {},
    ];
    const started = performance.now();
    let matched = 0;
    for (let i = 0; i < 1000; i++) if (predicate(events[i % events.length] as Event)) matched++;
    expect(matched).toBe(400);
    expect(performance.now() - started).toBeLessThan(50);
  });
});

describe("invalid queries", () => {
  it("name the offset of the problem", () => {
    const cases: Array<[string, number, string]> = [
      ["", 0, "expected a condition, a field name or a value, found end of query"],
      ["host =", 6, "expected a condition, a field name or a value, found end of query"],
      ['host = "abc', 7, "unterminated string"],
      ['metric > "a"', 9, 'expected a number after ">", found string "a"'],
      ["metric < host", 9, 'expected a number after "<", found field host'],
      ["(host = 1", 9, 'expected "and", "or" or ")", found end of query'],
      ["host = 1)", 8, 'expected "and", "or" or end of query, found ")"'],
      ["host = 1 host = 2", 9, 'expected "and", "or" or end of query, found field host'],
      ["host @ 1", 5, 'unexpected character "@"'],
      ["host = 'a'", 7, 'unexpected character "\'"'],
      ["tagged cat", 7, 'expected a string after "tagged", found field cat'],
      ["host = 1 and", 12, "expected a condition, a field name or a value, found end of query"],
      ["host = 1 or or", 12, 'expected a condition, a field name or a value, found "or"'],
      ["host =~ 5", 8, 'expected a string after "=~", found number 5'],
      ["host ~= nil", 8, 'expected a string after "~=", found "nil"'],
      ['host = "a\\qb"', 9, 'invalid escape "\\\\q" in a string'],
      ['host = "\\u12"', 8, "\\u must be followed by four hexadecimal digits"],
      ["metric = 1abc", 9, 'invalid number "1a"'],
      ["metric = 1.", 9, 'invalid number "1."'],
      ["not", 3, "expected a condition, a field name or a value, found end of query"],
      ["host = service", 5, "comparing two fields (host = service) is not supported: compare a field with a value"],
    ];
    for (const [query, offset, reason] of cases) {
      const error = failure(query);
      expect({ query, offset: error.offset, reason: error.reason }).toEqual({ query, offset, reason });
      expect(error.message).toBe(`invalid query at offset ${offset}: ${reason}`);
    }
  });

  it("refuse regular expressions RE2 cannot run, at the pattern's offset", () => {
    const backreference = failure('host ~= "(a)\\\\1"');
    expect(backreference.offset).toBe(8);
    expect(backreference.reason).toMatch(/invalid regular expression "\(a\)\\\\1": .*RE2 syntax/);
    expect(failure('host ~= "(a"').offset).toBe(8);
    expect(failure('host ~= "a)|(b"').offset).toBe(8);
    expect(failure('host ~= "(?=a)"').reason).toMatch(/no backreferences or lookaround/);
  });

  it("are bounded in length and nesting", () => {
    expect(failure(`host = "${"x".repeat(MAX_QUERY_LENGTH)}"`)).toMatchObject({ offset: MAX_QUERY_LENGTH });
    const deep = `${"(".repeat(MAX_QUERY_NESTING + 1)}true${")".repeat(MAX_QUERY_NESTING + 1)}`;
    expect(failure(deep)).toMatchObject({ offset: MAX_QUERY_NESTING });
    expect(failure(`${"not ".repeat(MAX_QUERY_NESTING + 1)}true`).reason).toMatch(/nest deeper than 64 levels/);
    const shallow = `${"(".repeat(MAX_QUERY_NESTING)}true${")".repeat(MAX_QUERY_NESTING)}`;
    expect(compileQuery(shallow)({})).toBe(true);
    // A long flat chain is fine: it nests nothing.
    const chain = Array.from({ length: 2000 }, (_, i) => `host = "h${i}"`).join(" or ");
    expect(compileQuery(chain)({ host: "h1999" })).toBe(true);
  });
});
