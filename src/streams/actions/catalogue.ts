/**
 * The actions a stream configuration can use, by EDN name (streams.md §4: phase 1, and the I/O
 * actions of phase 2). The other phase-2 names are known so that using one gives a clear "not
 * implemented" error rather than "unknown action".
 */
import type { ActionDefinition } from "../action.js";
import { collCount, collMax, collMean, collMin, collRate, collSum, collWhere } from "./collections.js";
import { changed, conditionDuration, expired, notExpired, over, taggedAll, throttle, under } from "./filters.js";
import { by, sdo, split, where } from "./flow.js";
import { asyncQueue, io, output, publish } from "./io.js";
import { debug, error, index, info, reaper, reinject, tap } from "./outputs.js";
import {
  ddt,
  ddtPos,
  decrement,
  defaultAction,
  ewmaTimeless,
  increment,
  keepKeys,
  renameKeys,
  scale,
  sdissoc,
  tag,
  untag,
  withAction,
} from "./transform.js";
import {
  bottom,
  fixedEventWindow,
  fixedTimeWindow,
  mean,
  movingEventWindow,
  movingTimeWindow,
  rate,
  sum,
  top,
} from "./windows.js";

/** Phase-1 actions and the I/O actions of phase 2, by name. */
export const ACTIONS: ReadonlyMap<string, ActionDefinition> = new Map<string, ActionDefinition>([
  ["sdo", sdo],
  ["where", where],
  ["split", split],
  ["by", by],
  ["with", withAction],
  ["default", defaultAction],
  ["tag", tag],
  ["untag", untag],
  ["tagged-all", taggedAll],
  ["increment", increment],
  ["decrement", decrement],
  ["scale", scale],
  ["over", over],
  ["under", under],
  ["changed", changed],
  ["throttle", throttle],
  ["rename-keys", renameKeys],
  ["keep-keys", keepKeys],
  ["sdissoc", sdissoc],
  ["expired", expired],
  ["not-expired", notExpired],
  ...["above-dt", "below-dt", "between-dt", "outside-dt", "cond-dt", "critical-dt"].map(
    (name) => [name, conditionDuration(name)] as [string, ActionDefinition],
  ),
  ["fixed-time-window", fixedTimeWindow],
  ["fixed-event-window", fixedEventWindow],
  ["moving-event-window", movingEventWindow],
  ["moving-time-window", movingTimeWindow],
  ["sum", sum],
  ["mean", mean],
  ["top", top],
  ["bottom", bottom],
  ["rate", rate],
  ["coll-count", collCount],
  ["coll-sum", collSum],
  ["coll-mean", collMean],
  ["coll-max", collMax],
  ["coll-min", collMin],
  ["coll-rate", collRate],
  ["coll-where", collWhere],
  ["ddt", ddt],
  ["ddt-pos", ddtPos],
  ["ewma-timeless", ewmaTimeless],
  ["index", index],
  ["reaper", reaper],
  ["reinject", reinject],
  ["info", info],
  ["debug", debug],
  ["error", error],
  ["tap", tap],
  ["output", output],
  ["publish", publish],
  ["async-queue", asyncQueue],
  ["io", io],
]);

/** Phase-2 actions (streams.md §4): recognised, not implemented yet. */
export const LATER_ACTIONS: ReadonlySet<string> = new Set([
  "project",
  "coalesce",
  "stable",
  "percentiles",
  "coll-percentiles",
  "coll-top",
  "coll-bottom",
  "coll-sort",
  "coll-quotient",
  "coll-increase",
  "ssort",
  "extract",
  "sflatten",
  "sformat",
  "to-string",
  "from-json",
  "to-base64",
  "from-base64",
  "exception-stream",
]);

/** The action of an EDN name; a trailing `!` is accepted (`:reinject!`). */
export function actionNamed(name: string): ActionDefinition | undefined {
  return ACTIONS.get(name.endsWith("!") ? name.slice(0, -1) : name);
}
