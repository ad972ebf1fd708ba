/**
 * `vigie stream test` (docs/streams.md): runs test files against the streams of the stream
 * directories, without a server. A test file is an EDN map from test name to
 * `{:input [events] :target <stream, optional> :taps {:name [expected ...]}}`. For each test the
 * streams start fresh; inputs go to the target stream or else to the default streams; `tap` actions
 * record what reaches them (a list is recorded as one element); every listed tap must equal its
 * expected values. Inputs are pushed as written: no `time` is added, so tests are deterministic.
 * `output` and `publish` record into the tap of their name, async queues run inline and `io`
 * discards (docs/streams.md), so a test never contacts an output.
 */
import { readFile } from "node:fs/promises";
import { errorMessage } from "../platform/errors.js";
import { isPlainObject } from "../platform/validation.js";
import { DEFAULT_STREAM_LIMITS, type Flow } from "./action.js";
import { type EdnValue, ednToJson, isMap, mapGet, nameOf, parseEdn, sequenceItems, toEdn } from "./edn.js";
import { StreamEngine } from "./engine.js";
import { valuesEqual } from "./event.js";
import { type Declarations, NO_DECLARATIONS, testIo } from "./io.js";
import type { FileStream } from "./storage.js";

/** One tap whose recorded values differ from the expected ones. */
export interface TapMismatch {
  readonly tap: string;
  readonly expected: unknown;
  readonly actual: unknown;
}

/** The outcome of one test. */
export interface StreamTestResult {
  readonly file: string;
  readonly name: string;
  /** A problem that kept the test from running (bad file, unknown target). */
  readonly error?: string;
  readonly mismatches: readonly TapMismatch[];
}

function runOne(
  streams: ReadonlyMap<string, FileStream>,
  declarations: Declarations,
  file: string,
  name: string,
  test: EdnValue,
): StreamTestResult {
  const fail = (error: string): StreamTestResult => ({ file, name, error, mismatches: [] });
  if (!isMap(test)) return fail("a test must be a map with :input and :taps");
  const input = sequenceItems(mapGet(test, "input") ?? []);
  if (input === undefined) return fail(":input must be a vector of events");
  const events = input.map(ednToJson);
  if (!events.every(isPlainObject)) return fail(":input must contain maps only");
  const taps = mapGet(test, "taps") ?? { map: [] };
  if (!isMap(taps)) return fail(":taps must be a map from tap name to expected values");

  const recorded = new Map<string, Flow[]>();
  const tap = (_stream: string, name: string, value: Flow) => {
    const values = recorded.get(name) ?? [];
    // Record a copy: later actions must not change what the tap saw.
    values.push(structuredClone(value));
    recorded.set(name, values);
  };
  const engine = new StreamEngine({ tap }, DEFAULT_STREAM_LIMITS, testIo(declarations, tap));
  for (const stream of streams.values()) engine.add(stream.name, stream.config, { kind: "file", file: stream.file });

  const targetValue = mapGet(test, "target");
  if (targetValue === undefined || targetValue === null) engine.pushDefault(events);
  else {
    const target = nameOf(targetValue);
    const stream = target === undefined ? undefined : engine.get(target);
    if (stream === undefined) return fail(`unknown target stream ${toEdn(targetValue)}`);
    stream.push(events);
  }

  const mismatches: TapMismatch[] = [];
  for (const [key, expectedValue] of taps.map) {
    const tap = nameOf(key) ?? toEdn(key);
    const expected = ednToJson(expectedValue);
    const actual = recorded.get(tap) ?? [];
    if (!valuesEqual(actual, expected)) mismatches.push({ tap, expected, actual });
  }
  return { file, name, mismatches };
}

/**
 * Runs every test of the files against `streams`. `output` and `publish` record into the tap of
 * their name, async queues run inline and `io` discards: nothing is contacted.
 * @param declarations the outputs and async queues of the configuration (the streams were
 *   compiled against them)
 * @returns one result per test, in file order then test order
 */
export async function runStreamTests(
  streams: ReadonlyMap<string, FileStream>,
  files: readonly string[],
  declarations: Declarations = NO_DECLARATIONS,
): Promise<StreamTestResult[]> {
  const results: StreamTestResult[] = [];
  for (const file of files) {
    let tests: EdnValue;
    try {
      tests = parseEdn(await readFile(file, "utf8"));
    } catch (error) {
      results.push({ file, name: "(file)", error: errorMessage(error), mismatches: [] });
      continue;
    }
    if (!isMap(tests)) {
      results.push({
        file,
        name: "(file)",
        error: "a test file must be an EDN map from test name to test",
        mismatches: [],
      });
      continue;
    }
    for (const [key, test] of tests.map)
      results.push(runOne(streams, declarations, file, nameOf(key) ?? toEdn(key), test));
  }
  return results;
}

/** Formats results for the terminal: each failure with expected and actual, then a summary line. */
export function formatStreamTestResults(results: readonly StreamTestResult[]): { text: string; ok: boolean } {
  const lines: string[] = [];
  let failed = 0;
  for (const result of results) {
    if (result.error === undefined && result.mismatches.length === 0) continue;
    failed += 1;
    if (result.error !== undefined) {
      lines.push(`FAIL ${result.file} ${result.name}: ${result.error}`);
      continue;
    }
    for (const mismatch of result.mismatches) {
      lines.push(`FAIL ${result.file} ${result.name}: tap ${mismatch.tap}`);
      lines.push(`  expected: ${JSON.stringify(mismatch.expected)}`);
      lines.push(`  actual:   ${JSON.stringify(mismatch.actual)}`);
    }
  }
  if (results.length === 0) return { text: "no tests found\n", ok: false };
  lines.push(failed === 0 ? "All tests successful" : `${failed} of ${results.length} tests failed`);
  return { text: `${lines.join("\n")}\n`, ok: failed === 0 };
}
