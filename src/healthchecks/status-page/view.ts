/**
 * The status page's data and view (docs/healthchecks.md), shared by the server, which renders the
 * first view as HTML (status-html.ts), and by the refresh script in the browser (browser/status.ts),
 * which renders the same view from `GET /status/data` and patches the page with it. One view for
 * both keeps the refreshed page identical to a reloaded one.
 *
 * Plain TypeScript without Node or DOM APIs: it is typechecked and bundled for both.
 */

/** The state of a check as the page says it: its latest result, or none yet. */
export type CheckState = "up" | "down" | "unknown";

/** The uptime periods the page can show, shortest first. */
export const UPTIME_PERIODS = ["24h", "7d", "30d"] as const;

/** One of {@link UPTIME_PERIODS}. */
export type UptimePeriod = (typeof UPTIME_PERIODS)[number];

/** The uptime of one UTC day. */
export interface StatusDay {
  /** `2026-05-01`. */
  readonly day: string;
  /** Successful ÷ all results of the day; null when the day has none. */
  readonly ratio: number | null;
}

/** The average response time of a slice of the last 24 hours. */
export interface StatusResponseTime {
  /** Middle of the slice, RFC 3339. */
  readonly time: string;
  /** Milliseconds. */
  readonly duration: number;
}

/**
 * A check as the public page shows it: nothing but its name, description, state and uptime (never a
 * target, header, path, result message or label other than `group`).
 */
export interface StatusCheck {
  readonly name: string;
  readonly description: string;
  readonly state: CheckState;
  /** Since when the state holds (RFC 3339); null when the history does not tell. */
  readonly since: string | null;
  /** End of the latest execution (RFC 3339); null before the first one. */
  readonly checked: string | null;
  /** Successful ÷ all results of each period of {@link StatusData.periods}; null when none. */
  readonly uptime: Readonly<Partial<Record<UptimePeriod, number | null>>>;
  /** One entry per day of {@link StatusData.days}, oldest first, today last. */
  readonly daily: readonly StatusDay[];
  /** Oldest first; empty without history. */
  readonly "response-times": readonly StatusResponseTime[];
  /** Heartbeat checks: the heartbeat's state; absent for other kinds. */
  readonly heartbeat?: "new" | "up" | "started" | "late" | "down";
}

/** Checks sharing a `group` label; `name` is null for the checks without one. */
export interface StatusGroup {
  readonly name: string | null;
  readonly checks: readonly StatusCheck[];
}

/** A maintenance window of shown checks, ongoing or coming within 7 days. */
export interface StatusMaintenance {
  readonly name: string;
  /** RFC 3339; the window is `[start, end)`. */
  readonly start: string;
  readonly end: string;
  readonly ongoing: boolean;
  /** The names of the shown checks it covers. */
  readonly checks: readonly string[];
}

/** The statuses of an incident, in the order they usually come. */
export const INCIDENT_STATES = ["investigating", "identified", "monitoring", "resolved"] as const;

/** One of {@link INCIDENT_STATES}. */
export type IncidentState = (typeof INCIDENT_STATES)[number];

/** An entry of an incident's timeline as the page shows it. */
export interface StatusIncidentUpdate {
  /** RFC 3339. */
  readonly time: string;
  readonly status: IncidentState;
  /** Plain text (rendered as text, never as HTML); long ones cut with `…`. */
  readonly message: string;
}

/** An incident as the page shows it. */
export interface StatusIncident {
  readonly id: string;
  readonly title: string;
  /** The status of its latest update. */
  readonly status: IncidentState;
  /** RFC 3339: its first update. */
  readonly started: string;
  /** RFC 3339 when resolved; null while open. */
  readonly resolved: string | null;
  /** The shown checks it concerns. */
  readonly checks: readonly string[];
  /** Newest first; the page shows a few (the API and the feed have all). */
  readonly updates: readonly StatusIncidentUpdate[];
  /** How many older updates the page leaves out. */
  readonly earlier: number;
}

/** What `GET /status/data` answers, and what the page shows. */
export interface StatusData {
  readonly title: string;
  /** Plain text under the title; `""` for none. */
  readonly description: string;
  /** Open incidents first, then those resolved within 14 days; each most recently updated first. */
  readonly incidents: readonly StatusIncident[];
  /** When the data was computed (RFC 3339): the page's "now". */
  readonly generated: string;
  /** The uptime periods shown: those the history retention covers. */
  readonly periods: readonly UptimePeriod[];
  /** Length of the daily bar: 90, or the days of the retention when shorter; 0 without history. */
  readonly days: number;
  /**
   * Maintenance windows ongoing or within 7 days, soonest first. The page says them in its header,
   * as rendered by the server (html.ts): the refresh script leaves them as they are.
   */
  readonly maintenance: readonly StatusMaintenance[];
  readonly groups: readonly StatusGroup[];
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);
const isRatio = (value: unknown): value is number | null =>
  value === null || (typeof value === "number" && value >= 0 && value <= 1);
