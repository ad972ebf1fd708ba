/**
 * Riemann's query language (docs/streams.md), as Riemann clients send it in `Msg.query.string`:
 * `service = "cpu" and metric > 0.9`, `host =~ "web%"`, `tagged "prod"`, `not state = "ok"`.
 * The constructs and their meaning follow Riemann's own grammar (riemann/riemann
 * `resources/query.g4`) and tests (`test/riemann/query_test.clj`). The text is parsed by a small
 * recursive-descent parser into a {@link QueryNode} tree, which is then translated into a
 * where-condition (docs/streams.md) and compiled with {@link compileCondition}, so a query and an
 * index search over HTTP share one evaluator.
 *
 * Grammar (`not` binds tightest, then `and`, then `or`; keywords are lower case):
 *
 * ```
 * query    := or END
 * or       := and ("or" and)*
 * and      := unary ("and" unary)*
 * unary    := "not" unary | primary
 * primary  := "(" or ")" | "tagged" STRING | simple
 * simple   := value ( ("=" | "!=") value
 *                   | ("<" | "<=" | ">" | ">=") NUMBER
 *                   | ("=~" | "~=") STRING )?
 * value    := "true" | "false" | "nil" | "null" | NUMBER | STRING | NAME
 *
 * NAME     := (letter | "_") (letter | digit | "_" | "-" | "." | ":")*, other than a keyword
 * NUMBER   := "-"? digit+ ("." digit+)? (("e" | "E") ("+" | "-")? digit+)?
 * STRING   := '"' (any character but '"' and '\' | '\' ('"' | '\' | "/" | "b" | "t" | "n" | "f"
 *             | "r" | "u" hex hex hex hex))* '"'
 * blanks   := space, tab, line breaks and "," between tokens (Riemann's lexer treats "," as blank)
 * ```
 *
 * Meaning: `=`/`!=` compare values (strings never equal numbers; numbers by value, 1 = 1.0;
 * `= null` is true when the field is missing); `< <= > >=` are true only for numeric fields; `=~`
 * is SQL's LIKE (`%` any run of characters, everything else literal, the whole value); `~=` is a
 * regular-expression search anywhere in the value, RE2 syntax (linear time, docs/configuration.md);
 * `tagged "x"` is true when `tags` holds "x"; a lone field name is true when the field is present
 * (a metric of 0 included); a lone literal is true unless it is `false` or `null`. `metric_f`,
 * `metric_d` and `metric_sint64` read `metric`, where Vigie keeps whichever the client sent.
 */
import { compileLinearRegex, type LinearRegex, RegexError } from "../../platform/regex.js";
import { compileCondition, type Predicate } from "../condition.js";
import type { EdnValue } from "../edn.js";
import { keyword } from "../edn.js";
import { valuesEqual } from "../event.js";

/** Longest query text accepted, in UTF-16 code units (a query is a line, not a document). */
export const MAX_QUERY_LENGTH = 65_536;

/** How deeply parentheses and `not` may nest; deeper queries are refused before recursing further. */
export const MAX_QUERY_NESTING = 64;

/**
 * A query that cannot be run: a syntax error, a construct Vigie cannot evaluate (two fields
 * compared) or a regular expression RE2 refuses. `offset` is where the problem starts, in UTF-16
 * code units from 0 (as Java and JavaScript count string indices).
 */
export class QueryError extends Error {
  constructor(
    readonly offset: number,
    readonly reason: string,
  ) {
    super(`invalid query at offset ${offset}: ${reason}`);
    this.name = "QueryError";
  }
}

/** A scalar of the language: a string, a number, `true`/`false`, or `null` (also written `nil`). */
export type Literal = string | number | boolean | null;

/** An operand: a field of the event, or a literal. `position` is its offset in the text. */
export type QueryValue =
  | { readonly kind: "field"; readonly name: string; readonly position: number }
  | { readonly kind: "literal"; readonly value: Literal; readonly position: number };

/** The operators of `simple` that take any value on the right, or a number for the orderings. */
export type ComparisonOperator = "=" | "!=" | "<" | "<=" | ">" | ">=";

