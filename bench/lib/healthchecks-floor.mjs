// The hand-written floor of Vigie's periodic http checks (docs/benchmarks.md, Healthchecks): the
// cheapest way this project knows to do the work every run of a Vigie http check does, in one
// file with no layering, run as a process of its own by bench/compare/healthchecks-floor.mjs.
//
// What it does for each of `count` checks every 10 s, as Vigie does: runs due checks in batches
// (one wake every `tick` ms), observes each run's lateness in a histogram; sends GET / through an
// undici Pool with a dispatch handler that reads no body stream; bounds each run by its 5 s
// timeout (one list in start order, its expired head checked at each wake: every check has the
// same timeout); judges the status against the valid ones; measures the duration (µs resolution)
// and the end time (epoch ms and its RFC 3339 text); keeps a result object as the check's latest;
// counts the run in the check's duration histogram and total of its status; buffers a history row
// (check id, time, duration, message, maintenance) and writes the buffer once a second into SQLite
// (WAL, synchronous NORMAL, the history table's own schema) with prepared INSERTs of 512, 128,
// 32, 8 and 1 rows in one transaction. What it leaves out, which Vigie also pays for: the API,
// the metrics' exposition, alerts, maintenance windows, redaction, cluster mode, retries of a
// stale connection, the history's prune.
//
// Run: node bench/lib/healthchecks-floor.mjs ORIGIN COUNT TICK_MS DATABASE_FILE
// Prints `{ runs, failures, rows }` as JSON on SIGTERM.
import Database from "better-sqlite3";
import { Agent, Pool } from "undici";

const [origin, countText, tickText, databaseFile] = process.argv.slice(2);
const COUNT = Number(countText);
const TICK_MS = Number(tickText);
const INTERVAL_MS = 10_000;
const TIMEOUT_MS = 5_000;
const SLOTS = INTERVAL_MS / TICK_MS;
const DURATION_BOUNDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const LATENESS_BOUNDS = [
  0.0005, 0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.05, 0.075, 0.1, 0.2, 0.5, 1, 2, 5, 10,
];
const CHUNKS = [512, 128, 32, 8, 1];

/** Counts `value` into `counts`, one more than `bounds` (the last is +Inf). */
function observe(bounds, counts, value) {
  let index = 0;
  while (index < bounds.length && value > bounds[index]) index++;
  counts[index]++;
}

const database = new Database(databaseFile);
database.pragma("journal_mode = WAL");
database.pragma("synchronous = NORMAL");
database.exec(`create table if not exists healthcheck_history (check_id integer not null,
  duration integer not null, time bigint not null, message text, maintenance smallint,
  constraint healthcheck_history_pkey primary key (check_id, time)) without rowid`);
const inserts = new Map(
  CHUNKS.map((rows) => [
    rows,
    {
      statement: database.prepare(
        `insert or ignore into healthcheck_history (check_id, time, duration, message, maintenance) values ${Array(rows).fill("(?, ?, ?, ?, ?)").join(", ")}`,
      ),
      parameters: new Array(rows * 5),
    },
  ]),
);

// The history's buffer, in columns.
let ids = [];
let times = [];
let durations = [];
let messages = [];
let maintenance = [];
let written = 0;

const writeRows = database.transaction((rowIds, rowTimes, rowDurations, rowMessages, rowMaintenance) => {
  let start = 0;
  for (const size of CHUNKS) {
    const { statement, parameters } = inserts.get(size);
    while (rowIds.length - start >= size) {
      let at = 0;
      for (let row = start; row < start + size; row++) {
        parameters[at++] = rowIds[row];
        parameters[at++] = rowTimes[row];
        parameters[at++] = rowDurations[row];
        parameters[at++] = rowMessages[row];
        parameters[at++] = rowMaintenance[row];
      }
      statement.run(parameters);
      start += size;
    }
  }
});

setInterval(() => {
  if (ids.length === 0) return;
  const rows = [ids, times, durations, messages, maintenance];
  ids = [];
  times = [];
  durations = [];
  messages = [];
  maintenance = [];
  writeRows(...rows);
  written += rows[0].length;
}, 1000);

// Variants, to measure what a part of Vigie's design costs on its own: `agent` sends through an
// undici Agent (a Pool per origin) as Vigie does; `promises` resolves each run through a promise
// and three reactions, as Vigie's scheduler, catalog and executor did; `user-agent` sends the
// User-Agent header every Vigie check sends (docs/healthchecks.md), which the loop does not.
const VARIANTS = new Set((process.env.FLOOR_VARIANT ?? "").split(",").filter(Boolean));
const pool = VARIANTS.has("agent")
  ? new Agent({ headersTimeout: 0, bodyTimeout: 0 })
  : new Pool(origin, { headersTimeout: 0, bodyTimeout: 0 });