const isTime = (value: unknown): value is string => typeof value === "string" && !Number.isNaN(Date.parse(value));
const isPeriod = (value: unknown): value is UptimePeriod => UPTIME_PERIODS.some((period) => period === value);
const isState = (value: unknown): value is CheckState => value === "up" || value === "down" || value === "unknown";

function isDay(value: unknown): value is StatusDay {
  return isObject(value) && typeof value.day === "string" && isRatio(value.ratio);
}

function isResponseTime(value: unknown): value is StatusResponseTime {
  return isObject(value) && isTime(value.time) && typeof value.duration === "number" && value.duration >= 0;
}

function isCheck(value: unknown): value is StatusCheck {
  if (!isObject(value)) return false;
  const { uptime, daily } = value;
  return (
    typeof value.name === "string" &&
    typeof value.description === "string" &&
    isState(value.state) &&
    (value.since === null || isTime(value.since)) &&
    (value.checked === null || isTime(value.checked)) &&
    isObject(uptime) &&
    Object.entries(uptime).every(([period, ratio]) => isPeriod(period) && isRatio(ratio)) &&
    Array.isArray(daily) &&
    daily.every(isDay) &&
    Array.isArray(value["response-times"]) &&
    value["response-times"].every(isResponseTime)
  );
}

const isIncidentState = (value: unknown): value is IncidentState => INCIDENT_STATES.some((state) => state === value);
const isStrings = (value: unknown): value is string[] =>
  Array.isArray(value) && value.every((item) => typeof item === "string");

function isIncidentUpdate(value: unknown): value is StatusIncidentUpdate {
  return isObject(value) && isTime(value.time) && isIncidentState(value.status) && typeof value.message === "string";
}

function isIncident(value: unknown): value is StatusIncident {
  return (
    isObject(value) &&
    typeof value.id === "string" &&
    typeof value.title === "string" &&
    isIncidentState(value.status) &&
    isTime(value.started) &&
    (value.resolved === null || isTime(value.resolved)) &&
    isStrings(value.checks) &&
    Array.isArray(value.updates) &&
    value.updates.every(isIncidentUpdate) &&
    typeof value.earlier === "number"
  );
}

function isGroup(value: unknown): value is StatusGroup {
  return (
    isObject(value) &&
    (value.name === null || typeof value.name === "string") &&
    Array.isArray(value.checks) &&
    value.checks.every(isCheck)
  );
}

/**
 * Whether `value` is a {@link StatusData}, checked to its leaves: the refresh script trusts nothing
 * it did not check, and the tests check the route's answer with it.
 */
export function isStatusData(value: unknown): value is StatusData {
  return (
    isObject(value) &&
    typeof value.title === "string" &&
    typeof value.description === "string" &&
    Array.isArray(value.incidents) &&
    value.incidents.every(isIncident) &&
    isTime(value.generated) &&
    Array.isArray(value.periods) &&
    value.periods.every(isPeriod) &&
    typeof value.days === "number" &&
    Number.isInteger(value.days) &&
    value.days >= 0 &&
    Array.isArray(value.groups) &&
    value.groups.every(isGroup)
  );
}

// ---------------------------------------------------------------------------------------------
// The view: a small tree of elements and text that the server serialises and the browser patches.

/** An element of the view. Attribute values and text are raw: each renderer escapes or sets them. */
export interface ViewElement {
  readonly tag: string;
  readonly attributes: Readonly<Record<string, string>>;
  readonly children: readonly ViewNode[];
}

/** A node of the view: an element or text. */
export type ViewNode = ViewElement | string;

/**
 * An element. Adjacent text children are merged and empty ones dropped, as an HTML parser does, so
 * that the browser's DOM of the server's HTML has the same shape as the view (the patch then
 * touches only what changed).
 */
export function h(
  tag: string,
  attributes: Readonly<Record<string, string>> = {},
  ...children: ReadonlyArray<ViewNode | false | undefined>
): ViewElement {
  const merged: ViewNode[] = [];
  for (const child of children) {
    if (child === false || child === undefined || child === "") continue;
    const last = merged[merged.length - 1];
    if (typeof child === "string" && typeof last === "string") merged[merged.length - 1] = last + child;
    else merged.push(child);
  }
  return { tag, attributes, children: merged };
}

