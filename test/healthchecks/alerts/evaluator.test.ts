/**
 * The alert evaluator (src/healthchecks/alerts/evaluator.ts) on a store in memory and a fake
 * notifier, with result times chosen by the test: one trigger per alert, default alerts, the
 * maintenance hook, dependencies, the history, and a restart on the same stored states.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  AlertEvaluator,
  type AlertHistoryEntry,
  type AlertStateStore,
  type ObservedCheck,
  type StoredAlert,
} from "../../../src/healthchecks/alerts/evaluator.js";
import type { AlertPolicy } from "../../../src/healthchecks/alerts/policy.js";
import { type Definition, validateDefinition } from "../../../src/healthchecks/definition.js";
import { FakeNotifier } from "../../support/notifier.js";

/** The store of the evaluator, in memory. */
class MemoryStore implements AlertStateStore {
  readonly states = new Map<string, StoredAlert>();
  readonly history: AlertHistoryEntry[] = [];

  async loadStates(names?: readonly string[]): Promise<StoredAlert[]> {
    return [...this.states.values()].filter((state) => names === undefined || names.includes(state.check));
  }
  async saveState(state: StoredAlert): Promise<void> {
    this.states.set(`${state.check}/${state.output}`, state);
  }
  async deleteState(check: string, output: string): Promise<void> {
    this.states.delete(`${check}/${output}`);
  }
  async downChecks(): Promise<string[]> {
    return [...this.states.values()].filter((state) => state.triggered).map((state) => state.check);
  }
  async addHistory(entry: AlertHistoryEntry): Promise<void> {
    this.history.push(entry);
  }
  async pruneHistory(): Promise<void> {}
}

const RULES = { minInterval: { text: "1s", milliseconds: 1_000 } };

function check(name: string, fields: Record<string, unknown> = {}): Definition {
  return validateDefinition(
    "tcp",
    { name, target: "127.0.0.1", port: 9, interval: "10s", timeout: "1s", ...fields },
    RULES,
    { unknownKeys: "ignore" },
  );
}

interface Setup {
  readonly store?: MemoryStore;
  readonly notifier?: FakeNotifier;
  readonly defaults?: AlertPolicy[];
  readonly checks?: Definition[];
  /** The registered checks, when they change during the test (default: `checks`). */
  readonly definitionOf?: (name: string) => Definition | undefined;
  readonly inMaintenance?: (name: string, atMs: number) => boolean;
}

async function evaluator(setup: Setup = {}) {
  const store = setup.store ?? new MemoryStore();
  const notifier = setup.notifier ?? new FakeNotifier(["team-chat", "on-call"]);
  const checks = new Map((setup.checks ?? []).map((definition) => [definition.name, definition]));
  const alerts = new AlertEvaluator({
    notifier,
    store,
    defaultAlerts: setup.defaults ?? [],
    definitionOf: setup.definitionOf ?? ((name) => checks.get(name)),
    ...(setup.inMaintenance === undefined ? {} : { inMaintenance: setup.inMaintenance }),
    url: "http://127.0.0.1:8080/status",
    logger: { error: (details) => expect.unreachable(JSON.stringify(details)) },
    historyRetentionMs: 3_600_000,
  });
  await alerts.load();
  return { alerts, store, notifier };
}

const T0 = Date.parse("2026-11-22T10:00:00Z");

/** The registration of each definition, as the catalog makes one per registered definition. */
const registrations = new WeakMap<Definition, ObservedCheck>();

function registrationOf(definition: Definition): ObservedCheck {
  let registration = registrations.get(definition);
  if (registration === undefined) {
    registration = { definition, labels: { team: "web" } };
    registrations.set(definition, registration);
  }
  return registration;
}

/** Feeds results of `definition` through its registration, one every 10 s from `fromMs`. */
function feed(alerts: AlertEvaluator, definition: Definition, results: readonly boolean[], fromMs = T0): number {
  const registration = registrationOf(definition);
  for (const [index, success] of results.entries()) {
    alerts.observe(registration, success, success ? "success" : "refused", fromMs + index * 10_000);
  }
  return fromMs + results.length * 10_000;
}

const FAIL3 = [false, false, false];

