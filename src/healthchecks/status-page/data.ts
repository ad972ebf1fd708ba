/**
 * The data of the status page (docs/healthchecks.md), gathered from the registered checks, their
 * latest results and their history: only names, descriptions, states, uptime and response times.
 * A result's message, a definition's target, path or headers and every label but `group` stay out:
 * they are read nowhere here.
 */
import type { ResultHistory } from "../history.js";
import type { Incident } from "../incidents/index.js";
import type { HealthcheckResult } from "../results.js";
import { pageIncidents } from "./page-incidents.js";
import { type SelectableCheck, type StatusSelector, selectChecks } from "./selectors.js";
import {
  type StatusCheck,
  type StatusData,
  type StatusGroup,
  type StatusMaintenance,
  type StatusResponseTime,
  UPTIME_PERIODS,
  type UptimePeriod,
} from "./view.js";

/** The longest daily bar, in days (docs/healthchecks.md). */
export const MAX_BAR_DAYS = 90;

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/** Length of each period of {@link UPTIME_PERIODS}, in milliseconds. */
const PERIOD_MS: Readonly<Record<UptimePeriod, number>> = { "24h": DAY_MS, "7d": 7 * DAY_MS, "30d": 30 * DAY_MS };

/** The chart averages the response times of slices of this length (96 in 24 hours). */
export const RESPONSE_SLICE_MS = 15 * 60_000;

/** A registered check as the page needs it (a catalog `Registration` fits). */
export interface StatusCandidate extends SelectableCheck {
  readonly definition: SelectableCheck["definition"] & { readonly description: string };
  /** The labels results show (redacted); only `group` is read. */
  readonly labels?: Readonly<Record<string, string>>;
}

/**
 * The latest results as the page reads them (a `ResultStore` fits): their success and time only,
 * so that a result's message cannot reach the page.
 */
export interface StatusResults {
  get(name: string): Pick<HealthcheckResult, "success" | "timestamp" | "state"> | undefined;
}

/** The part of the history the page reads. */
export type StatusHistory = Pick<ResultHistory, "uptime" | "daily" | "responseTimes" | "stateSince">;

/** Maintenance windows on the page at most. */
export const MAX_SHOWN_WINDOWS = 10;

/** How far ahead the page shows maintenance windows: 7 days (docs/healthchecks.md). */
export const MAINTENANCE_HORIZON_MS = 7 * DAY_MS;

/** The maintenance calendar as the page reads it (maintenance/calendar.ts fits). */
export interface StatusWindows {
  /** The first occurrence of each window overlapping `[fromMs, toMs)`, soonest first. */
  windows(
    fromMs: number,
    toMs: number,
  ): readonly {
    readonly name: string;
    readonly selectors: readonly StatusSelector[];
    startMs: number;
    endMs: number;
  }[];
}

/** Where the page's data comes from. */
export interface StatusSources {
  readonly title: string;
  /** Plain text under the title; none when absent. */
  readonly description?: string;
  readonly selectors: readonly StatusSelector[];
  /** The registered checks, read at each call (checks come and go). */
  readonly checks: () => readonly StatusCandidate[];
  readonly results: StatusResults;
  readonly history: StatusHistory;
  /** `healthchecks.history.retention` in milliseconds; 0 keeps no history. */
  readonly retentionMs: number;
  /** The maintenance windows; none without it. */
  readonly maintenance?: StatusWindows;
}

/** Days of the daily bar: 90, or the days the retention reaches into when fewer; 0 without history. */
export function barDays(retentionMs: number): number {
  if (retentionMs <= 0) return 0;
  return Math.min(MAX_BAR_DAYS, Math.ceil(retentionMs / DAY_MS));
}

/**
 * The uptime periods worth showing: those the retention covers (a longer one would only repeat a
 * shorter one's figure under a misleading name), and at least 24 h when there is any history.
 */
export function shownPeriods(retentionMs: number): UptimePeriod[] {
  if (retentionMs <= 0) return [];
  return UPTIME_PERIODS.filter((period) => period === "24h" || PERIOD_MS[period] <= retentionMs);
}