/** What the page says of each state: text first, the colour only repeats it. */
export const STATE_TEXT: Readonly<Record<CheckState, string>> = {
  up: "Operational",
  down: "Down",
  unknown: "No data",
};

/** A symbol beside the state's text, for readers who scan by shape rather than colour. */
const STATE_SYMBOL: Readonly<Record<CheckState, string>> = { up: "✓", down: "✕", unknown: "?" };

/** How an uptime period reads on the page. */
const PERIOD_TEXT: Readonly<Record<UptimePeriod, string>> = { "24h": "24 hours", "7d": "7 days", "30d": "30 days" };

/**
 * A ratio as a percentage with two decimals, rounded down so that a day with one failure never
 * reads 100%: 0.99995 → `99.99%`, 1 → `100%`.
 */
export function formatPercent(ratio: number): string {
  if (ratio >= 1) return "100%";
  return `${(Math.floor(ratio * 10_000) / 100).toFixed(2)}%`;
}

/** An RFC 3339 time as `2026-05-01 10:00 UTC` (or `10:00:30` with seconds): one reading for everyone. */
export function formatUtc(time: string, seconds = false): string {
  const iso = new Date(time).toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, seconds ? 19 : 16)} UTC`;
}

/** A span of milliseconds in words: `3 d 4 h`, `2 h 5 min`, `12 min`, `less than a minute`. */
export function formatSpan(milliseconds: number): string {
  const minutes = Math.floor(milliseconds / 60_000);
  if (minutes < 1) return "less than a minute";
  const days = Math.floor(minutes / 1_440);
  const hours = Math.floor((minutes % 1_440) / 60);
  if (days > 0) return hours > 0 ? `${days} d ${hours} h` : `${days} d`;
  if (hours > 0) return minutes % 60 > 0 ? `${hours} h ${minutes % 60} min` : `${hours} h`;
  return `${minutes} min`;
}

/** A response time: `0.8 ms`, `35 ms`, `1.25 s`. */
export function formatDuration(milliseconds: number): string {
  if (milliseconds >= 1_000) return `${(milliseconds / 1_000).toFixed(2)} s`;
  if (milliseconds < 10) return `${milliseconds.toFixed(1)} ms`;
  return `${Math.round(milliseconds)} ms`;
}

/**
 * The colour class of a day by its uptime: none when all results were successful (the most common
 * day costs no attribute), `u3` from 99%, `u2` from 95%, `u1` below, `u0` no data. Text
 * alternatives say the same (each day's title and the bar's summary).
 */
export function dayLevel(ratio: number | null): string | undefined {
  if (ratio === null) return "u0";
  if (ratio >= 1) return undefined;
  if (ratio >= 0.99) return "u3";
  if (ratio >= 0.95) return "u2";
  return "u1";
}

/** One sentence about a bar of days, its text alternative for screen readers. */
export function daysSummary(daily: readonly StatusDay[]): string {
  let full = 0;
  let empty = 0;
  let lowest: StatusDay | undefined;
  for (const day of daily) {
    if (day.ratio === null) empty += 1;
    else if (day.ratio >= 1) full += 1;
    else if (lowest === undefined || lowest.ratio === null || day.ratio < lowest.ratio) lowest = day;
  }
  const plural = (count: number, word: string) => `${count} ${word}${count === 1 ? "" : "s"}`;
  const parts = [`${plural(full, "day")} at 100%`];
  const below = daily.length - full - empty;
  if (lowest !== undefined && lowest.ratio !== null) {
    parts.push(`${plural(below, "day")} below (lowest ${formatPercent(lowest.ratio)} on ${lowest.day})`);
  }
  if (empty > 0) parts.push(`${plural(empty, "day")} without data`);
  return `Daily uptime of the last ${plural(daily.length, "day")}: ${parts.join(", ")}.`;
}

/** Width and height of the response-time chart's view box: 2 units per 15-minute slice. */
const CHART_WIDTH = 192;
const CHART_HEIGHT = 40;
const DAY_MS = 86_400_000;

/**
 * The SVG path of the response times of the 24 hours before `generated`: x by time, y by duration
 * from 0 to the highest one. A gap of more than twice the usual spacing starts a new segment rather
 * than drawing a line over missing data; each segment starts with a zero-length stroke, so that a
 * lone point shows as a dot (round line caps).
 */
export function chartPath(points: readonly StatusResponseTime[], generated: string): string {
  const end = Date.parse(generated);
  const start = end - DAY_MS;
  const times = points.map((point) => Date.parse(point.time));
  const highest = Math.max(...points.map((point) => point.duration), 0);
  let spacing = DAY_MS;
  for (let index = 1; index < times.length; index += 1) {
    const gap = (times[index] ?? 0) - (times[index - 1] ?? 0);
    if (gap > 0 && gap < spacing) spacing = gap;
  }
  let path = "";
  let previous: number | undefined;
  points.forEach((point, index) => {
    const time = times[index] ?? Number.NaN;
    if (!(time >= start && time <= end)) return;
    // Whole units: the chart is 3 rem high, finer coordinates would only weigh more.
    const x = Math.round(((time - start) / DAY_MS) * CHART_WIDTH);
    const y = Math.round(CHART_HEIGHT - 2 - (highest > 0 ? point.duration / highest : 0) * (CHART_HEIGHT - 4));
    path += previous === undefined || time - previous > 2 * spacing ? `M${x} ${y}h0` : `L${x} ${y}`;
    previous = time;
  });
  return path;
}

function stateLine(check: StatusCheck, generated: string): ViewElement {
  const known = check.state !== "unknown";
  const since = known && check.since !== null ? check.since : undefined;
  return h(
    "p",
    { class: "since" },
    known && STATE_TEXT[check.state],
    since !== undefined && ` for ${formatSpan(Date.parse(generated) - Date.parse(since))}, since `,
    since !== undefined && h("time", { datetime: since }, formatUtc(since)),
    known && ". ",
    check.checked === null ? "Not checked yet." : "Last checked ",
    check.checked !== null && h("time", { datetime: check.checked }, formatUtc(check.checked, true)),
    check.checked !== null && ".",
  );
}

function uptimeList(check: StatusCheck, periods: readonly UptimePeriod[]): ViewElement | undefined {
  if (periods.length === 0) return undefined;
  return h(
    "dl",
    { class: "uptime" },
    ...periods.map((period) => {
      const ratio = check.uptime[period] ?? null;
      return h(
        "div",
        {},
        h("dt", {}, `Uptime ${PERIOD_TEXT[period]}`),
        h("dd", {}, ratio === null ? "no data" : formatPercent(ratio)),
      );
    }),
  );
}

function daysBar(check: StatusCheck): ViewElement | undefined {
  if (check.daily.length === 0) return undefined;
  const days = check.daily.length;
  return h(
    "div",
    { class: "days" },
    h("p", { class: "vh" }, daysSummary(check.daily)),
    // The summary above is the bar's text; each day's title is for pointer users.
    h(
      "ol",
      { "aria-hidden": "true" },
      ...check.daily.map((day) => {
        // A day without data has no title: it is the grey of absence, counted in the summary,
        // and untitled it weighs 20 bytes rather than 45 (a new check has 90 of them).
        if (day.ratio === null) return h("li", { class: "u0" });
        // Nor has a day at 100%, the plain colour of most days, also counted in the summary:
        // untitled it weighs 9 bytes rather than 34, which leaves the page room for incidents.
        const level = dayLevel(day.ratio);
        if (level === undefined) return h("li", {});
        return h("li", { class: level, title: `${day.day} ${formatPercent(day.ratio)}` });
      }),
    ),
    h(
      "p",
      { class: "scale", "aria-hidden": "true" },
      h("span", {}, days === 1 ? "today" : `${days} days ago`),
      days === 1 ? undefined : h("span", {}, "today"),
    ),
  );
}

function responseChart(check: StatusCheck, generated: string): ViewElement | undefined {
  const points = check["response-times"];
  if (points.length === 0) return undefined;
  const durations = points.map((point) => point.duration);
  const average = durations.reduce((sum, duration) => sum + duration, 0) / durations.length;
  return h(
    "div",
    { class: "rt" },
    h(
      "svg",
      {
        viewBox: `0 0 ${CHART_WIDTH} ${CHART_HEIGHT}`,
        preserveAspectRatio: "none",
        "aria-hidden": "true",
      },
      h("path", { d: chartPath(points, generated) }),
    ),
    h(
      "p",
      {},
      `Response time, last 24 hours: ${formatDuration(average)} on average, ${formatDuration(Math.max(...durations))} at most.`,
    ),
  );
}

function checkView(check: StatusCheck, data: StatusData): ViewElement {
  return h(
    "article",
    { class: "check", "data-name": check.name, "data-state": check.state },
    h(
      "div",
      { class: "head" },
      h("h3", {}, check.name),
      h(
        "p",
        { class: `state ${check.state}` },
        h("span", { "aria-hidden": "true" }, STATE_SYMBOL[check.state]),
        ` ${STATE_TEXT[check.state]}`,
      ),
    ),
    check.description === "" ? undefined : h("p", { class: "desc" }, check.description),
    stateLine(check, data.generated),
    uptimeList(check, data.periods),
    daysBar(check),
    responseChart(check, data.generated),
  );
}

/** The heading of the checks without a `group` label. */
export function defaultGroupName(data: StatusData): string {
  return data.groups.some((group) => group.name !== null) ? "Other services" : "Services";
}

function overall(data: StatusData): ViewElement {
  const checks = data.groups.flatMap((group) => group.checks);
  const down = checks.filter((check) => check.state === "down").length;
  const known = checks.filter((check) => check.state !== "unknown").length;
  let state: CheckState = "up";
  let text = "All checks are operational";
  if (checks.length === 0) {
    state = "unknown";
    text = "No checks to show";
  } else if (down > 0) {
    state = "down";
    text = `${down} of ${checks.length} checks ${down === 1 ? "is" : "are"} down`;
  } else if (known === 0) {
    state = "unknown";
    text = "No results yet";
  } else if (known < checks.length) {
    text = `${known} of ${checks.length} checks ${known === 1 ? "is" : "are"} operational; the rest have no results yet`;
  }
  return h("p", { class: `summary ${state}` }, h("span", { "aria-hidden": "true" }, STATE_SYMBOL[state]), ` ${text}`);
}

/** What the page says of each incident status. */
export const INCIDENT_TEXT: Readonly<Record<IncidentState, string>> = {
  investigating: "Investigating",
  identified: "Identified",
  monitoring: "Monitoring",
  resolved: "Resolved",
};

function incidentView(incident: StatusIncident): ViewElement {
  const open = incident.resolved === null;
  return h(
    "article",
    { class: open ? "incident" : "incident done", "data-id": incident.id },
    h("h3", {}, incident.title),
    h(
      "p",
      { class: "istate" },
      open ? `${INCIDENT_TEXT[incident.status]}. Began ` : "Resolved ",
      h(
        "time",
        { datetime: open ? incident.started : (incident.resolved ?? "") },
        formatUtc(open ? incident.started : (incident.resolved ?? "")),
      ),
      incident.checks.length > 0 && `. Affects ${incident.checks.join(", ")}`,
      ".",
    ),
    h(
      "ul",
      { class: "timeline" },
      ...incident.updates.map((update) =>
        h(
          "li",
          {},
          h("strong", {}, INCIDENT_TEXT[update.status]),
          " ",
          h("time", { datetime: update.time }, formatUtc(update.time)),
          h("p", {}, update.message),
        ),
      ),
    ),
    incident.earlier > 0 &&
      h("p", { class: "desc" }, `${incident.earlier} earlier update${incident.earlier === 1 ? "" : "s"} in the feed.`),
  );
}

/**
 * The incidents at the top of `<main>`: a section of the open ones, then one of those resolved
 * within 14 days; nothing without incidents. Messages are text nodes: never parsed as HTML.
 */
export function incidentsView(data: StatusData): ViewElement[] {
  const open = data.incidents.filter((incident) => incident.resolved === null);
  const resolved = data.incidents.filter((incident) => incident.resolved !== null);
  const sections: ViewElement[] = [];
  if (open.length > 0) {
    sections.push(h("section", { class: "incidents" }, h("h2", {}, "Current incidents"), ...open.map(incidentView)));
  }
  if (resolved.length > 0) {
    sections.push(
      h(
        "section",
        { class: "incidents" },
        h("h2", {}, "Resolved incidents, last 14 days"),
        ...resolved.map(incidentView),
      ),
    );
  }
  return sections;
}

/**
 * The content of the page's `<main>`: the incidents, the overall state, a section per group (a heading each;
 * checks without a group under "Services", or "Other services" after named groups), each check
 * with its state in words, since when, uptime percentages, daily bar and response-time chart, and
 * when the data was computed.
 */
export function statusView(data: StatusData): ViewNode[] {
  return [
    ...incidentsView(data),
    overall(data),
    ...data.groups.map((group) =>
      h(
        "section",
        { class: "group" },
        h("h2", {}, group.name ?? defaultGroupName(data)),
        ...group.checks.map((check) => checkView(check, data)),
      ),
    ),
    h("p", { class: "updated" }, "Updated ", h("time", { datetime: data.generated }, formatUtc(data.generated, true))),
  ];
}