describe("the alert evaluator", () => {
  it("sends exactly one trigger per alert after three failures, and one resolve per alert after two successes", async () => {
    const web = check("web", {
      alerts: [{ output: "team-chat" }, { output: "on-call", "failure-threshold": 5, description: "the shop is down" }],
    });
    const { alerts, notifier, store } = await evaluator({ checks: [web] });
    const next = feed(alerts, web, [...FAIL3, ...FAIL3, false, false]);
    await alerts.settled();
    expect(notifier.statuses("web", "team-chat")).toEqual(["triggered"]);
    expect(notifier.statuses("web", "on-call")).toEqual(["triggered"]);
    const [first, second] = notifier.sent;
    expect(first?.notification).toEqual({
      name: "web",
      state: "critical",
      status: "triggered",
      message: "refused",
      since: "2026-11-22T10:00:20.000Z",
      duration: 0,
      url: "http://127.0.0.1:8080/status",
      labels: { team: "web" },
      key: "web/team-chat",
    });
    expect(second?.notification).toMatchObject({ message: "the shop is down", key: "web/on-call" });
    feed(alerts, web, [true, true, true], next);
    await alerts.settled();
    expect(notifier.statuses("web")).toEqual(["triggered", "triggered", "resolved", "resolved"]);
    // Resolved at 10:01:30, 70 s after team-chat's trigger and 50 s after on-call's (fifth failure).
    expect(notifier.sent.slice(2).map(({ notification }) => [notification.state, notification.duration])).toEqual([
      ["ok", 70],
      ["ok", 50],
    ]);
    expect(store.history.map((entry) => `${entry.output} ${entry.status} ${entry.outcome}`)).toEqual([
      "team-chat triggered delivered",
      "on-call triggered delivered",
      "team-chat resolved delivered",
      "on-call resolved delivered",
    ]);
  });

  it("gives heartbeat checks thresholds of 1, their own alerts and the default ones alike", async () => {
    const heartbeat = (name: string, fields: Record<string, unknown> = {}) =>
      validateDefinition("heartbeat", { name, period: "1m", ...fields }, RULES, { unknownKeys: "ignore" });
    const own = heartbeat("own", { alerts: [{ output: "team-chat" }] });
    const byDefault = heartbeat("by-default");
    const defaults: AlertPolicy[] = [
      {
        output: "on-call",
        "failure-threshold": 3,
        "success-threshold": 2,
        "send-on-resolved": true,
        description: "",
      },
    ];
    const { alerts, notifier } = await evaluator({ checks: [own, byDefault], defaults });
    expect(alerts.policiesOf(byDefault)).toMatchObject([
      { output: "on-call", "failure-threshold": 1, "success-threshold": 1 },
    ]);
    // The defaults of other checks are untouched, and the list is built once.
    expect(alerts.policiesOf(check("plain"))).toBe(defaults);
    expect(alerts.policiesOf(byDefault)).toBe(alerts.policiesOf(byDefault));
    // One missed run triggers, the next ping resolves.
    const next = feed(alerts, own, [false]);
    feed(alerts, byDefault, [false]);
    await alerts.settled();
    expect(notifier.statuses("own", "team-chat")).toEqual(["triggered"]);
    expect(notifier.statuses("by-default", "on-call")).toEqual(["triggered"]);
    feed(alerts, own, [true], next);
    feed(alerts, byDefault, [true], next);
    await alerts.settled();
    expect(notifier.statuses("own", "team-chat")).toEqual(["triggered", "resolved"]);
    expect(notifier.statuses("by-default", "on-call")).toEqual(["triggered", "resolved"]);
  });

  it("gives checks without alerts the default ones, and none to a check with alerts: []", async () => {
    const plain = check("plain");
    const quiet = check("quiet", { alerts: [] });
    const { alerts, notifier } = await evaluator({ checks: [plain, quiet], defaults: [defaultAlert("team-chat")] });
    feed(alerts, plain, FAIL3);
    feed(alerts, quiet, FAIL3);
    await alerts.settled();
    expect(notifier.sent.map((sent) => `${sent.notification.name} ${sent.output}`)).toEqual(["plain team-chat"]);
  });

  it("sends reminders at repeat, by the results' clock", async () => {
    const web = check("web", { alerts: [{ output: "team-chat", repeat: "1m" }] });
    const { alerts, notifier } = await evaluator({ checks: [web] });
    feed(
      alerts,
      web,
      Array.from({ length: 20 }, () => false),
    );
    await alerts.settled();
    expect(notifier.statuses("web")).toEqual(["triggered", "reminder", "reminder"]);
    expect(notifier.sent.map((sent) => sent.notification.duration)).toEqual([0, 60, 120]);
  });

  it("sends nothing during maintenance, and the trigger due on the first result after the window", async () => {
    const web = check("web", { alerts: [{ output: "team-chat" }] });
    const windowEnd = T0 + 60_000;
    const { alerts, notifier, store } = await evaluator({
      checks: [web],
      inMaintenance: (name, atMs) => name === "web" && atMs < windowEnd,
    });
    const next = feed(
      alerts,
      web,
      Array.from({ length: 6 }, () => false),
    );
    await alerts.settled();
    expect(notifier.sent).toEqual([]);
    expect(store.states.size).toBe(0);
    feed(alerts, web, [false, false], next);
    await alerts.settled();
    expect(notifier.statuses("web")).toEqual(["triggered"]);
    expect(notifier.sent[0]?.notification.since).toBe("2026-11-22T10:01:00.000Z");
  });

  it("holds no resolve back in maintenance forever: it comes after the window", async () => {
    const web = check("web", { alerts: [{ output: "team-chat" }] });
    const start = T0 + 30_000;
    const end = T0 + 90_000;
    const { alerts, notifier } = await evaluator({
      checks: [web],
      inMaintenance: (_name, atMs) => atMs >= start && atMs < end,
    });
    feed(alerts, web, [false, false, false, true, true, true, true, true, true, true]);
    await alerts.settled();
    expect(notifier.statuses("web")).toEqual(["triggered", "resolved"]);
    expect(notifier.sent[1]?.notification.since).toBe("2026-11-22T10:00:20.000Z");
  });

  it("suppresses the notifications of 20 children while their parent is down, recording the parent", async () => {
    const router = check("router", { alerts: [{ output: "on-call", "failure-threshold": 2 }] });
    const children = Array.from({ length: 20 }, (_, index) =>
      check(`site-${index}`, { alerts: [{ output: "team-chat" }], "depends-on": ["router"] }),
    );
    const { alerts, notifier, store } = await evaluator({ checks: [router, ...children] });
    let next = feed(alerts, router, [false, false]);
    for (const child of children) feed(alerts, child, FAIL3, next);
    await alerts.settled();
    expect(notifier.sent.map((sent) => sent.notification.name)).toEqual(["router"]);
    const suppressed = store.history.filter((entry) => entry.outcome === "suppressed");
    expect(suppressed).toHaveLength(20);
    expect(suppressed[0]).toMatchObject({
      check: "site-0",
      status: "triggered",
      reason: "router is down (depends-on)",
    });

    // The router comes back; the children still failing send their held trigger, once.
    next = feed(alerts, router, [true, true], next + 30_000);
    for (const child of children.slice(0, 5)) feed(alerts, child, [false, false], next);
    await alerts.settled();
    expect(notifier.statuses("router")).toEqual(["triggered", "resolved"]);
    expect(notifier.sent.filter((sent) => sent.notification.name.startsWith("site-"))).toHaveLength(5);
  });

  it("counts a parent without alerts as down after three consecutive failures", async () => {
    const router = check("router", { alerts: [] });
    const site = check("site", {
      alerts: [{ output: "team-chat", "failure-threshold": 1, "success-threshold": 1 }],
      "depends-on": ["router"],
    });
    const { alerts, notifier, store } = await evaluator({ checks: [router, site] });
    feed(alerts, router, [false, false]);
    feed(alerts, site, [false], T0 + 20_000);
    await alerts.settled();
    expect(notifier.statuses("site")).toEqual(["triggered"]);
    feed(alerts, site, [true], T0 + 30_000);
    feed(alerts, router, [false], T0 + 40_000);
    feed(alerts, site, [false], T0 + 50_000);
    await alerts.settled();
    expect(notifier.statuses("site")).toEqual(["triggered", "resolved"]);
    expect(store.history.at(-1)).toMatchObject({ outcome: "suppressed", reason: "router is down (depends-on)" });
  });

  it("records failed and dropped deliveries with their reason", async () => {
    const web = check("web", { alerts: [{ output: "team-chat", "failure-threshold": 1 }, { output: "gone" }] });
    const notifier = new FakeNotifier(["team-chat"]);
    notifier.outcome = "pending";
    const { alerts, store } = await evaluator({ checks: [web], notifier });
    feed(alerts, web, FAIL3);
    await alerts.settled();
    expect(store.history).toEqual([
      expect.objectContaining({ output: "gone", outcome: "dropped", reason: "no such output" }),
    ]);
    notifier.settle("failed", "HTTP 403 from the webhook");
    await alerts.settled();
    expect(store.history[1]).toMatchObject({
      output: "team-chat",
      outcome: "failed",
      reason: "HTTP 403 from the webhook",
    });
  });

  it("after a restart on the same states, neither sends a trigger again nor forgets one", async () => {
    const web = check("web", { alerts: [{ output: "team-chat" }] });
    const store = new MemoryStore();
    const before = await evaluator({ checks: [web], store });
    feed(before.alerts, web, [...FAIL3, false]);
    await before.alerts.close();
    expect(before.notifier.statuses("web")).toEqual(["triggered"]);

    const after = await evaluator({ checks: [web], store });
    feed(after.alerts, web, [...FAIL3, ...FAIL3], T0 + 100_000);
    await after.alerts.settled();
    expect(after.notifier.sent).toEqual([]);
    expect(await after.alerts.triggered()).toEqual([expect.objectContaining({ check: "web", output: "team-chat" })]);
    feed(after.alerts, web, [true, true], T0 + 200_000);
    await after.alerts.settled();
    expect(after.notifier.statuses("web")).toEqual(["resolved"]);
    expect(after.notifier.sent[0]?.notification.since).toBe("2026-11-22T10:00:20.000Z");
    expect(await after.alerts.triggered()).toEqual([]);
  });

  it("keeps the state of an alert whose output stays when its check changes, and forgets removed ones", async () => {
    const first = check("web", { alerts: [{ output: "team-chat" }, { output: "on-call" }] });
    const { alerts, notifier, store } = await evaluator({ checks: [first] });
    feed(alerts, first, FAIL3);
    const second = check("web", { alerts: [{ output: "team-chat", repeat: "1h" }] });
    feed(alerts, second, FAIL3, T0 + 30_000);
    await alerts.settled();
    expect(notifier.statuses("web")).toEqual(["triggered", "triggered"]);
    expect([...store.states.keys()]).toEqual(["web/team-chat"]);
  });
});

