/**
 * What the alerts of checks name outside themselves (docs/alerts.md): each `alerts[].output` must
 * be a declared output, each `depends-on` name a registered check, and dependencies must not form
 * a cycle. Checked when checks are posted (a 400 naming the field), and for the configuration file
 * at start-up and on SIGHUP (a configuration error naming the key). Plain TypeScript.
 */
import { ValidationError } from "../../platform/validation.js";
import { configuredChecks, type HealthchecksSection } from "../config.js";
import type { Definition } from "../definition.js";
import type { AlertPolicy } from "./policy.js";

/** A check whose references break a rule, and the field that does (its path relative to the check). */
export interface ReferenceProblem {
  readonly check: string;
  readonly error: ValidationError;
}

/** Whether an output of that name is declared (the platform's `Notifier.has`). */
export type OutputExists = (output: string) => boolean;

/** The alerts' outputs that are not declared, as a problem of the field `<path>[i].output`. */
export function undeclaredOutput(
  alerts: readonly AlertPolicy[] | undefined,
  hasOutput: OutputExists,
  path: string,
): ValidationError | undefined {
  if (alerts === undefined) return undefined;
  for (const [index, alert] of alerts.entries()) {
    if (!hasOutput(alert.output)) {
      return new ValidationError(
        `${path}[${index}].output`,
        `must name a declared output (${alert.output} is not one)`,
      );
    }
  }
  return undefined;
}

/** The chain from `start` back to itself through `depends-on`, or undefined when there is none. */
function cycleFrom(start: string, checks: ReadonlyMap<string, Definition>): string[] | undefined {
  const visited = new Set<string>();
  const walk = (name: string, chain: string[]): string[] | undefined => {
    for (const parent of checks.get(name)?.["depends-on"] ?? []) {
      if (parent === start) return [...chain, parent];
      if (visited.has(parent)) continue;
      visited.add(parent);
      const found = walk(parent, [...chain, parent]);
      if (found !== undefined) return found;
    }
    return undefined;
  };
  return walk(start, [start]);
}

/**
 * The first broken reference of the `changed` checks, when `checks` are every check once they are
 * applied (the changed ones included).
 *
 * @returns undefined when all hold; else the check and `alerts[1].output: must name a declared
 *   output (pager is not one)`, `depends-on[0]: must name an existing healthcheck (router is not
 *   one)` or `depends-on[0]: must not form a cycle (a → b → a)`
 */
export function referenceProblem(
  changed: Iterable<Definition>,
  checks: ReadonlyMap<string, Definition>,
  hasOutput: OutputExists,
): ReferenceProblem | undefined {
  for (const definition of changed) {
    const check = definition.name;
    const output = undeclaredOutput(definition.alerts, hasOutput, "alerts");
    if (output !== undefined) return { check, error: output };
    const parents = definition["depends-on"];
    // Most checks depend on none: nothing to look up, and no cycle can start from them.
    if (parents === undefined || parents.length === 0) continue;
    for (const [index, parent] of parents.entries()) {
      if (!checks.has(parent)) {
        const error = new ValidationError(
          `depends-on[${index}]`,
          `must name an existing healthcheck (${parent} is not one)`,
        );
        return { check, error };
      }
    }
    const cycle = cycleFrom(check, checks);
    if (cycle !== undefined) {
      const index = Math.max(0, parents.indexOf(cycle[1] ?? ""));
      const error = new ValidationError(`depends-on[${index}]`, `must not form a cycle (${cycle.join(" → ")})`);
      return { check, error };
    }
  }
  return undefined;
}

/** A registered check as the catalog lists it. */
export interface RegisteredCheck {
  readonly definition: Definition;
  readonly source: "api" | "configuration";
}

/**
 * Every check once `changed` is applied, by name: `changed` replaces the check of its name; with
 * `replacing`, as a bulk payload does, `changed` replaces every API check (the configuration-file
 * checks stay).
 */
export function checksAfter(
  registered: Iterable<RegisteredCheck>,
  changed: readonly Definition[],
  replacing: boolean,
): Map<string, Definition> {
  const checks = new Map<string, Definition>();
  for (const { definition, source } of registered) {
    if (!replacing || source === "configuration") checks.set(definition.name, definition);
  }
  for (const definition of changed) checks.set(definition.name, definition);
  return checks;
}

/**
 * The first broken reference of the configuration file: an undeclared output in
 * `healthchecks.default-alerts` or in a check's `alerts`, an unknown name or a cycle in a check's
 * `depends-on`. The file's checks may depend on API checks: `registered` are the checks besides
 * the file's (an API check of the same name wins, as it does when scheduled).
 *
 * @returns undefined when all hold; else an error naming the key:
 *   `healthchecks.http-checks[0].depends-on[0]: must name an existing healthcheck (router is not one)`
 */
export function configurationReferenceError(
  configured: ReadonlyArray<{ readonly definition: Definition; readonly path: string }>,
  defaults: readonly AlertPolicy[],
  registered: Iterable<RegisteredCheck>,
  hasOutput: OutputExists,
): ValidationError | undefined {
  const defaultsError = undeclaredOutput(defaults, hasOutput, "healthchecks.default-alerts");
  if (defaultsError !== undefined) return defaultsError;
  const checks = new Map(configured.map(({ definition }) => [definition.name, definition]));
  for (const { definition, source } of registered) {
    if (source === "api") checks.set(definition.name, definition);
  }
  const own = configured.filter(({ definition }) => checks.get(definition.name) === definition);
  const problem = referenceProblem(
    own.map(({ definition }) => definition),
    checks,
    hasOutput,
  );
  if (problem === undefined) return undefined;
  const path = own.find(({ definition }) => definition.name === problem.check)?.path ?? "healthchecks";
  return new ValidationError(`${path}.${problem.error.path}`, problem.error.rule);
}

/**
 * The first undeclared output the configuration file's alerts name: in
 * `healthchecks.default-alerts`, then in each check's `alerts`.
 * @returns undefined, or an error naming `healthchecks.http-checks[0].alerts[1].output`
 */
export function undeclaredOutputs(section: HealthchecksSection, hasOutput: OutputExists): ValidationError | undefined {
  const defaults = undeclaredOutput(section["default-alerts"], hasOutput, "healthchecks.default-alerts");
  if (defaults !== undefined) return defaults;
  for (const check of configuredChecks(section)) {
    // The path is made only for a check with alerts (most have none).
    if (check.definition.alerts === undefined) continue;
    const error = undeclaredOutput(check.definition.alerts, hasOutput, `${check.path}.alerts`);
    if (error !== undefined) return error;
  }
  return undefined;
}
