/**
 * The bulk payload (docs/healthchecks.md): an object with optional arrays `http-checks`,
 * `tcp-checks`, `dns-checks`, `tls-checks` and `command-checks`, validated as a whole before
 * anything changes. Each definition goes through what a single POST does (admission.ts):
 * `<redacted>` resolved from the existing check of its name, TLS file names checked under
 * `healthchecks.tls-directory` (docs/security.md). Errors name the check and the field, never a
 * value.
 */
import { InvalidError } from "../platform/errors.js";
import { described, isPlainObject, type JsonSchema, ValidationError, type Validator } from "../platform/validation.js";
import { checkApiDefinitionFiles, type ExistingDefinition, parseApiDefinition } from "./admission.js";
import { checksKey } from "./config.js";
import { type Definition, type DefinitionRules, definitionSchema, KINDS } from "./definition.js";

/** The message for a one-off definition in a bulk payload (docs/healthchecks.md). */
export const ONE_OFF_IN_BULK = "one-off healthchecks are not allowed in bulk";

/** Whether a raw bulk payload lists at least one command check. */
export function hasCommandChecks(body: unknown): boolean {
  if (!isPlainObject(body)) return false;
  const list = body[checksKey("command")];
  return Array.isArray(list) && list.length > 0;
}

/**
 * The JSON Schema of a bulk payload under `rules`: each list holds definitions of its kind
 * (definition.ts), none of them one-off.
 */
function bulkSchema(rules: DefinitionRules): JsonSchema {
  const notOneOff = { not: { properties: { "one-off": { const: true } }, required: ["one-off"] } };
  const lists = KINDS.map((kind) => [
    checksKey(kind),
    { type: "array", items: { allOf: [definitionSchema(kind, rules), notOneOff] } },
  ]);
  return { type: "object", properties: Object.fromEntries(lists), additionalProperties: true };
}

/**
 * The validator of a bulk payload: every definition against the synchronous rules, in order, as
 * {@link parseBulk} does before the TLS files; described with the payload's schema.
 *
 * @throws InvalidError as {@link parseBulk} says
 */
export function bulkBody(rules: DefinitionRules, existing: ExistingDefinition): Validator<Definition[]> {
  return described((body) => parseBulkDefinitions(body, rules, existing), bulkSchema(rules));
}

/**
 * Validates a bulk payload: every definition against the synchronous rules first, then the TLS
 * files of each (asynchronous I/O). Unknown keys and unknown fields are ignored; an omitted list
 * counts as empty.
 *
 * @param existing finds the existing check of a name, for `<redacted>` values
 * @returns every definition, kinds in the order of KINDS, each list in its order, stored values in
 *   place of `<redacted>`
 * @throws InvalidError `invalid healthcheck <name>: <field>: <rule>` (the position, such as
 *   `http-checks[2]`, stands for the name when the definition has no usable one), `one-off
 *   healthchecks are not allowed in bulk`, or `duplicate healthcheck name <name> in the bulk payload`
 */
export async function parseBulk(
  body: unknown,
  rules: DefinitionRules,
  existing: ExistingDefinition,
): Promise<Definition[]> {
  return checkBulkFiles(parseBulkDefinitions(body, rules, existing), rules);
}

/** The synchronous part of {@link parseBulk}. */
function parseBulkDefinitions(body: unknown, rules: DefinitionRules, existing: ExistingDefinition): Definition[] {
  if (!isPlainObject(body)) {
    throw new InvalidError(
      `invalid bulk payload: must be an object with optional arrays ${KINDS.map(checksKey).join(", ")}`,
    );
  }
  const definitions: Definition[] = [];
  const names = new Set<string>();
  for (const kind of KINDS) {
    const key = checksKey(kind);
    const list = body[key];
    if (list === undefined || list === null) continue;
    if (!Array.isArray(list)) throw new InvalidError(`invalid bulk payload: ${key}: must be an array`);
    list.forEach((item: unknown, index) => {
      const label =
        isPlainObject(item) && typeof item.name === "string" && item.name !== "" ? item.name : `${key}[${index}]`;
      if (isPlainObject(item) && item["one-off"] === true) throw new InvalidError(ONE_OFF_IN_BULK);
      let definition: Definition;
      try {
        definition = parseApiDefinition(kind, item, rules, existing);
      } catch (error) {
        if (error instanceof ValidationError) throw new InvalidError(`invalid healthcheck ${label}: ${error.message}`);
        throw error;
      }
      if (names.has(definition.name)) {
        throw new InvalidError(`duplicate healthcheck name ${definition.name} in the bulk payload`);
      }
      names.add(definition.name);
      definitions.push(definition);
    });
  }
  return definitions;
}

/**
 * The asynchronous part of {@link parseBulk}: the TLS files of each definition.
 * @returns `definitions`
 */
export async function checkBulkFiles(definitions: Definition[], rules: DefinitionRules): Promise<Definition[]> {
  for (const definition of definitions) {
    try {
      await checkApiDefinitionFiles(definition, rules);
    } catch (error) {
      if (error instanceof ValidationError) {
        throw new InvalidError(`invalid healthcheck ${definition.name}: ${error.message}`);
      }
      throw error;
    }
  }
  return definitions;
}
