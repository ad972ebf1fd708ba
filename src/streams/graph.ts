/**
 * A running stream's action tree with its event counts (`GET /api/v1/stream/<name>/graph`,
 * docs/streams.md): the compiler records the tree's shape once, each running stream keeps one
 * counter per slot, and {@link graphOf} joins both when asked.
 *
 * Counting is cheap by construction: each action node counts what it receives (`in`), one
 * increment of a counter resolved when the action was built; what an action emits (`out`) is read from its children's
 * `in` rather than counted a second time. A value is one event or one list of events (from a
 * window): a list counts once.
 */

import type { EventCounter } from "./action.js";

/** How a node's `out` is known. */
export type OutCount =
  /** The node has no children of its own: a counter the compiler added behind it counts what it emits. */
  | { readonly kind: "slot"; readonly slot: number }
  /** Every child receives every value the node emits: its first child's `in`. */
  | { readonly kind: "first-child" }
  /** Each value goes to some children only (`split`, `exception-stream`): the sum of their `in`. */
  | { readonly kind: "children" }
  /** A leaf action (index, output, publish …): it emits nothing. */
  | { readonly kind: "none" };

/** The shape of one compiled action node, recorded once per configuration. */
export interface GraphShape {
  /** The action's name without the colon (`where`), as written (`reinject!` stays so). */
  readonly action: string;
  /** Each of its params as EDN text (`[:> :metric 10]`). */
  readonly params: readonly string[];
  /** Its `:tap-point`, if any. */
  readonly tapPoint: string | undefined;
  /** The counter slot of what it receives. */
  readonly inSlot: number;
  readonly out: OutCount;
  readonly children: readonly GraphShape[];
}

/**
 * One node of a stream's graph as the API answers it: `in` and `out` are the values (events, or
 * lists of events from a window) the action received and emitted since the stream started.
 */
export interface GraphNode {
  action: string;
  params: string[];
  "tap-point"?: string;
  in: number;
  out: number;
  children: GraphNode[];
}

/**
 * The graph of a running stream: its compiled shape with the counts read now.
 * @param counts the stream's counters, indexed by the shape's slots (a missing one reads 0)
 */
export function graphOf(shape: GraphShape, counts: readonly EventCounter[]): GraphNode {
  const children = shape.children.map((child) => graphOf(child, counts));
  const node: GraphNode = {
    action: shape.action,
    params: [...shape.params],
    in: counts[shape.inSlot]?.count ?? 0,
    out: outOf(shape.out, children, counts),
    children,
  };
  if (shape.tapPoint !== undefined) node["tap-point"] = shape.tapPoint;
  return node;
}

function outOf(out: OutCount, children: readonly GraphNode[], counts: readonly EventCounter[]): number {
  switch (out.kind) {
    case "slot":
      return counts[out.slot]?.count ?? 0;
    case "first-child":
      return children[0]?.in ?? 0;
    case "children":
      return children.reduce((sum, child) => sum + child.in, 0);
    case "none":
      return 0;
  }
}

/** The tap points of a shape, in tree order. */
export function tapPointsOf(shape: GraphShape): string[] {
  const points: string[] = [];
  const visit = (node: GraphShape) => {
    if (node.tapPoint !== undefined) points.push(node.tapPoint);
    for (const child of node.children) visit(child);
  };
  visit(shape);
  return points;
}
