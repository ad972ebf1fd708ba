/**
 * What the route fuzzing sends (docs/security.md): malformed path segments, wrong types,
 * huge numbers, overlong and invalid strings, deep nesting, invalid UTF-8, truncated bodies and
 * wrong media types, built with fast-check.
 */
import fc from "fast-check";

/** A request body as sent: the bytes or text, and the headers that go with it. */
export interface Payload {
  readonly body?: string | Buffer;
  readonly headers: Record<string, string>;
}

/** `text` percent-encoded byte by byte (unlike encodeURIComponent, lone surrogates included). */
export function percentEncoded(text: string): string {
  return [...Buffer.from(text, "utf8")].map((byte) => `%${byte.toString(16).padStart(2, "0")}`).join("");
}

/** A path segment, percent-encoded as it goes into the URL (or deliberately not). */
export function segment(plausible: readonly string[] = []): fc.Arbitrary<string> {
  return fc
    .oneof(
      { weight: 6, arbitrary: fc.constantFrom(...plausible, "x", "default", "a.b-c_d", "0", "-") },
      { weight: 2, arbitrary: fc.string({ minLength: 1, maxLength: 30, unit: "grapheme" }).map(encodeURIComponent) },
      { weight: 1, arbitrary: fc.string({ minLength: 1, maxLength: 30, unit: "binary" }).map(percentEncoded) },
      // Overlong: past every name rule, and past the router's limit of path segments (414).
      { weight: 1, arbitrary: fc.constantFrom("a".repeat(129), "a".repeat(256), "b".repeat(1025), "é".repeat(300)) },
      // Invalid percent-encodings and invalid UTF-8.
      {
        weight: 1,
        arbitrary: fc.constantFrom("%ff", "%fe%ff", "%", "%zz", "%00", "%2e%2e", "..", "%C0%AF", "%ED%A0%80"),
      },
    )
    .filter((text) => text !== "");
}

/** Numbers that break naive code: beyond 2^53, tiny, negative zero, the largest doubles. */
export const hugeNumber: fc.Arbitrary<number> = fc.constantFrom(
  2 ** 53 + 2,
  -(2 ** 63),
  1e308,
  -1e308,
  5e-324,
  -0,
  4_294_967_297,
  Number.MAX_SAFE_INTEGER,
);

/** Strings that break naive code: empty, overlong, NUL and control characters, paths, markup, lone surrogates. */
export const weirdString: fc.Arbitrary<string> = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.string({ maxLength: 20, unit: "binary" }),
  fc.constantFrom(
    "",
    " ",
    "\u0000",
    "a\u0000b",
    "\r\n",
    "x".repeat(70_000),
    "../../../../etc/passwd",
    "/dev/zero",
    "<script>alert(1)</script>",
    "\ud800",
    "%s%n",
    "<redacted>",
    "1e999",
  ),
);

/** A value of any JSON type, wrong for most fields. */
export const wrongValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer(),
  hugeNumber,
  weirdString,
  fc.jsonValue({ maxDepth: 2 }),
  fc.array(fc.jsonValue({ maxDepth: 1 }), { maxLength: 3 }),
);

/** JSON text nested `levels` deep, as text (stringifying it would exhaust the test's own stack). */
export function deepJson(levels: number, kind: "array" | "object"): string {
  return kind === "array"
    ? `${"[".repeat(levels)}${"]".repeat(levels)}`
    : `${'{"a":'.repeat(levels)}1${"}".repeat(levels)}`;
}

/**
 * Variations of a valid JSON object: fields replaced by wrong values (or by values of `safe` for
 * the fields it names), removed, or added.
 * @param safe for fields whose values must stay harmless (healthcheck targets and timeouts: the
 *   fuzz sends traffic to loopback only and never waits long), the values they may take
 */
export function mutated(
  skeleton: Record<string, unknown>,
  safe: Readonly<Record<string, fc.Arbitrary<unknown>>> = {},
): fc.Arbitrary<Record<string, unknown>> {
  const keys = Object.keys(skeleton);
  const replacement = (key: string) => safe[key] ?? wrongValue;
  return fc
    .tuple(
      fc.subarray(keys),
      fc.subarray(keys, { maxLength: Math.min(2, keys.length) }),
      fc.dictionary(fc.string({ maxLength: 8 }), wrongValue, { maxKeys: 2 }),
    )
    .chain(([replaced, removed, added]) =>
      fc.tuple(...replaced.map((key) => replacement(key).map((value) => [key, value] as const))).map((replacements) => {
        const result: Record<string, unknown> = { ...skeleton, ...added };
        for (const [key, value] of replacements) result[key] = value;
        for (const key of removed) delete result[key];
        return result;
      }),
    );
}

const JSON_TYPES = ["application/json", "application/json; charset=utf-8", "APPLICATION/JSON"];
const OTHER_TYPES = [
  "text/plain",
  "application/x-www-form-urlencoded",
  "multipart/form-data; boundary=x",
  "application/x-protobuf",
  "application/octet-stream",
  "application/json; charset=latin1",
  "garbage",
];

