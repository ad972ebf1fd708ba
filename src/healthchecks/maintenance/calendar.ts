/**
 * The maintenance calendar (docs/healthchecks.md): which check is in a maintenance window at a
 * given time, and which windows come when. Plain TypeScript, no Fastify, no SQL: the configured
 * windows come from `healthchecks.maintenance`, those of the API from the database (storage.ts of
 * this folder), both handed over whole.
 *
 * {@link MaintenanceCalendar.inMaintenance} runs on the result path (about 1 000 times a second
 * with 10 000 checks at 10 s): it keeps the windows of each check, and for each window the span
 * of time over which its answer holds, so that a schedule is evaluated only when that span ends.
 */
import type { Cron } from "croner";
import { parseSelector, type SelectableCheck, type StatusSelector, selects } from "../status-page/selectors.js";
import { type ConfiguredWindow, scheduleOf } from "./config.js";

/** Where a window comes from. */
export type WindowSource = "configuration" | "api";

/** A window created through the API: one span of time. */
export interface ApiWindow {
  readonly name: string;
  /** Names or label selectors, as written. */
  readonly checks: readonly string[];
  /** Milliseconds since the epoch; the window is `[startMs, endMs)`. */
  readonly startMs: number;
  readonly endMs: number;
}

/** One occurrence of a window. */
export interface Occurrence {
  readonly name: string;
  readonly source: WindowSource;
  /** The window's selectors, parsed. */
  readonly selectors: readonly StatusSelector[];
  /** Milliseconds since the epoch; the occurrence is `[startMs, endMs)`. */
  readonly startMs: number;
  readonly endMs: number;
}

/** A window as `GET /maintenance` describes it at one moment. */
export interface WindowState {
  readonly name: string;
  readonly source: WindowSource;
  readonly checks: readonly string[];
  readonly selectors: readonly StatusSelector[];
  /** The configured window as written; undefined for an API window. */
  readonly configured?: ConfiguredWindow;
  /** The API window as stored; undefined for a configured window. */
  readonly api?: ApiWindow;
  /** The occurrence going on, if any. */
  readonly current?: { readonly startMs: number; readonly endMs: number };
  /** The first occurrence that starts after the moment, if any. */
  readonly next?: { readonly startMs: number; readonly endMs: number };
}

/** A window made ready for the questions, with the cache of its last answer. */
interface Compiled {
  readonly name: string;
  readonly source: WindowSource;
  readonly checks: readonly string[];
  readonly selectors: readonly StatusSelector[];
  readonly configured?: ConfiguredWindow;
  readonly api?: ApiWindow;
  /** The length of each occurrence, milliseconds. */
  readonly durationMs: number;
  /** The start of the first occurrence strictly after `afterMs`, or undefined when none comes. */
  readonly nextStart: (afterMs: number) => number | undefined;
  /** Over `[fromMs, untilMs)` the window is `active` (or not): the cache of {@link MaintenanceCalendar.inMaintenance}. */
  fromMs: number;
  untilMs: number;
  active: boolean;
}

/** Check names whose windows the calendar keeps at most before starting afresh. */
const MAX_CACHED_CHECKS = 200_000;

function compileConfigured(window: ConfiguredWindow): Compiled {
  const schedule: Cron = scheduleOf(window.start, window.timezone, "start");
  return {
    name: window.name,
    source: "configuration",
    checks: window.checks,
    selectors: window.checks.map(parseSelector),
    configured: window,
    durationMs: window.duration.milliseconds,
    nextStart: (afterMs) => schedule.nextRun(new Date(afterMs))?.getTime(),
    fromMs: 0,
    untilMs: 0,
    active: false,
  };
}

function compileApi(window: ApiWindow): Compiled {
  return {
    name: window.name,
    source: "api",
    checks: window.checks,
    selectors: window.checks.map(parseSelector),
    api: window,
    durationMs: window.endMs - window.startMs,
    nextStart: (afterMs) => (window.startMs > afterMs ? window.startMs : undefined),
    fromMs: 0,
    untilMs: 0,
    active: false,
  };
}

/** The start of the occurrence of `window` going on at `atMs`, or undefined. */
function currentStart(window: Compiled, atMs: number): number | undefined {
  // The first occurrence that ends after atMs: it starts after atMs - duration.
  const start = window.nextStart(atMs - window.durationMs);
  return start !== undefined && start <= atMs ? start : undefined;
}

/** What the calendar needs of the checks: one by name (a catalog fits), its labels for selectors. */
export type CheckLookup = (name: string) => SelectableCheck | undefined;

/**
 * The configured and API windows, and the questions about them. Windows are replaced whole
 * ({@link setConfigured} on start and SIGHUP, {@link setApi} when the stored ones change).
 */
