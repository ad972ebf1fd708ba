/**
 * What a badge says (docs/healthchecks.md): which checks have badges, the subjects a badge can show
 * (state, uptime over a window, mean response time), the words and colours of each, and the JSON
 * shields.io's endpoint badges read. Plain TypeScript: the routes read the values, this file words
 * them.
 */
import { type SelectableCheck, type StatusSelector, selects } from "../status-page/selectors.js";
import type { Badge, BadgeColor } from "./svg.js";

/** The uptime windows a badge can show, shortest first. */
export const BADGE_WINDOWS = ["1h", "24h", "7d", "30d"] as const;

/** One of {@link BADGE_WINDOWS}. */
export type BadgeWindow = (typeof BADGE_WINDOWS)[number];

/** What a badge shows. */
export type BadgeSubject =
  | { readonly kind: "status" }
  | { readonly kind: "uptime"; readonly window: BadgeWindow }
  | { readonly kind: "response-time" };

/** Every subject, in the order the routes are registered. */
export const BADGE_SUBJECTS: readonly BadgeSubject[] = [
  { kind: "status" },
  ...BADGE_WINDOWS.map((window): BadgeSubject => ({ kind: "uptime", window })),
  { kind: "response-time" },
];

/** The part of a badge's path after the check's name, without the extension: `uptime/24h`. */
export function subjectPath(subject: BadgeSubject): string {
  return subject.kind === "uptime" ? `uptime/${subject.window}` : subject.kind;
}

/** The label of a check that gives it badges whatever the status page shows: `public: "true"`. */
export const PUBLIC_LABEL = "public";

/** The status page as the badges read it: whether it is on, and its selectors. */
export interface BadgePage {
  readonly enabled: boolean;
  readonly selectors: readonly StatusSelector[];
}

/**
 * Whether `check` has badges: it is labelled `public: "true"`, or a status page (`pages`, one or
 * several) is enabled and shows it (one of its selectors selects it, or it has none and shows
 * every check).
 */
export function hasBadge(check: SelectableCheck, pages: BadgePage | readonly BadgePage[]): boolean {
  if (check.definition.labels?.[PUBLIC_LABEL] === "true") return true;
  const list: readonly BadgePage[] = "enabled" in pages ? [pages] : pages;
  return list.some(
    (page) =>
      page.enabled && (page.selectors.length === 0 || page.selectors.some((selector) => selects(selector, check))),
  );
}

/** The colour of an uptime ratio (0 to 1): 99.9 % and more brightgreen, 99 % green, 95 % yellow, less red. */
export function uptimeColor(ratio: number): BadgeColor {
  if (ratio >= 0.999) return "brightgreen";
  if (ratio >= 0.99) return "green";
  if (ratio >= 0.95) return "yellow";
  return "red";
}

/** The colour of a mean response time in milliseconds: under 200 brightgreen, under 1 000 yellow, else orange. */
export function responseTimeColor(milliseconds: number): BadgeColor {
  if (milliseconds < 200) return "brightgreen";
  if (milliseconds < 1_000) return "yellow";
  return "orange";
}

/**
 * An uptime ratio (0 to 1) as a percentage with at most two decimals, rounded down so that only a
 * period without failure reads 100 %: `100%`, `99.9%`, `99.93%`.
 */
export function percentText(ratio: number): string {
  // The small addition absorbs the binary error of ratio × 10 000 (0.9993 × 10 000 = 9992.999…).
  const hundredths = Math.min(10_000, Math.max(0, Math.floor(ratio * 10_000 + 1e-6)));
  return `${hundredths / 100}%`;
}

/** A duration in milliseconds as a badge says it: `87 ms` under a second, else seconds to 3 digits (`1.25 s`). */
export function durationText(milliseconds: number): string {
  const rounded = Math.round(milliseconds);
  if (rounded < 1_000) return `${rounded} ms`;
  return `${Number((milliseconds / 1_000).toPrecision(3))} s`;
}

/** The message of a badge whose period holds no result. */
export const NO_DATA = "no data";

/**
 * The state badge: the check's name as label, `up` (brightgreen), `down` (red) or `unknown`
 * (lightgrey, no result yet) as message.
 *
 * @param success the latest result's success; undefined without a result
 */
export function statusBadge(name: string, success: boolean | undefined): Badge {
  const message = success === undefined ? "unknown" : success ? "up" : "down";
  const color = success === undefined ? "lightgrey" : success ? "brightgreen" : "red";
  return { label: name, message, color, title: `${name} status: ${message}` };
}

/**
 * The uptime badge of `window`: label `uptime 24h`, the percentage as message (coloured by
 * {@link uptimeColor}), `no data` in lightgrey when the window holds no counted result.
 *
 * @param ratio successful ÷ all results of the window, maintenance left out; null without results
 */
export function uptimeBadge(name: string, window: BadgeWindow, ratio: number | null): Badge {
  const label = `uptime ${window}`;
  const message = ratio === null ? NO_DATA : percentText(ratio);
  const color = ratio === null ? "lightgrey" : uptimeColor(ratio);
  return { label, message, color, title: `${name} ${label}: ${message}` };
}

/**
 * The response time badge: label `response time`, the mean duration of the last 24 hours' successful
 * results as message (coloured by {@link responseTimeColor}), `no data` in lightgrey without one.
 *
 * @param milliseconds the mean duration; null without successful results
 */
export function responseTimeBadge(name: string, milliseconds: number | null): Badge {
  const label = "response time";
  const message = milliseconds === null ? NO_DATA : durationText(milliseconds);
  const color = milliseconds === null ? "lightgrey" : responseTimeColor(milliseconds);
  return { label, message, color, title: `${name} ${label} 24h: ${message}` };
}

/** A badge in shields.io's endpoint format (its documentation: "Endpoint Badge"), schema version 1. */
export interface ShieldsEndpoint {
  readonly schemaVersion: 1;
  readonly label: string;
  readonly message: string;
  readonly color: BadgeColor;
}

/** The badge as shields.io's endpoint badges read it: label, message and colour name. */
export function shieldsEndpoint(badge: Badge): ShieldsEndpoint {
  return { schemaVersion: 1, label: badge.label, message: badge.message, color: badge.color };
}