/** A parsed query (see the grammar of this module). `position` is an offset in the text. */
export type QueryNode =
  | { readonly kind: "or"; readonly operands: readonly QueryNode[] }
  | { readonly kind: "and"; readonly operands: readonly QueryNode[] }
  | { readonly kind: "not"; readonly operand: QueryNode }
  | { readonly kind: "tagged"; readonly tag: string }
  | {
      readonly kind: "compare";
      readonly operator: ComparisonOperator;
      readonly left: QueryValue;
      readonly right: QueryValue;
      readonly position: number;
    }
  /** `subject =~ pattern`: SQL LIKE over the whole value. */
  | { readonly kind: "like"; readonly subject: QueryValue; readonly pattern: string; readonly position: number }
  /** `subject ~= pattern`: regular-expression search anywhere in the value. */
  | { readonly kind: "regex"; readonly subject: QueryValue; readonly pattern: string; readonly position: number }
  /** A lone value: a field (true when present) or a literal (true unless false or null). */
  | { readonly kind: "value"; readonly value: QueryValue };

// ---------------------------------------------------------------------------------------------
// Lexer

const KEYWORDS = ["and", "or", "not", "tagged", "true", "false", "nil", "null"] as const;
type Keyword = (typeof KEYWORDS)[number];
const OPERATORS = ["=", "!=", "<", "<=", ">", ">=", "=~", "~="] as const;
type Operator = (typeof OPERATORS)[number];

type Token =
  | { readonly kind: "name"; readonly name: string; readonly start: number }
  | { readonly kind: "keyword"; readonly word: Keyword; readonly start: number }
  | { readonly kind: "string"; readonly value: string; readonly start: number }
  | { readonly kind: "number"; readonly value: number; readonly start: number }
  | { readonly kind: "operator"; readonly operator: Operator; readonly start: number }
  | { readonly kind: "open" | "close" | "end"; readonly start: number };

function isKeyword(word: string): word is Keyword {
  return KEYWORDS.some((keyword) => keyword === word);
}

const BLANK = /[ \t\r\n,]/;
const NAME_START = /[\p{L}_]/u;
const NAME_REST = /[\p{L}\p{N}_.:-]/u;
const DIGIT = /[0-9]/;
const NUMBER = /-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
const ESCAPES: Readonly<Record<string, string>> = {
  '"': '"',
  "\\": "\\",
  "/": "/",
  b: "\b",
  t: "\t",
  n: "\n",
  f: "\f",
  r: "\r",
};

/** Splits the text into tokens, the last one `end`. @throws QueryError on a character no token starts with */
function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const char = text.charAt(i);
    const next = text[i + 1];
    if (BLANK.test(char)) {
      i++;
    } else if (char === "(" || char === ")") {
      tokens.push({ kind: char === "(" ? "open" : "close", start: i });
      i++;
    } else if (char === '"') {
      i = readString(text, i, tokens);
    } else if (DIGIT.test(char) || (char === "-" && next !== undefined && DIGIT.test(next))) {
      NUMBER.lastIndex = i;
      // Never null: the first character is a digit, or "-" and a digit.
      const digits = NUMBER.exec(text)?.[0] ?? char;
      const end = i + digits.length;
      if (end < text.length && NAME_REST.test(text.charAt(end))) {
        throw new QueryError(i, `invalid number ${JSON.stringify(text.slice(i, end + 1))}`);
      }
      tokens.push({ kind: "number", value: Number(digits), start: i });
      i = end;
    } else if (NAME_START.test(char)) {
      let end = i + 1;
      while (end < text.length && NAME_REST.test(text.charAt(end))) end++;
      const word = text.slice(i, end);
      tokens.push(isKeyword(word) ? { kind: "keyword", word, start: i } : { kind: "name", name: word, start: i });
      i = end;
    } else {
      const two = text.slice(i, i + 2);
      const operator = OPERATORS.find((candidate) => candidate === two) ?? OPERATORS.find((c) => c === char);
      if (operator === undefined) throw new QueryError(i, `unexpected character ${JSON.stringify(char)}`);
      tokens.push({ kind: "operator", operator, start: i });
      i += operator.length;
    }
  }
  tokens.push({ kind: "end", start: text.length });
  return tokens;
}

