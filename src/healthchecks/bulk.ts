/**
 * The bulk payload (healthchecks.md §6): an object with optional arrays `http-checks`,
 * `tcp-checks`, `dns-checks`, `tls-checks` and `command-checks`, validated as a whole before
 * anything changes.
 */
import { isPlainObject, ValidationError } from "../platform/validation.js";
import { checksKey } from "./config.js";
import { type Definition, type DefinitionRules, KINDS, validateDefinition } from "./definition.js";

/** A bulk payload that cannot be applied; the message is the API's error, as is. */
export class BulkError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "BulkError";
  }
}

/** The message for a one-off definition in a bulk payload (healthchecks.md §6). */
export const ONE_OFF_IN_BULK = "one-off healthchecks are not allowed in bulk";

/** Whether a raw bulk payload lists at least one command check. */
export function hasCommandChecks(body: unknown): boolean {
  if (!isPlainObject(body)) return false;
  const list = body[checksKey("command")];
  return Array.isArray(list) && list.length > 0;
}

/**
 * Validates a bulk payload. Unknown keys and unknown fields are ignored; an omitted list counts as
 * empty.
 *
 * @returns every definition, kinds in the order of KINDS, each list in its order
 * @throws BulkError `invalid healthcheck <name>: <field>: <rule>` (the position, such as
 *   `http-checks[2]`, stands for the name when the definition has no usable one), `one-off
 *   healthchecks are not allowed in bulk`, or `duplicate healthcheck name <name> in the bulk payload`
 */
export function parseBulk(body: unknown, rules: DefinitionRules): Definition[] {
  if (!isPlainObject(body)) {
    throw new BulkError(
      `invalid bulk payload: must be an object with optional arrays ${KINDS.map(checksKey).join(", ")}`,
    );
  }
  const definitions: Definition[] = [];
  const names = new Set<string>();
  for (const kind of KINDS) {
    const key = checksKey(kind);
    const list = body[key];
    if (list === undefined || list === null) continue;
    if (!Array.isArray(list)) throw new BulkError(`invalid bulk payload: ${key}: must be an array`);
    list.forEach((item: unknown, index) => {
      const label =
        isPlainObject(item) && typeof item.name === "string" && item.name !== "" ? item.name : `${key}[${index}]`;
      if (isPlainObject(item) && item["one-off"] === true) throw new BulkError(ONE_OFF_IN_BULK);
      let definition: Definition;
      try {
        definition = validateDefinition(kind, item, rules, { unknownKeys: "ignore" });
      } catch (error) {
        if (error instanceof ValidationError) throw new BulkError(`invalid healthcheck ${label}: ${error.message}`);
        throw error;
      }
      if (names.has(definition.name)) {
        throw new BulkError(`duplicate healthcheck name ${definition.name} in the bulk payload`);
      }
      names.add(definition.name);
      definitions.push(definition);
    });
  }
  return definitions;
}
