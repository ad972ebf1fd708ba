/**
 * What a definition that comes through the API goes through before it is accepted, for a single
 * POST, a one-off and each definition of a bulk payload (docs/healthchecks.md,
 * docs/security.md):
 *
 * 1. the rules of definition.ts, TLS files being names relative to `healthchecks.tls-directory`;
 * 2. a heartbeat without `key` given the existing heartbeat's key, or a new one;
 *    `<redacted>` put back: a string containing `<redacted>` takes the value of the existing check
 *    of the same name (from the API or the configuration file) at the same place, when that
 *    value's redacted form is exactly the posted string (redaction.ts), so GET → edit → POST
 *    round-trips. A one-off check resolves it the same way (it reads the existing check, and never
 *    changes it). The result is validated again, as if the values had been sent;
 * 3. asynchronously, after every synchronous rule: each TLS file name leads to a regular file of at
 *    most 1 MiB in the directory (tls-files.ts).
 *
 * Plain TypeScript: no Fastify, no SQL.
 */
import { described, type Validator } from "../platform/validation.js";
import type { Definition, DefinitionRules, Kind } from "./definition.js";
import { definitionSchema, toJson, validateDefinition } from "./definition.js";
import { newKey } from "./heartbeat/fields.js";
import { containsRedacted, restoreRedacted } from "./redaction.js";
import { checkTlsFiles, type TlsFileFields } from "./tls-files.js";

/** The registered check of a name, or undefined (the catalog's `get`). */
export type ExistingDefinition = (name: string) => Definition | undefined;

const API = { unknownKeys: "ignore", tlsFiles: "names" } as const;

/**
 * Steps 1 and 2: validates an API definition of `kind` and puts stored values back for its
 * `<redacted>` strings.
 *
 * @param body the parsed JSON body (or one item of a bulk list)
 * @param existing finds the existing check of a name
 * @returns the definition to store or run, with the stored values in place of `<redacted>`
 * @throws ValidationError naming the field: a rule of definition.ts, or `headers.Authorization:
 *   <redacted> does not match the stored value of an existing healthcheck of this name; send the
 *   value itself`; never with the value
 */
export function parseApiDefinition(
  kind: Kind,
  body: unknown,
  rules: DefinitionRules,
  existing: ExistingDefinition,
): Definition {
  const posted = withKey(validateDefinition(kind, body, rules, API), existing);
  const json = toJson(posted);
  if (!containsRedacted(json)) return posted;
  const current = existing(posted.name);
  const restored = restoreRedacted(json, current === undefined ? undefined : toJson(current));
  return validateDefinition(kind, restored, rules, API);
}

/**
 * A heartbeat posted without `key` keeps the key of the existing heartbeat of its name, so that
 * re-posting a definition does not break the cron lines that ping it; a new heartbeat gets a new
 * key of 128 random bits (docs/healthchecks.md, "Heartbeat checks"). Other kinds pass unchanged.
 */
function withKey(definition: Definition, existing: ExistingDefinition): Definition {
  if (definition.kind !== "heartbeat" || definition.key !== undefined) return definition;
  const current = existing(definition.name);
  const key = current?.kind === "heartbeat" && current.key !== undefined ? current.key : newKey();
  return { ...definition, key };
}

/**
 * Steps 1 and 2 as the validator of a body posted to `POST /healthcheck/<kind>`, described with
 * the kind's schema (definition.ts) for the API description.
 */
export function apiDefinitionBody(
  kind: Kind,
  rules: DefinitionRules,
  existing: ExistingDefinition,
): Validator<Definition> {
  return described((value) => parseApiDefinition(kind, value, rules, existing), definitionSchema(kind, rules));
}

/** The TLS file fields of a definition (http and tls checks have some). */
function tlsFields(definition: Definition): TlsFileFields {
  return definition.kind === "http" || definition.kind === "tls" ? definition : {};
}

/**
 * Step 3: checks that the TLS file names of an API definition lead to regular files of at most
 * 1 MiB in `healthchecks.tls-directory` (asynchronous I/O).
 *
 * @throws ValidationError `cert: must name a regular file of at most 1 MiB in
 *   healthchecks.tls-directory`, the same for a missing file, a directory, a special file or a
 *   file too large
 */
export function checkApiDefinitionFiles(definition: Definition, rules: DefinitionRules): Promise<void> {
  return checkTlsFiles(tlsFields(definition), rules.tlsDirectory);
}