/** Bodies around valid JSON objects of `objects`: as they are, truncated, in a wrong media type. */
export function jsonPayload(objects: fc.Arbitrary<unknown>): fc.Arbitrary<Payload> {
  return fc.oneof(
    {
      weight: 6,
      arbitrary: fc.tuple(objects, fc.constantFrom(...JSON_TYPES)).map(([value, type]) => json(value, type)),
    },
    {
      weight: 1,
      arbitrary: fc.tuple(objects, fc.nat()).map(([value, cut]) => {
        const text = JSON.stringify(value) ?? "";
        return { body: text.slice(0, cut % Math.max(1, text.length)), headers: { "content-type": "application/json" } };
      }),
    },
    {
      weight: 1,
      arbitrary: fc.tuple(objects, fc.constantFrom(...OTHER_TYPES)).map(([value, type]) => json(value, type)),
    },
    { weight: 1, arbitrary: anyPayload },
  );
}

function json(value: unknown, type: string): Payload {
  return { body: JSON.stringify(value) ?? "null", headers: { "content-type": type } };
}

/** Bodies of no use to any route: random bytes, deep nesting, huge numbers, lies about the length. */
export const anyPayload: fc.Arbitrary<Payload> = fc.oneof(
  fc.constant({ headers: {} }),
  fc.constant({ body: "", headers: { "content-type": "application/json" } }),
  fc
    .tuple(fc.uint8Array({ maxLength: 200 }), fc.constantFrom(...JSON_TYPES, ...OTHER_TYPES))
    .map(([bytes, type]) => ({ body: Buffer.from(bytes), headers: { "content-type": type } })),
  // Invalid UTF-8 inside otherwise valid JSON.
  fc.constant({
    body: Buffer.concat([Buffer.from('{"name": "'), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from('"}')]),
    headers: { "content-type": "application/json" },
  }),
  fc
    .tuple(fc.integer({ min: 64, max: 20_000 }), fc.constantFrom("array", "object") as fc.Arbitrary<"array" | "object">)
    .map(([levels, kind]) => ({ body: deepJson(levels, kind), headers: { "content-type": "application/json" } })),
  fc.constantFrom('{"a": 1e999}', "[1e400, -1e400]", '{"n": 123456789012345678901234567890}', "-0").map((body) => ({
    body,
    headers: { "content-type": "application/json" },
  })),
  // A Content-Length longer than the body: the body ends early.
  fc.constant({ body: '{"a": 1}', headers: { "content-type": "application/json", "content-length": "400" } }),
  fc.jsonValue({ maxDepth: 3 }).map((value) => json(value, "application/json")),
);

/** EDN text: random data, random action trees, and garbage. */
export const ednText: fc.Arbitrary<string> = (() => {
  const keyword = fc.oneof(
    fc.constantFrom(
      ":action",
      ":params",
      ":children",
      ":default",
      ":persist",
      ":actions",
      ":where",
      ":by",
      ":sdo",
      ":index",
      ":reinject",
      ":fixed-time-window",
      ":coll-count",
      ":rate",
      ":regex",
      ":and",
      ":not",
      ":>",
      ":=",
      ":host",
      ":metric",
      ":duration",
      ":fields",
      ":tap",
      ":info",
      ":reaper",
    ),
    fc
      .string({ minLength: 1, maxLength: 8, unit: "grapheme-ascii" })
      .map((name) => `:${name.replace(/[\s()[\]{}";,]/g, "")}`),
  );
  const atom = fc.oneof(
    keyword,
    fc.integer().map(String),
    fc.double({ noNaN: true, noDefaultInfinity: true }).map(String),
    fc.string({ maxLength: 10 }).map((text) => JSON.stringify(text)),
    fc.constantFrom("nil", "true", "false", "1N", '#inst "2026-01-01T00:00:00Z"', '#"a+"', "\\a", "sym", "#_ 1 2"),
  );
  const { value } = fc.letrec<{ value: string }>((tie) => ({
    value: fc.oneof(
      { depthSize: "small", withCrossShrink: true },
      atom,
      fc.array(tie("value"), { maxLength: 4 }).map((items) => `[${items.join(" ")}]`),
      fc.array(tie("value"), { maxLength: 4 }).map((items) => `(${items.join(" ")})`),
      fc
        .array(fc.tuple(keyword, tie("value")), { maxLength: 4 })
        .map((pairs) => `{${pairs.map((pair) => pair.join(" ")).join(" ")}}`),
    ),
  }));
  const node = fc
    .tuple(keyword, fc.array(value, { maxLength: 3 }), fc.array(value, { maxLength: 2 }))
    .map(
      ([action, params, children]) =>
        `{:action ${action} :params [${params.join(" ")}] :children [${children.join(" ")}]}`,
    );
  return fc.oneof(
    value,
    node.map((actions) => `{:actions ${actions}}`),
    node.map((actions) => `{:actions ${actions} :default true}`),
    fc.string({ maxLength: 40 }),
    fc.integer({ min: 100, max: 10_000 }).map((levels) => `${"[".repeat(levels)}${"]".repeat(levels)}`),
    fc.constantFrom(
      "{:a}",
      "]",
      "{:a 1} 2",
      "[1 2",
      "#",
      "\\",
      '"unterminated',
      '{:actions {:action :where :params [[:regex :host "(a)\\\\1"]]}}',
    ),
  );
})();

/** Base64 of EDN text, or something that is not base64 of UTF-8. */
export const base64Edn: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 5, arbitrary: ednText.map((text) => Buffer.from(text, "utf8").toString("base64")) },
  { weight: 1, arbitrary: fc.constantFrom("", "!!!", "====", Buffer.from([0xff, 0xfe]).toString("base64")) },
  { weight: 1, arbitrary: wrongValue },
);