describe("the alert entry a registration keeps", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("is kept between results of the same registration", async () => {
    const web = check("web", { alerts: [{ output: "team-chat" }] });
    const { alerts } = await evaluator({ checks: [web] });
    feed(alerts, web, [false]);
    const entry = registrationOf(web).alerts;
    expect(entry).toBeDefined();
    feed(alerts, web, [false], T0 + 10_000);
    expect(registrationOf(web).alerts).toBe(entry);
  });

  it("is read again from the store when the check is taken over (cluster hand-over)", async () => {
    const web = check("web", { alerts: [{ output: "team-chat" }] });
    const { alerts, notifier, store } = await evaluator({ checks: [web] });
    feed(alerts, web, FAIL3);
    await alerts.settled();
    // Meanwhile another instance ran the check and resolved its alert.
    const resolvedAtMs = T0 + 100_000;
    store.states.set("web/team-chat", {
      check: "web",
      output: "team-chat",
      triggered: false,
      sinceMs: resolvedAtMs,
      lastDueMs: resolvedAtMs,
      notified: false,
    });
    await alerts.reload(["web"]);
    // The same registration: its entry is the stored state, not the one it held before.
    feed(alerts, web, FAIL3, resolvedAtMs + 10_000);
    await alerts.settled();
    expect(notifier.statuses("web")).toEqual(["triggered", "triggered"]);
  });

  it("takes the new default alerts after a reload of the configuration", async () => {
    const plain = check("plain");
    const { alerts, notifier } = await evaluator({ checks: [plain], defaults: [defaultAlert("team-chat")] });
    feed(alerts, plain, [false]);
    alerts.setDefaults([defaultAlert("on-call")]);
    feed(alerts, plain, FAIL3, T0 + 10_000);
    await alerts.settled();
    expect(notifier.sent.map((sent) => sent.output)).toEqual(["on-call"]);
  });

  it("is forgotten with its deleted check: the same definition registered again starts afresh", async () => {
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    const web = check("web", { alerts: [{ output: "team-chat" }] });
    const registered = new Map([["web", web]]);
    const { alerts, notifier, store } = await evaluator({ definitionOf: (name) => registered.get(name) });
    alerts.start();
    feed(alerts, web, FAIL3);
    await alerts.settled();
    registered.delete("web");
    expect(await alerts.triggered()).toEqual([]);
    // The hourly sweep forgets the alerts of deleted checks.
    await vi.advanceTimersByTimeAsync(3_600_000);
    await alerts.settled();
    expect(store.states.size).toBe(0);
    // A configuration check removed then listed again comes back with the same definition.
    registered.set("web", web);
    feed(alerts, web, FAIL3, T0 + 100_000);
    await alerts.close();
    expect(notifier.statuses("web")).toEqual(["triggered", "triggered"]);
  });
});

function defaultAlert(output: string): AlertPolicy {
  return { output, "failure-threshold": 3, "success-threshold": 2, "send-on-resolved": true, description: "" };
}
