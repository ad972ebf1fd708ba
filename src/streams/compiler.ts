/**
 * Compiles a stream configuration (docs/streams.md) once into a {@link Builder}: every node is
 * checked (action, params, children) and turned into closures; building the result for a stream
 * gives the function events are pushed into.
 */
import type { Builder } from "./action.js";
import { actionNamed } from "./actions/catalogue.js";
import { fieldsParam } from "./actions/params.js";
import { CompileError } from "./compile-error.js";
import { type EdnValue, isKeyword, isMap, mapGet, sequenceItems } from "./edn.js";
import type { FieldPath } from "./event.js";
import { type Declarations, NO_DECLARATIONS } from "./io.js";

/** A compiled stream configuration. */
export interface CompiledConfig {
  /** Builds the action tree for one running stream. */
  readonly build: Builder;
  /** `:default true`: the stream receives pushes sent to `default`. */
  readonly default: boolean;
  /** `:persist true`: the configuration is written to the first stream directory. */
  readonly persist: boolean;
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
  return {
    build: compileNode(actions, "actions", declarations),
    default: flagOf(config, "default"),
    persist: flagOf(config, "persist"),
    partitionBy: partitionByOf(config),
  };
}

/**
 * Compiles one action node `{:action :name :params [...] :children [...]}` and its children.
 * `:description` is informational; `:children` may be a vector or a list (Mirabelle's compiler
 * writes lists).
 */
export function compileNode(node: EdnValue, path: string, declarations: Declarations = NO_DECLARATIONS): Builder {
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
  const children = childNodes.map((child, index) => compileNode(child, `${path}.children[${index}]`, declarations));
  return definition.compile(params, children, path, declarations);
}