const PROMISES = VARIANTS.has("promises");
const lateness = new Float64Array(LATENESS_BOUNDS.length + 1);
const checks = [];
const slots = Array.from({ length: SLOTS }, () => []);
const begun = performance.now();
for (let id = 1; id <= COUNT; id++) {
  const check = {
    id,
    name: `c${id - 1}`,
    // The definition as results show it, one object per check as Vigie keeps them.
    view: {
      name: `c${id - 1}`,
      kind: "http",
      target: "127.0.0.1",
      "valid-status": [200],
      interval: "10s",
      timeout: "5s",
    },
    validStatus: [200],
    next: begun + (id / COUNT) * INTERVAL_MS,
    latest: undefined,
    // Per status (success, failure): the histogram's counts (their sum is the total) and its sum.
    counts: [new Float64Array(DURATION_BOUNDS.length + 1), new Float64Array(DURATION_BOUNDS.length + 1)],
    sums: [0, 0],
  };
  checks.push(check);
  slots[Math.floor(check.next / TICK_MS) % SLOTS].push(check);
}

let runs = 0;
let failures = 0;
// The runs in flight, oldest first (every run has the same timeout).
let oldest;
let newest;

class Run {
  constructor(check, started) {
    this.check = check;
    this.started = started;
    this.status = 0;
    this.settled = false;
    this.controller = undefined;
    this.resolve = undefined;
    this.previous = newest;
    this.after = undefined;
    if (newest === undefined) oldest = this;
    else newest.after = this;
    newest = this;
  }
  onRequestStart(controller) {
    this.controller = controller;
  }
  onResponseStart(_controller, status) {
    this.status = status;
  }
  onResponseData() {}
  onResponseEnd() {
    if (this.check.validStatus.includes(this.status)) this.settle(true, "success");
    else this.settle(false, `HTTP request failed: status ${this.status}. Body: ''`);
  }
  onResponseError(_controller, error) {
    this.settle(false, `HTTP request failed: ${error.message}`);
  }
  settle(success, message) {
    if (this.settled) return;
    this.settled = true;
    if (this.previous === undefined) oldest = this.after;
    else this.previous.after = this.after;
    if (this.after === undefined) newest = this.previous;
    else this.after.previous = this.previous;
    if (this.resolve === undefined) this.record(success, message);
    else this.resolve({ success, message });
  }
  record(success, message) {
    const now = performance.now();
    const duration = Math.round((now - this.started) * 1000) / 1000;
    const time = Date.now();
    const check = this.check;
    check.latest = {
      name: check.name,
      configuration: check.view,
      success,
      timestamp: new Date(time).toISOString(),
      message,
      duration,
    };
    const status = success ? 0 : 1;
    observe(DURATION_BOUNDS, check.counts[status], duration / 1000);
    check.sums[status] += duration / 1000;
    ids.push(check.id);
    times.push(time);
    durations.push(Math.round(duration));
    messages.push(success ? null : message);
    maintenance.push(null);
    runs++;
    if (!success) failures++;
    check.next += INTERVAL_MS;
    slots[Math.floor(check.next / TICK_MS) % SLOTS].push(check);
  }
}

const request = VARIANTS.has("user-agent")
  ? { origin, path: "/", method: "GET", headers: ["user-agent", "vigie-healthcheck"] }
  : { origin, path: "/", method: "GET" };
const identity = (value) => value;
const noop = () => {};

/** Sends one run of `check`: directly, or in the `promises` variant through a promise chain. */
function send(check, now) {
  const run = new Run(check, now);
  if (!PROMISES) {
    pool.dispatch(request, run);
    return;
  }
  new Promise((resolve) => {
    run.resolve = resolve;
    pool.dispatch(request, run);
  })
    .then(identity)
    .then((outcome) => run.record(outcome.success, outcome.message))
    .then(noop, noop);
}
let slot = Math.floor(begun / TICK_MS);
setInterval(() => {
  const now = performance.now();
  for (let run = oldest; run !== undefined && now - run.started >= TIMEOUT_MS; run = oldest) {
    run.settle(false, "HTTP request failed: timeout after 5s");
    run.controller?.abort(new Error("timeout"));
  }
  const last = Math.floor(now / TICK_MS);
  for (; slot <= last; slot++) {
    const due = slots[slot % SLOTS];
    slots[slot % SLOTS] = [];
    for (const check of due) {
      // Due later in the current slot: it waits for the next wake.
      if (check.next > now) {
        slots[slot % SLOTS].push(check);
        continue;
      }
      observe(LATENESS_BOUNDS, lateness, (now - check.next) / 1000);
      send(check, now);
    }
  }
  // The current slot is read again at the next wake.
  slot = last;
}, TICK_MS);

process.on("SIGTERM", () => {
  console.log(JSON.stringify({ runs, failures, rows: written }));
  process.exit(0);
});