/** The last `count` UTC days up to the one of `nowMs`, oldest first: `2026-05-01`. */
export function lastDays(count: number, nowMs: number): string[] {
  const today = Math.floor(nowMs / DAY_MS);
  return Array.from({ length: count }, (_, index) =>
    new Date((today - count + 1 + index) * DAY_MS).toISOString().slice(0, 10),
  );
}

/**
 * Averages `points` ({time: Unix milliseconds, duration: milliseconds}) over slices of
 * {@link RESPONSE_SLICE_MS} aligned to the epoch (so the chart does not shift between refreshes),
 * keeping those of the 24 hours before `nowMs`; a slice's time is its middle, bounded by `nowMs`.
 */
export function responseSlices(
  points: readonly { time: number; duration: number }[],
  nowMs: number,
): StatusResponseTime[] {
  const slices = new Map<number, { sum: number; count: number }>();
  for (const { time, duration } of points) {
    if (!(time > nowMs - DAY_MS && time <= nowMs) || !Number.isFinite(duration)) continue;
    const slice = Math.floor(time / RESPONSE_SLICE_MS);
    const entry = slices.get(slice) ?? { sum: 0, count: 0 };
    entry.sum += duration;
    entry.count += 1;
    slices.set(slice, entry);
  }
  return [...slices.entries()]
    .sort(([a], [b]) => a - b)
    .map(([slice, { sum, count }]) => ({
      time: new Date(Math.min((slice + 0.5) * RESPONSE_SLICE_MS, nowMs)).toISOString(),
      duration: Math.round((sum / count) * 10) / 10,
    }));
}

/** The `group` label of a check, when it has a non-empty one. */
function groupOf(check: StatusCandidate): string | undefined {
  const group = check.labels?.group;
  return group === undefined || group === "" ? undefined : group;
}

/** What the history said of one check at one moment (what the page caches longest). */
export interface CheckHistory {
  /** Ratios of the periods of {@link shownPeriods}. */
  readonly uptime: Readonly<Partial<Record<UptimePeriod, number | null>>>;
  /** Ratio of each day (`2026-05-01`) the history has. */
  readonly daily: ReadonlyMap<string, number | null>;
  readonly responseTimes: readonly StatusResponseTime[];
  /**
   * Since when (Unix milliseconds) the state held, and which state: the latest result's success
   * when the history was read. A state that changed since then holds since an unknown moment.
   */
  readonly since?: { readonly ms: number; readonly success: boolean };
}

/**
 * Reads the history of `names` at `nowMs`: the daily ratios of all of them in one call, then
 * each one's uptime, state start and response times. Nothing is read without retention.
 *
 * @throws Error when the database fails
 */
export async function readHistories(
  sources: Pick<StatusSources, "history" | "results" | "retentionMs">,
  names: readonly string[],
  nowMs: number,
): Promise<Map<string, CheckHistory>> {
  const { history, results, retentionMs } = sources;
  const histories = new Map<string, CheckHistory>();
  if (retentionMs <= 0 || names.length === 0) return histories;
  const periods = shownPeriods(retentionMs);
  const daily = await history.daily(names, barDays(retentionMs), nowMs);
  await Promise.all(
    names.map(async (name) => {
      const success = results.get(name)?.success;
      const [uptime, sinceMs, times] = await Promise.all([
        history.uptime(name, nowMs),
        success === undefined ? undefined : history.stateSince(name, nowMs),
        history.responseTimes(name, nowMs - DAY_MS, nowMs),
      ]);
      histories.set(name, {
        uptime: Object.fromEntries(periods.map((period) => [period, uptime[period]])),
        daily: new Map((daily.get(name) ?? []).map((day) => [day.day, day.ratio])),
        responseTimes: responseSlices(times, nowMs),
        ...(sinceMs === undefined || success === undefined ? {} : { since: { ms: sinceMs, success } }),
      });
    }),
  );
  return histories;
}

/**
 * The maintenance windows of the `selected` checks going on at `nowMs` or starting within
 * {@link MAINTENANCE_HORIZON_MS}, each naming only the selected checks it covers (a window of no
 * shown check is left out), at most {@link MAX_SHOWN_WINDOWS}.
 */