/** Reads the string literal starting at `start` into `tokens`; returns the offset after it. */
function readString(text: string, start: number, tokens: Token[]): number {
  let value = "";
  let i = start + 1;
  for (;;) {
    // Copy the run up to the next quote or backslash in one slice.
    let end = i;
    while (end < text.length && text[end] !== '"' && text[end] !== "\\") end++;
    value += text.slice(i, end);
    if (end >= text.length) throw new QueryError(start, "unterminated string");
    if (text[end] === '"') {
      tokens.push({ kind: "string", value, start });
      return end + 1;
    }
    const escaped = text[end + 1];
    if (escaped === "u") {
      const hex = text.slice(end + 2, end + 6);
      if (!/^[0-9a-fA-F]{4}$/.test(hex)) throw new QueryError(end, "\\u must be followed by four hexadecimal digits");
      value += String.fromCharCode(Number.parseInt(hex, 16));
      i = end + 6;
    } else {
      const replacement = escaped === undefined ? undefined : ESCAPES[escaped];
      if (replacement === undefined) {
        throw new QueryError(end, `invalid escape ${JSON.stringify(`\\${escaped ?? ""}`)} in a string`);
      }
      value += replacement;
      i = end + 2;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Parser

function describeToken(token: Token): string {
  switch (token.kind) {
    case "name":
      return `field ${token.name}`;
    case "keyword":
      return `"${token.word}"`;
    case "string":
      return `string ${JSON.stringify(token.value)}`;
    case "number":
      return `number ${token.value}`;
    case "operator":
      return `"${token.operator}"`;
    case "open":
      return '"("';
    case "close":
      return '")"';
    case "end":
      return "end of query";
  }
}

/** The only node of a list of one, else `undefined`. */
function single(nodes: readonly QueryNode[]): QueryNode | undefined {
  const [first] = nodes;
  return nodes.length === 1 ? first : undefined;
}

class Parser {
  #index = 0;
  #depth = 0;
  /** The last token, `end`. */
  readonly #end: Token;

  constructor(readonly tokens: readonly Token[]) {
    this.#end = tokens.at(-1) ?? { kind: "end", start: 0 };
  }

  get #token(): Token {
    // The last token is `end` and the parser never moves past it.
    return this.tokens[this.#index] ?? this.#end;
  }

  #fail(expected: string): never {
    const token = this.#token;
    throw new QueryError(token.start, `expected ${expected}, found ${describeToken(token)}`);
  }

  #isKeyword(word: Keyword): boolean {
    const token = this.#token;
    return token.kind === "keyword" && token.word === word;
  }

  query(): QueryNode {
    const node = this.#or();
    if (this.#token.kind !== "end") this.#fail('"and", "or" or end of query');
    return node;
  }

  #or(): QueryNode {
    return this.#joined("or", () => this.#and());
  }

  #and(): QueryNode {
    return this.#joined("and", () => this.#unary());
  }

  /** One or more operands joined by the keyword `word`; a single operand is returned as it is. */
  #joined(word: "or" | "and", operand: () => QueryNode): QueryNode {
    const operands = [operand()];
    while (this.#isKeyword(word)) {
      this.#index++;
      operands.push(operand());
    }
    return single(operands) ?? { kind: word, operands };
  }

  #unary(): QueryNode {
    if (!this.#isKeyword("not")) return this.#primary();
    this.#enter();
    this.#index++;
    const operand = this.#unary();
    this.#depth--;
    return { kind: "not", operand };
  }

  #enter(): void {
    this.#depth++;
    if (this.#depth > MAX_QUERY_NESTING) {
      throw new QueryError(this.#token.start, `parentheses and "not" nest deeper than ${MAX_QUERY_NESTING} levels`);
    }
  }

  #primary(): QueryNode {
    const token = this.#token;
    if (token.kind === "open") {
      this.#enter();
      this.#index++;
      const node = this.#or();
      if (this.#token.kind !== "close") this.#fail('"and", "or" or ")"');
      this.#index++;
      this.#depth--;
      return node;
    }
    if (token.kind === "keyword" && token.word === "tagged") {
      this.#index++;
      const tag = this.#token;
      if (tag.kind !== "string") this.#fail('a string after "tagged"');
      this.#index++;
      return { kind: "tagged", tag: tag.value };
    }
    return this.#simple();
  }

  #simple(): QueryNode {
    const left = this.#value();
    const token = this.#token;
    if (token.kind !== "operator") return { kind: "value", value: left };
    this.#index++;
    const operator = token.operator;
    switch (operator) {
      case "=":
      case "!=":
        return { kind: "compare", operator, left, right: this.#value(), position: token.start };
      case "<":
      case "<=":
      case ">":
      case ">=": {
        const right = this.#token;
        if (right.kind !== "number") this.#fail(`a number after "${operator}"`);
        this.#index++;
        const value: QueryValue = { kind: "literal", value: right.value, position: right.start };
        return { kind: "compare", operator, left, right: value, position: token.start };
      }
      case "=~":
      case "~=": {
        const pattern = this.#token;
        if (pattern.kind !== "string") this.#fail(`a string after "${operator}"`);
        this.#index++;
        const kind = operator === "=~" ? "like" : "regex";
        return { kind, subject: left, pattern: pattern.value, position: pattern.start };
      }
    }
  }

  #value(): QueryValue {
    const token = this.#token;
    switch (token.kind) {
      case "name":
        this.#index++;
        return { kind: "field", name: token.name, position: token.start };
      case "string":
      case "number":
        this.#index++;
        return { kind: "literal", value: token.value, position: token.start };
      case "keyword": {
        const literal = KEYWORD_LITERALS.get(token.word);
        if (literal === undefined) break;
        this.#index++;
        return { kind: "literal", value: literal.value, position: token.start };
      }
      case "operator":
      case "open":
      case "close":
      case "end":
        break;
    }
    return this.#fail("a condition, a field name or a value");
  }
}

