/**
 * Whether command checks may be created through the API (docs/healthchecks.md): a check that runs an
 * executable is only safe to accept from callers that are either local or authenticated.
 */
import { isLoopbackHost } from "../platform/hosts.js";

/** `healthchecks.allow-api-commands`: `auto`, or a fixed answer. */
export type AllowApiCommands = "auto" | boolean;

/**
 * Resolves `allow-api-commands`: `auto` is true when the server binds a loopback address or
 * requires registry tokens (`security.require-token`), false otherwise.
 */
export function apiCommandsAllowed(setting: AllowApiCommands, host: string, requireToken: boolean): boolean {
  if (setting !== "auto") return setting;
  return isLoopbackHost(host) || requireToken;
}
