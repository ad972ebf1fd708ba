/**
 * Compiles a stream configuration (docs/streams.md) once into a {@link Builder}: every node is
 * checked (action, params, children) and turned into closures; building the result for a stream
 * gives the function events are pushed into.
 */
import { type ActionDefinition, type Builder, compilingNode, discard } from "./action.js";
import { actionNamed } from "./actions/catalogue.js";
import { fieldsParam } from "./actions/params.js";
import { CompileError } from "./compile-error.js";
import { type EdnValue, isKeyword, isMap, mapGet, sequenceItems, toEdn } from "./edn.js";
import type { FieldPath } from "./event.js";
import type { GraphShape, OutCount } from "./graph.js";
import { type Declarations, NO_DECLARATIONS } from "./io.js";
import { isStreamName, STREAM_NAME_RULE } from "./names.js";

/** A compiled stream configuration. */
export interface CompiledConfig {
  /** Builds the action tree for one running stream. */
  readonly build: Builder;
  /** `:default true`: the stream receives pushes sent to `default`. */
  readonly default: boolean;
  /** `:persist true`: the configuration is written to the first stream directory. */
  readonly persist: boolean;
  /** The action tree's shape, for the stream's graph. */
  readonly graph: GraphShape;
  /** How many event counters a running stream keeps (see Runtime.counts). */
  readonly slots: number;
  /** The `:tap-point` names of the tree. */
  readonly tapPoints: readonly string[];
  /**
   * `:partition-by [f ...]`: the fields whose values choose an event's partition (partition.ts),
   * or undefined for a stream that is not partitioned.
   */
  readonly partitionBy: readonly FieldPath[] | undefined;
}

function flagOf(config: { map: Array<[EdnValue, EdnValue]> }, name: string): boolean {
  const value = mapGet(config, name);
  if (value === undefined || value === null) return false;
  if (typeof value !== "boolean") throw new CompileError(`:${name}`, "must be true or false");
  return value;
}

/** `:partition-by [f ...]`: a non-empty vector of fields (keywords, or vectors of them for nested fields). */
function partitionByOf(config: { map: Array<[EdnValue, EdnValue]> }): FieldPath[] | undefined {
  const value = mapGet(config, "partition-by");
  if (value === undefined || value === null) return undefined;
  const fields = fieldsParam(value, ":partition-by", "partition-by");
  if (fields.length === 0) throw new CompileError(":partition-by", "needs at least one field");
  return fields;
}

/**
 * Compiles the top map of a stream configuration
 * `{:actions {...} :default bool :persist bool :partition-by [f ...]}`.
 * Other keys of the top map are kept (and returned by GET) but not interpreted.
 * @param declarations the outputs and async queues that `output` and `async-queue` may name
 * @throws CompileError naming the node path and the problem
 */
export function compileConfig(config: EdnValue, declarations: Declarations = NO_DECLARATIONS): CompiledConfig {
  if (!isMap(config)) throw new CompileError("", "the configuration must be an EDN map");
  const actions = mapGet(config, "actions");
  if (actions === undefined) throw new CompileError("", "the configuration needs :actions");
  const context: TreeContext = { declarations, slots: 0, points: new Map() };
  const { build, shape } = compileTree(actions, "actions", context);
  return {
    build,
    default: flagOf(config, "default"),
    persist: flagOf(config, "persist"),
    graph: shape,
    slots: context.slots,
    tapPoints: [...context.points.keys()],
    partitionBy: partitionByOf(config),
  };
}

/**
 * Compiles one action node `{:action :name :params [...] :children [...]}` and its children.
 * `:description` is informational; `:children` may be a vector or a list (Mirabelle's compiler
 * writes lists).
 */
export function compileNode(node: EdnValue, path: string, declarations: Declarations = NO_DECLARATIONS): Builder {
  return compileTree(node, path, { declarations, slots: 0, points: new Map() }).build;
}

/** What the compilation of one configuration carries from node to node. */
interface TreeContext {
  readonly declarations: Declarations;
  /** Counter slots given so far. */
  slots: number;
  /** The tap points met so far, with the path of the node naming each. */
  readonly points: Map<string, string>;
}

/**
 * Compiles a node and its children into the builder of its closures (wrapped to count what the node
 * receives, and to tap what leaves it when it names a `:tap-point`) and the shape of its graph.
 */
