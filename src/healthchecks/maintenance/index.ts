/**
 * Maintenance windows of healthchecks (docs/healthchecks.md): the calendar that the result path
 * (and the alerts) ask with `inMaintenance`, fed with the configured windows and with those the
 * API stores, which every instance of a cluster reads from the database.
 */
import type { Cluster } from "../../platform/cluster/index.js";
import type { Database } from "../../platform/database.js";
import { ConflictError, NotFoundError } from "../../platform/errors.js";
import { type ApiWindow, type CheckLookup, MaintenanceCalendar } from "./calendar.js";
import type { ConfiguredWindow } from "./config.js";
import { MaintenanceStore } from "./storage.js";

export { type ApiWindow, MaintenanceCalendar, type Occurrence, type WindowState } from "./calendar.js";
export { type ConfiguredWindow, maintenanceWindows } from "./config.js";

/** The change topic of API windows between instances (docs/cluster.md). */
const CHANGE_TOPIC = "healthchecks.maintenance";

/** API windows that have not ended, at most. */
export const MAX_API_WINDOWS = 1_000;

/** What {@link Maintenance} logs (a pino logger fits). */
export interface MaintenanceLogger {
  error(details: object, message: string): void;
}

/** What {@link Maintenance.start} works with. */
export interface MaintenanceOptions {
  readonly database: Database;
  /** `healthchecks.maintenance`. */
  readonly configured: readonly ConfiguredWindow[];
  /** Finds a registered check by name (a catalog's `get` fits). */
  readonly lookup: CheckLookup;
  readonly logger: MaintenanceLogger;
  /** Cluster mode: the other instances hear of created and deleted windows. */
  readonly cluster?: Cluster;
}

/**
 * The windows of one server: the calendar, and the changes to the API windows (stored first, then
 * applied, then announced to the other instances).
 */
export class Maintenance {
  readonly calendar: MaintenanceCalendar;
  readonly #store: MaintenanceStore;
  readonly #cluster: Cluster | undefined;

  private constructor(options: MaintenanceOptions) {
    this.calendar = new MaintenanceCalendar(options.lookup);
    this.calendar.setConfigured(options.configured);
    this.#store = new MaintenanceStore(options.database);
    this.#cluster = options.cluster;
  }

  /**
   * Builds the calendar and reads the stored windows; in cluster mode, reads them again whenever
   * another instance changes them (a failed read is logged, the calendar keeps what it had).
   * @throws Error when the database fails at start-up
   */
  static async start(options: MaintenanceOptions): Promise<Maintenance> {
    const maintenance = new Maintenance(options);
    await maintenance.refresh();
    const again = () =>
      maintenance.refresh().catch((error: unknown) => {
        options.logger.error({ err: error }, "could not read the maintenance windows of the other instances");
      });
    options.cluster?.changes.on(CHANGE_TOPIC, again);
    options.cluster?.changes.onResync(again);
    return maintenance;
  }

  /** Whether `checkName` is in a maintenance window at `atMs` (see {@link MaintenanceCalendar.inMaintenance}). */
  readonly inMaintenance = (checkName: string, atMs: number): boolean => this.calendar.inMaintenance(checkName, atMs);

  /** Replaces the configured windows (SIGHUP). */
  reload(configured: readonly ConfiguredWindow[]): void {
    this.calendar.setConfigured(configured);
  }

  /**
   * Reads the stored windows into the calendar.
   * @throws Error when the database fails
   */
  async refresh(nowMs: number = Date.now()): Promise<void> {
    this.calendar.setApi(await this.#store.list(nowMs));
  }

  /**
   * Stores a window and applies it; windows that ended are forgotten first.
   *
   * @throws ConflictError `maintenance window <name> is in the configuration file` or `... already
   *   exists`, or when {@link MAX_API_WINDOWS} windows have not ended
   */
  async create(window: ApiWindow, nowMs: number = Date.now()): Promise<void> {
    if (this.calendar.isConfigured(window.name)) {
      throw new ConflictError(`maintenance window ${window.name} is in the configuration file`);
    }
    await this.#store.deleteEnded(nowMs);
    if ((await this.#store.count(nowMs)) >= MAX_API_WINDOWS) {
      throw new ConflictError(`at most ${MAX_API_WINDOWS} maintenance windows can be planned through the API`);
    }
    if (!(await this.#store.insert(window, nowMs))) {
      throw new ConflictError(`maintenance window ${window.name} already exists`);
    }
    await this.#changed(nowMs);
  }

  /**
   * Deletes a window created through the API.
   *
   * @throws ConflictError for a configured window (`... is in the configuration file: remove it
   *   there`); NotFoundError for an unknown one
   */
  async remove(name: string, nowMs: number = Date.now()): Promise<void> {
    if (this.calendar.isConfigured(name)) {
      throw new ConflictError(
        `maintenance window ${name} is in the configuration file: remove it there and reload the configuration`,
      );
    }
    if (!(await this.#store.delete(name))) throw new NotFoundError(`maintenance window ${name} not found`);
    await this.#changed(nowMs);
  }

  async #changed(nowMs: number): Promise<void> {
    await this.refresh(nowMs);
    void this.#cluster?.changes.publish(CHANGE_TOPIC);
  }
}