export function shownWindows(
  calendar: StatusWindows | undefined,
  selected: readonly StatusCandidate[],
  nowMs: number,
): StatusMaintenance[] {
  if (calendar === undefined || selected.length === 0) return [];
  const shown: StatusMaintenance[] = [];
  for (const window of calendar.windows(nowMs, nowMs + MAINTENANCE_HORIZON_MS)) {
    const checks = selectChecks(window.selectors, selected).map((check) => check.definition.name);
    if (checks.length === 0) continue;
    shown.push({
      name: window.name,
      start: new Date(window.startMs).toISOString(),
      end: new Date(window.endMs).toISOString(),
      ongoing: window.startMs <= nowMs,
      checks,
    });
    if (shown.length >= MAX_SHOWN_WINDOWS) break;
  }
  return shown;
}

/**
 * The page's data at `nowMs`: the `selected` checks with their latest state (read now), grouped by
 * their `group` label (groups in the order of their first check, checks without a group last), and
 * what `histories` says of each (a check it does not know has no history yet), and the page's
 * `incidents` as it shows them (page-incidents.ts).
 */
export function assembleStatus(
  sources: Pick<StatusSources, "title" | "description" | "results" | "retentionMs" | "maintenance">,
  selected: readonly StatusCandidate[],
  histories: ReadonlyMap<string, CheckHistory>,
  nowMs: number,
  incidents: readonly Incident[] = [],
): StatusData {
  const { results, retentionMs } = sources;
  const periods = shownPeriods(retentionMs);
  const days = lastDays(barDays(retentionMs), nowMs);
  const named = new Map<string, StatusCheck[]>();
  const ungrouped: StatusCheck[] = [];
  for (const candidate of selected) {
    const { name, description } = candidate.definition;
    const result = results.get(name);
    const history = histories.get(name);
    const since = history?.since;
    const check: StatusCheck = {
      name,
      description,
      state: result === undefined ? "unknown" : result.success ? "up" : "down",
      // Only for the state the history saw; a state cannot have started after now.
      since:
        result === undefined || since === undefined || since.success !== result.success
          ? null
          : new Date(Math.min(since.ms, nowMs)).toISOString(),
      checked: result?.timestamp ?? null,
      uptime: Object.fromEntries(periods.map((period) => [period, history?.uptime[period] ?? null])),
      daily: days.map((day) => ({ day, ratio: history?.daily.get(day) ?? null })),
      "response-times": history?.responseTimes ?? [],
      ...(result?.state === undefined ? {} : { heartbeat: result.state }),
    };
    const group = groupOf(candidate);
    if (group === undefined) ungrouped.push(check);
    else if (named.has(group)) named.get(group)?.push(check);
    else named.set(group, [check]);
  }
  const groups: StatusGroup[] = [...named.entries()].map(([name, members]) => ({ name, checks: members }));
  if (ungrouped.length > 0) groups.push({ name: null, checks: ungrouped });
  const shownChecks = new Set(selected.map((check) => check.definition.name));
  return {
    title: sources.title,
    description: sources.description ?? "",
    incidents: pageIncidents(incidents, shownChecks, nowMs),
    generated: new Date(nowMs).toISOString(),
    periods,
    days: days.length,
    maintenance: shownWindows(sources.maintenance, selected, nowMs),
    groups,
  };
}

/**
 * Gathers the page's data at `nowMs` in one go: the checks the selectors select now, their latest
 * results and their history, and the page's `incidents` (none by default). (The routes cache the history longer than the states.)
 *
 * @throws Error when the history cannot be read (the database is down)
 */
export async function collectStatus(
  sources: StatusSources,
  nowMs: number,
  incidents: readonly Incident[] = [],
): Promise<StatusData> {
  const selected = selectChecks(sources.selectors, sources.checks());
  const names = selected.map((check) => check.definition.name);
  return assembleStatus(sources, selected, await readHistories(sources, names, nowMs), nowMs, incidents);
}
