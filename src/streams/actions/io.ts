/**
 * The actions that hand events to the world outside the stream:
 * `output` (a declared output's queue), `publish` (a WebSocket channel), `async-queue` (children
 * run later from a declared bounded queue) and `io` (children skipped under `vigie stream test`).
 * None of them waits: each enqueues or sends and returns.
 */
import { type ActionDefinition, buildChildren, claimCounter, counterOf, discard } from "../action.js";
import { CompileError } from "../compile-error.js";
import type { EdnValue } from "../edn.js";
import { nameOf } from "../edn.js";
import { isStreamName, STREAM_NAME_RULE } from "../names.js";
import { expectCount } from "./params.js";

/** A name param (`:alerts` or `"alerts"`). */
function nameParam(params: readonly EdnValue[], path: string, action: string, what: string): string {
  expectCount(params, 1, 1, path, action, `[:${what}]`);
  const name = nameOf(params[0]);
  if (name === undefined || name === "") throw new CompileError(path, `:${action} takes a keyword or string ${what}`);
  return name;
}

/**
 * `output [:name]`: hands the event, or each event of a list, to the queue of the output declared
 * under `streams.outputs.<name>`; an undeclared name is a compile error.
 */
export const output: ActionDefinition = {
  leaf: true,
  compile(params, _children, path, declarations) {
    const name = nameParam(params, path, "output", "output-name");
    if (!declarations.outputs.has(name)) {
      throw new CompileError(path, `output ${name} is not declared (outputs or streams.outputs)`);
    }
    // It counts what it receives itself: the compiler's counting wrapper would add a call per
    // event, and its call site, shared with other actions, would keep V8 from inlining the sink.
    const slot = claimCounter();
    return (runtime) => {
      const sink = runtime.output(name);
      const counter = counterOf(runtime, slot);
      return (value) => {
        counter.count++;
        sink(value);
      };
    };
  },
};

/** `publish [:channel]`: sends the event, or each event of a list, to the channel's subscribers. */
export const publish: ActionDefinition = {
  leaf: true,
  compile(params, _children, path) {
    const channel = nameParam(params, path, "publish", "channel");
    // Subscribers name the channel in a URL that follows the stream-name rule (GET /api/v1/channel/<name>).
    if (!isStreamName(channel)) throw new CompileError(path, `the channel ${STREAM_NAME_RULE}`);
    return (runtime) => runtime.publish(channel);
  },
};

/**
 * `async-queue [:name]`: runs its children later, in order, from the queue declared under
 * `streams.async-queues.<name>`; a full queue drops (counted). Inline under `vigie stream test`.
 */
export const asyncQueue: ActionDefinition = {
  compile(params, children, path, declarations) {
    const name = nameParam(params, path, "async-queue", "queue-name");
    if (!declarations.asyncQueues.has(name)) {
      throw new CompileError(path, `async queue ${name} is not declared in streams.async-queues`);
    }
    return (runtime) => {
      const next = buildChildren(children, runtime);
      const enqueue = runtime.asyncQueue(name);
      return (value) => enqueue(next, value);
    };
  },
};

/** `io`: forwards to its children, except under `vigie stream test`, where it discards. */
export const io: ActionDefinition = {
  compile(params, children, path) {
    expectCount(params, 0, 0, path, "io", "");
    return (runtime) => (runtime.runsIo ? buildChildren(children, runtime) : discard);
  },
};
