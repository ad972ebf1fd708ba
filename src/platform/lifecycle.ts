/**
 * Reloads on SIGHUP (docs/operations.md): modules register what they reload (configuration-file
 * healthchecks, stream directories); the server re-reads the configuration file and calls them.
 */
import type { VigieConfig } from "./config.js";

/** Re-applies the reloadable parts of a module from a freshly validated configuration. */
export type ReloadHandler = (config: VigieConfig) => void | Promise<void>;

/** The reload hook point of one server. */
export class Lifecycle {
  readonly #handlers: Array<{ name: string; handler: ReloadHandler }> = [];

  /** Registers a reload handler; `name` identifies it in logs when it fails. */
  onReload(name: string, handler: ReloadHandler): void {
    this.#handlers.push({ name, handler });
  }

  /**
   * Runs every handler in registration order, each even if an earlier one failed.
   * @returns the names and errors of the handlers that failed (empty when all succeeded)
   */
  async reload(config: VigieConfig): Promise<Array<{ name: string; error: unknown }>> {
    const failures: Array<{ name: string; error: unknown }> = [];
    for (const { name, handler } of this.#handlers) {
      try {
        await handler(config);
      } catch (error) {
        failures.push({ name, error });
      }
    }
    return failures;
  }
}