const KEYWORD_LITERALS: ReadonlyMap<Keyword, { value: Literal }> = new Map([
  ["true", { value: true }],
  ["false", { value: false }],
  ["nil", { value: null }],
  ["null", { value: null }],
]);

/**
 * Parses a query into its tree.
 * @throws QueryError with the offset of the problem: a syntax error, a query longer than
 *   {@link MAX_QUERY_LENGTH} or nested deeper than {@link MAX_QUERY_NESTING}
 */
export function parseQuery(text: string): QueryNode {
  if (text.length > MAX_QUERY_LENGTH) {
    throw new QueryError(MAX_QUERY_LENGTH, `the query is longer than ${MAX_QUERY_LENGTH} characters`);
  }
  return new Parser(tokenize(text)).query();
}

// ---------------------------------------------------------------------------------------------
// Translation to a where-condition

const TRUE: EdnValue = [keyword("true")];
const FALSE: EdnValue = [keyword("not"), TRUE];
const constant = (value: boolean): EdnValue => (value ? TRUE : FALSE);

/** The three metric fields of the protocol are one field in Vigie's events. */
function fieldKeyword(name: string): EdnValue {
  return keyword(name === "metric_f" || name === "metric_d" || name === "metric_sint64" ? "metric" : name);
}

/** Whether a literal used as a condition holds: everything but `false` and `null` (Clojure truth). */
function truthy(value: Literal): boolean {
  return value !== false && value !== null;
}

/** Characters with a meaning in RE2 syntax, escaped to stand for themselves. */
const REGEX_SPECIAL = /[\\.+*?()|[\]{}^$]/g;

/** A LIKE pattern as an RE2 pattern over the whole value: `%` any run, everything else literal. */
export function likePattern(pattern: string): string {
  return pattern
    .split("%")
    .map((part) => part.replace(REGEX_SPECIAL, "\\$&"))
    .join("(?s:.*)");
}

/**
 * Compiles a user pattern, refusing what RE2 cannot run.
 * @throws QueryError at `position`
 */
function linearRegex(pattern: string, position: number): LinearRegex {
  try {
    return compileLinearRegex(pattern);
  } catch (error) {
    if (!(error instanceof RegexError)) throw error;
    throw new QueryError(
      position,
      `invalid regular expression ${JSON.stringify(pattern)}: ${error.message} (RE2 syntax, which runs in linear time: no backreferences or lookaround)`,
    );
  }
}

/**
 * The whole-value pattern that finds `pattern` anywhere in a value, for `:regex` (which anchors).
 * The pattern compiled alone first, so its parentheses balance and the group cannot be escaped.
 * @throws QueryError at `position` when RE2 refuses the pattern
 */