function compileTree(node: EdnValue, path: string, context: TreeContext): { build: Builder; shape: GraphShape } {
  if (!isMap(node)) throw new CompileError(path, "an action must be a map with :action");
  const name = mapGet(node, "action");
  if (!isKeyword(name)) throw new CompileError(path, ":action must be a keyword");
  const definition = actionNamed(name.key);
  if (definition === undefined) throw new CompileError(path, `unknown action :${name.key}`);
  const rawParams = mapGet(node, "params");
  const params = rawParams === undefined || rawParams === null ? [] : sequenceItems(rawParams);
  if (params === undefined) throw new CompileError(path, ":params must be a vector");
  const rawChildren = mapGet(node, "children");
  const childNodes = rawChildren === undefined || rawChildren === null ? [] : sequenceItems(rawChildren);
  if (childNodes === undefined) throw new CompileError(path, ":children must be a vector or a list");
  if (definition.leaf && childNodes.length > 0) {
    throw new CompileError(path, `:${name.key} is a leaf action and takes no children`);
  }
  const tapPoint = tapPointOf(node, path, definition, context);
  const inSlot = context.slots++;
  const compiled = childNodes.map((child, index) => compileTree(child, `${path}.children[${index}]`, context));
  let children = compiled.map((child) => child.build);
  let out: OutCount;
  if (definition.leaf) out = { kind: "none" };
  else if (definition.routes) out = { kind: "children" };
  else if (children.length > 0) out = { kind: "first-child" };
  else {
    // Nothing follows the node: a counter behind it counts what it emits (and is what a tap taps).
    out = { kind: "slot", slot: context.slots++ };
    children = [counter(out.slot)];
  }
  if (tapPoint !== undefined) {
    // Every child receives what a forwarding action emits: tapping the first one sees each value once.
    children = children.map((child, index) => (definition.routes || index === 0 ? tapped(child, tapPoint) : child));
  }
  const shape: GraphShape = {
    action: name.key,
    params: params.map((param) => toEdn(param)),
    tapPoint,
    inSlot,
    out,
    children: compiled.map((child) => child.shape),
  };
  const { result: build, claimed } = compilingNode(inSlot, () =>
    definition.compile(params, children, path, context.declarations),
  );
  // An action built on the counting helpers counts itself; the others are wrapped.
  return { build: claimed ? build : counted(build, inSlot), shape };
}

/**
 * The node's `:tap-point` (a string or a keyword, following the stream-name rule), unique in the
 * configuration; `undefined` without one.
 * @throws CompileError for an invalid or repeated name, or a tap point on a leaf action
 */
function tapPointOf(
  node: { map: Array<[EdnValue, EdnValue]> },
  path: string,
  definition: ActionDefinition,
  context: TreeContext,
): string | undefined {
  const value = mapGet(node, "tap-point");
  if (value === undefined || value === null) return undefined;
  const point = typeof value === "string" ? value : isKeyword(value) ? value.key : undefined;
  if (point === undefined || !isStreamName(point)) {
    throw new CompileError(path, `:tap-point ${STREAM_NAME_RULE}, as a string or a keyword`);
  }
  if (definition.leaf) {
    throw new CompileError(path, ":tap-point on a leaf action: nothing leaves it, tap its parent instead");
  }
  const first = context.points.get(point);
  if (first !== undefined) throw new CompileError(path, `:tap-point "${point}" is already used at ${first}`);
  context.points.set(point, path);
  return point;
}

/** Counts each value the built action receives in `slot` of the stream's counters. */
function counted(build: Builder, slot: number): Builder {
  return (runtime) => {
    const next = build(runtime);
    const counter = runtime.counter?.(slot);
    if (counter === undefined) return next;
    return (value) => {
      counter.count++;
      next(value);
    };
  };
}

/** A child that only counts what it receives (behind an action without children). */
function counter(slot: number): Builder {
  return (runtime) => {
    const counter = runtime.counter?.(slot);
    if (counter === undefined) return discard;
    return () => {
      counter.count++;
    };
  };
}

/** Hands each value the built child receives to the tap point's sink first, while one is set. */
function tapped(build: Builder, point: string): Builder {
  return (runtime) => {
    const next = build(runtime);
    const slot = runtime.tapPoint?.(point);
    if (slot === undefined) return next;
    return (value) => {
      const sink = slot.sink;
      if (sink !== undefined) sink(value);
      next(value);
    };
  };
}
