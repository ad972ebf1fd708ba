/**
 * Bounded answers of index searches (HTTP) and queries (Riemann): at most `max-query-results`
 * events and `max-query-bytes` bytes per answer, beyond which the answer is an error naming the
 * setting, and never a long hold of the event loop: the indexes are searched, and the answer
 * serialised, a slice of work per turn of the event loop (slices.ts).
 */
import { matchWithin, type Predicate, RegexAllowanceError } from "./condition.js";
import { type Event, timeOf } from "./event.js";
import { SLICE_MS, TurnClock } from "./slices.js";
import type { StreamIndex } from "./stream-index.js";

/** An answer beyond a bound; the message names the setting. */
export class QueryBoundError extends Error {
  constructor(
    readonly bound: "max-query-results" | "max-query-bytes" | "max-event-size",
    message: string,
  ) {
    super(message);
    this.name = "QueryBoundError";
  }
}

/** The bounds of one answer, and how its errors name them. */
export interface AnswerBounds {
  /** Events at most. */
  readonly results: number;
  /** Bytes at most. */
  readonly bytes: number;
  /** The setting of `results` as messages name it (`streams.max-query-results`). */
  readonly resultsSetting: string;
  /**
   * Characters of one event the query's regular expressions may read (`streams.max-event-size`),
   * so that one evaluation stays short (condition.ts, matchWithin).
   */
  readonly regexAllowance: number;
  /** What is answered, leading the messages: `index search`, `query`. */
  readonly what: string;
}

/** What the errors of an answer beyond its bounds say: the bounds, the settings, what answers. */
export type BoundsWording = Pick<AnswerBounds, "results" | "bytes" | "resultsSetting" | "what">;

/** The error of an answer with more than `bounds.results` events. */
export function tooManyResults(bounds: BoundsWording): QueryBoundError {
  return new QueryBoundError(
    "max-query-results",
    `${bounds.what} matches more than ${bounds.results} events (${bounds.resultsSetting})`,
  );
}

/** The error of an answer larger than `bounds.bytes`. */
export function answerTooLarge(bounds: BoundsWording): QueryBoundError {
  return new QueryBoundError(
    "max-query-bytes",
    `${bounds.what} answer is larger than ${bounds.bytes} bytes (streams.max-query-bytes)`,
  );
}

/**
 * The events of `indexes` matching `predicate`: one index's sorted by time then key; several
 * indexes' merged, an event found in more than one listed once, sorted by time (stable).
 * @throws QueryBoundError when more than `bounds.results` events match, or when the query's
 *   regular expressions would read more than `bounds.regexAllowance` characters of one event
 */
export async function searchIndexes(
  indexes: readonly StreamIndex[],
  predicate: Predicate,
  bounds: AnswerBounds,
): Promise<Event[]> {
  try {
    return await search(indexes, (event) => matchWithin(predicate, event, bounds.regexAllowance), bounds);
  } catch (error) {
    if (!(error instanceof RegexAllowanceError)) throw error;
    throw new QueryBoundError("max-event-size", `${bounds.what}: ${error.message} (streams.max-event-size)`);
  }
}

async function search(indexes: readonly StreamIndex[], predicate: Predicate, bounds: AnswerBounds): Promise<Event[]> {
  const tooMany = () => tooManyResults(bounds);
  const [only] = indexes;
  if (indexes.length === 1 && only !== undefined) {
    const found = await only.searchAtMost(predicate, bounds.results, SLICE_MS);
    if (found === undefined) throw tooMany();
    return found;
  }
  // An event pushed to several streams is the same object in each of their indexes: listed once.
  const unique = new Set<Event>();
  for (const index of indexes) {
    const found = await index.searchAtMost(predicate, bounds.results, SLICE_MS);
    if (found === undefined) throw tooMany();
    for (const event of found) unique.add(event);
    if (unique.size > bounds.results) throw tooMany();
  }
  // Indexed events always have a time; the sort is stable, so ties keep each index's key order.
  return [...unique].sort((a, b) => (timeOf(a) ?? 0) - (timeOf(b) ?? 0));
}

