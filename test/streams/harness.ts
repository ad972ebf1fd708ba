/**
 * Runs stream configurations in tests: compile EDN, push events, read what reached each tap and
 * what each action dropped.
 */
import type { Flow, StreamLimits } from "../../src/streams/action.js";
import { compileConfig } from "../../src/streams/compiler.js";
import { parseEdn } from "../../src/streams/edn.js";
import { StreamEngine } from "../../src/streams/engine.js";
import type { Event } from "../../src/streams/event.js";
import type { StreamIo } from "../../src/streams/io.js";

/**
 * An engine recording taps, logs and drops; `limits` bounds its streams' state, `io` receives what
 * `output`, `publish` and `async-queue` send (default: nowhere, queues inline).
 */
export function recordingEngine(limits?: StreamLimits, io?: StreamIo) {
  const taps = new Map<string, Flow[]>();
  const drops = new Map<string, number>();
  const logs: Array<{ level: string; stream: string; value: Flow }> = [];
  const engine = new StreamEngine(
    {
      tap: (_stream, name, value) => {
        const list = taps.get(name) ?? [];
        list.push(value);
        taps.set(name, list);
      },
      dropped: (stream, action) => () => drops.set(`${stream}/${action}`, (drops.get(`${stream}/${action}`) ?? 0) + 1),
      log: (level, stream, value) => logs.push({ level, stream, value }),
    },
    limits,
    io,
  );
  return { engine, taps, drops, logs, tap: (name: string) => taps.get(name) ?? [] };
}

/**
 * Compiles `{:actions <actions>}` as stream `s` and pushes `events` one by one.
 * @returns what reached the taps (by name) and the drop counts (`s/<action>`)
 */
export function run(actions: string, events: readonly Event[], limits?: StreamLimits) {
  const recorder = recordingEngine(limits);
  const stream = recorder.engine.add("s", parseEdn(`{:actions ${actions}}`), { kind: "api" });
  for (const event of events) stream.push([event]);
  return { ...recorder, stream };
}

/**
 * The message of the compile error of an action node placed under an `sdo` (so its path is
 * `actions.children[0]`), or `"compiled"` when it compiles.
 */
export function compileErrorOf(node: string): string {
  try {
    compileConfig(parseEdn(`{:actions {:action :sdo :children [${node}]}}`));
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
  return "compiled";
}