function searchPattern(pattern: string, position: number): string {
  linearRegex(pattern, position);
  const wrapped = `(?s:.*)(?:${pattern})(?s:.*)`;
  try {
    compileLinearRegex(wrapped);
    return wrapped;
  } catch {
    // A `\Q` without its `\E` quotes to the end of the pattern, wrapping included: close it.
    const closed = `(?s:.*)(?:${pattern}\\E)(?s:.*)`;
    linearRegex(closed, position);
    return closed;
  }
}

/**
 * Translates a query tree into a where-condition (docs/streams.md), as EDN data.
 * @throws QueryError for two fields compared with each other (a where-condition compares a field
 *   with a constant) and for a regular expression RE2 refuses
 */
export function toCondition(node: QueryNode): EdnValue {
  switch (node.kind) {
    case "or":
    case "and":
      return [keyword(node.kind), ...node.operands.map(toCondition)];
    case "not":
      return [keyword("not"), toCondition(node.operand)];
    case "tagged":
      return [keyword("contains"), keyword("tags"), node.tag];
    case "value":
      return node.value.kind === "field"
        ? [keyword("not-nil?"), fieldKeyword(node.value.name)]
        : constant(truthy(node.value.value));
    case "compare":
      return comparison(node.operator, node.left, node.right, node.position);
    case "like": {
      if (node.subject.kind === "literal") {
        const value = node.subject.value;
        const regex = linearRegex(likePattern(node.pattern), node.position);
        return constant(typeof value === "string" && regex.testWhole(value));
      }
      const field = fieldKeyword(node.subject.name);
      if (!node.pattern.includes("%")) return [keyword("="), field, node.pattern];
      const pattern = likePattern(node.pattern);
      linearRegex(pattern, node.position); // a lone surrogate from \uD800 is the only way to fail
      return [keyword("regex"), field, pattern];
    }
    case "regex": {
      if (node.subject.kind === "literal") {
        const value = node.subject.value;
        return constant(typeof value === "string" && linearRegex(node.pattern, node.position).test(value));
      }
      return [keyword("regex"), fieldKeyword(node.subject.name), searchPattern(node.pattern, node.position)];
    }
  }
}

const ORDERINGS: Readonly<Record<ComparisonOperator, (a: Literal, b: Literal) => boolean>> = {
  "=": (a, b) => valuesEqual(a, b),
  "!=": (a, b) => !valuesEqual(a, b),
  // Only numbers are ordered: anything else never compares (Riemann checks `number?` on both sides).
  "<": (a, b) => typeof a === "number" && typeof b === "number" && a < b,
  "<=": (a, b) => typeof a === "number" && typeof b === "number" && a <= b,
  ">": (a, b) => typeof a === "number" && typeof b === "number" && a > b,
  ">=": (a, b) => typeof a === "number" && typeof b === "number" && a >= b,
};

/** The operator with its operands swapped: `5 < metric` is `metric > 5`. */
const SWAPPED: Readonly<Record<ComparisonOperator, ComparisonOperator>> = {
  "=": "=",
  "!=": "!=",
  "<": ">",
  "<=": ">=",
  ">": "<",
  ">=": "<=",
};

function comparison(operator: ComparisonOperator, left: QueryValue, right: QueryValue, position: number): EdnValue {
  if (left.kind === "field") {
    if (right.kind === "field") {
      throw new QueryError(
        position,
        `comparing two fields (${left.name} ${operator} ${right.name}) is not supported: compare a field with a value`,
      );
    }
    return fieldComparison(operator, left.name, right.value);
  }
  if (right.kind === "field") return fieldComparison(SWAPPED[operator], right.name, left.value);
  return constant(ORDERINGS[operator](left.value, right.value));
}

/** `field operator value` as a where-condition. */
function fieldComparison(operator: ComparisonOperator, field: string, value: Literal): EdnValue {
  const name = fieldKeyword(field);
  switch (operator) {
    case "=":
      return value === null ? [keyword("nil?"), name] : [keyword("="), name, value];
    case "!=":
      return value === null ? [keyword("not-nil?"), name] : [keyword("not="), name, value];
    case "<":
    case "<=":
    case ">":
    case ">=":
      return typeof value === "number" ? [keyword(operator), name, value] : FALSE;
  }
}

/**
 * Parses, translates and compiles a query into a predicate over events.
 * @throws QueryError with the offset of the problem (see {@link parseQuery} and {@link toCondition})
 */
export function compileQuery(text: string): Predicate {
  return compileCondition(toCondition(parseQuery(text)), "query");
}