/**
 * Encodes an answer's events a slice per turn of the event loop and assembles them, counting bytes
 * as it goes: it stops at the first byte beyond `bounds.bytes`.
 * @param encode one event's bytes in the answer (its JSON, its protobuf field)
 * @param assemble the answer from the events' bytes, in order
 * @param overhead bytes of the answer besides the events' (brackets, separators, a frame prefix)
 * @throws QueryBoundError when the answer would be larger than `bounds.bytes`
 */
export async function encodeAnswer<T>(
  events: readonly Event[],
  encode: (event: Event) => Uint8Array,
  assemble: (parts: readonly Uint8Array[], size: number) => T,
  overhead: (count: number) => number,
  bounds: AnswerBounds,
): Promise<T> {
  const parts: Uint8Array[] = [];
  let size = overhead(events.length);
  const clock = new TurnClock();
  for (const event of events) {
    const part = encode(event);
    parts.push(part);
    size += part.length;
    if (size > bounds.bytes) throw answerTooLarge(bounds);
    if (clock.due()) await clock.turn();
  }
  return assemble(parts, size);
}

/** The start of an answer, by its key. */
const OPENS = { events: Buffer.from('{"events":['), value: Buffer.from('{"value":[') };
const COMMA = Buffer.from(",");
const CLOSE = Buffer.from("]}");

/** One event's JSON text as UTF-8 (well-formed: JSON.stringify escapes lone surrogates). */
function eventJson(event: Event): Uint8Array {
  return Buffer.from(JSON.stringify(event), "utf8");
}

/**
 * The JSON answer of an index search, `{"events": [...]}`, as bytes, serialised a slice per turn.
 * @param key the answer's one key: `events`, or `value` for an owner's answer to another instance
 * @throws QueryBoundError when it would be larger than `bounds.bytes`
 */
export function jsonAnswer(
  events: readonly Event[],
  bounds: AnswerBounds,
  key: "events" | "value" = "events",
): Promise<Buffer> {
  const OPEN = OPENS[key];
  return encodeAnswer(
    events,
    eventJson,
    (parts, size) => {
      const pieces: Uint8Array[] = [OPEN];
      for (const [i, part] of parts.entries()) {
        if (i > 0) pieces.push(COMMA);
        pieces.push(part);
      }
      pieces.push(CLOSE);
      return Buffer.concat(pieces, size);
    },
    (count) => OPEN.length + CLOSE.length + Math.max(0, count - 1),
    bounds,
  );
}

/** A part of a stream as a search sees it (engine.ts `StreamPart`): its lease key and index. */
export interface SearchablePart {
  readonly key: string;
  readonly index: StreamIndex;
}

/**
 * The events of several stream parts matching `predicate`, each part searched where it runs: the
 * parts this instance runs (`local` true) searched together here, the others asked with `ask` (in
 * cluster mode, their owners), the answers merged: an event found in more than one part listed once,
 * sorted by time (stable), at most `bounds.results`.
 * @param ask the events of a part run elsewhere (the owner's answer)
 * @throws QueryBoundError as {@link searchIndexes}; what `ask` throws (an owner unavailable)
 */
export async function searchParts(
  parts: readonly SearchablePart[],
  local: (key: string) => boolean,
  predicate: Predicate,
  bounds: AnswerBounds,
  ask: (key: string) => Promise<Event[]>,
): Promise<Event[]> {
  const here = parts.filter((part) => local(part.key));
  if (here.length === parts.length)
    return searchIndexes(
      here.map((part) => part.index),
      predicate,
      bounds,
    );
  const answers = await Promise.all([
    here.length === 0
      ? []
      : searchIndexes(
          here.map((part) => part.index),
          predicate,
          bounds,
        ),
    ...parts.filter((part) => !local(part.key)).map((part) => ask(part.key)),
  ]);
  const found = new Set<Event>();
  for (const answer of answers) {
    for (const event of answer) found.add(event);
    if (found.size > bounds.results) throw tooManyResults(bounds);
  }
  return [...found].sort((a, b) => (timeOf(a) ?? 0) - (timeOf(b) ?? 0));
}