export class MaintenanceCalendar {
  readonly #lookup: CheckLookup;
  #configured: Compiled[] = [];
  #api: Compiled[] = [];
  #all: Compiled[] = [];
  /** The windows of each check name, and the definition they were chosen for (labels may change). */
  readonly #byCheck = new Map<string, { readonly definition: object | undefined; readonly windows: Compiled[] }>();

  /**
   * @param lookup finds a registered check by name; a name it does not know is matched by name only
   */
  constructor(lookup: CheckLookup) {
    this.#lookup = lookup;
  }

  /**
   * Replaces the configured windows (validated by config.ts).
   * @throws ValidationError only for a window config.ts would have refused
   */
  setConfigured(windows: readonly ConfiguredWindow[]): void {
    this.#configured = windows.map(compileConfigured);
    this.#changed();
  }

  /** Replaces the API windows. */
  setApi(windows: readonly ApiWindow[]): void {
    this.#api = windows.map(compileApi);
    this.#changed();
  }

  /** Whether a configured window has this name. */
  isConfigured(name: string): boolean {
    return this.#configured.some((window) => window.name === name);
  }

  /** Whether any window has this name. */
  has(name: string): boolean {
    return this.#all.some((window) => window.name === name);
  }

  /**
   * Whether `checkName` is in one of its maintenance windows at `atMs` (milliseconds since the
   * epoch; windows include their start and exclude their end). Never throws. With no window at all
   * it costs one comparison; otherwise a map lookup and, per window of the check, a comparison
   * with the span its last answer holds over.
   */
  inMaintenance(checkName: string, atMs: number): boolean {
    if (this.#all.length === 0) return false;
    for (const window of this.#windowsOf(checkName)) {
      if (!(atMs >= window.fromMs && atMs < window.untilMs)) this.#evaluate(window, atMs);
      if (window.active) return true;
    }
    return false;
  }

  /**
   * The occurrences of every window that overlap `[fromMs, toMs)`, at most `perWindow` of each
   * (the first ones), sorted by start then name. The status page asks for the next 7 days, one each.
   *
   * @param perWindow at least 1
   */
  windows(fromMs: number, toMs: number, perWindow = 1): Occurrence[] {
    const occurrences: Occurrence[] = [];
    for (const window of this.#all) {
      let start = window.nextStart(fromMs - window.durationMs);
      for (let count = 0; start !== undefined && start < toMs && count < perWindow; count++) {
        const { name, source, selectors, durationMs } = window;
        occurrences.push({ name, source, selectors, startMs: start, endMs: start + durationMs });
        start = window.nextStart(start);
      }
    }
    return occurrences.sort((a, b) => a.startMs - b.startMs || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /** Every window at `nowMs`: configured ones first, in their order, then the API ones by name. */
  describe(nowMs: number): WindowState[] {
    return this.#all.map((window) => {
      const currentAt = currentStart(window, nowMs);
      const nextAt = window.nextStart(nowMs);
      const span = (startMs: number) => ({ startMs, endMs: startMs + window.durationMs });
      return {
        name: window.name,
        source: window.source,
        checks: window.checks,
        selectors: window.selectors,
        ...(window.configured === undefined ? {} : { configured: window.configured }),
        ...(window.api === undefined ? {} : { api: window.api }),
        ...(currentAt === undefined ? {} : { current: span(currentAt) }),
        ...(nextAt === undefined ? {} : { next: span(nextAt) }),
      };
    });
  }

  #changed(): void {
    // A stored window named like a configured one (configured after it was created) gives way.
    this.#all = [...this.#configured, ...this.#api.filter((window) => !this.isConfigured(window.name))];
    this.#byCheck.clear();
  }

  #windowsOf(name: string): Compiled[] {
    const check = this.#lookup(name);
    const definition = check?.definition;
    const cached = this.#byCheck.get(name);
    if (cached !== undefined && cached.definition === definition) return cached.windows;
    const subject: SelectableCheck = check ?? { definition: { name } };
    const windows = this.#all.filter((window) => window.selectors.some((selector) => selects(selector, subject)));
    if (this.#byCheck.size >= MAX_CACHED_CHECKS) this.#byCheck.clear();
    this.#byCheck.set(name, { definition, windows });
    return windows;
  }

  /** Computes whether `window` is active at `atMs` and over which span that answer holds. */
  #evaluate(window: Compiled, atMs: number): void {
    const start = currentStart(window, atMs);
    if (start !== undefined) {
      window.active = true;
      window.fromMs = start;
      window.untilMs = start + window.durationMs;
      return;
    }
    // Inactive until the next start: no occurrence starts in (atMs - duration, next start).
    const next = window.nextStart(atMs);
    window.active = false;
    window.fromMs = atMs;
    window.untilMs = next ?? Number.POSITIVE_INFINITY;
  }
}
