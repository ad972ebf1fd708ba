/**
 * The alerts' storage (src/healthchecks/alerts/store.ts) on SQLite and PostgreSQL: states written
 * at transitions and read back, the history newest first, its prune; and a whole server restarted
 * on the same database between a trigger and a resolve, which sends neither twice.
 */
import { createServer } from "node:net";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AlertStore } from "../../../src/healthchecks/alerts/store.js";
import { healthchecksModule } from "../../../src/healthchecks/index.js";
import { type Database, openDatabase } from "../../../src/platform/database.js";
import { allMigrations, type VigieServer } from "../../../src/server.js";
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from "../../support/databases.js";
import { declaredOutputs, FakeNotifier, withNotifier } from "../../support/notifier.js";
import { freePort } from "../../support/process.js";
import { startTestServer } from "../../support/server.js";
import { until } from "../../support/until.js";

describe.each(DATABASE_KINDS)("alert storage on $kind", ({ kind, skip }) => {
  let test: TestDatabase;
  let database: Database | undefined;
  const servers: VigieServer[] = [];
  beforeEach(async () => {
    if (!skip) test = await createTestDatabase(kind);
  });
  afterEach(async () => {
    for (const server of servers.splice(0)) await server.close().catch(() => {});
    await database?.close();
    database = undefined;
    if (!skip) await test.drop();
  });

  it.skipIf(skip)("stores states by check and output, replacing them, and lists the checks down", async () => {
    database = await openDatabase(test.url, allMigrations());
    const store = new AlertStore(database);
    const since = Date.parse("2026-11-22T10:00:00Z");
    await store.saveState(
      {
        check: "web",
        output: "chat",
        triggered: true,
        sinceMs: since,
        lastDueMs: since,
        lastSentMs: since,
        notified: true,
      },
      since,
    );
    await store.saveState(
      { check: "web", output: "pager", triggered: false, sinceMs: 0, lastDueMs: 0, notified: false },
      since,
    );
    await store.saveState(
      { check: "router", output: "", triggered: true, sinceMs: 5, lastDueMs: 5, notified: false },
      5,
    );
    expect(await store.loadStates(["web"])).toEqual(
      expect.arrayContaining([
        {
          check: "web",
          output: "chat",
          triggered: true,
          sinceMs: since,
          lastDueMs: since,
          lastSentMs: since,
          notified: true,
        },
        { check: "web", output: "pager", triggered: false, sinceMs: 0, lastDueMs: 0, notified: false },
      ]),
    );
    expect((await store.downChecks()).sort()).toEqual(["router", "web"]);
    await store.saveState(
      {
        check: "web",
        output: "chat",
        triggered: false,
        sinceMs: since,
        lastDueMs: since,
        lastSentMs: since + 1,
        notified: false,
      },
      since + 1,
    );
    await store.deleteState("router", "");
    expect(await store.downChecks()).toEqual([]);
    expect(await store.loadStates()).toHaveLength(2);
    expect(await store.loadStates([])).toEqual([]);
  });

  it.skipIf(skip)("lists the history newest first within a period and a limit, and prunes it", async () => {
    database = await openDatabase(test.url, allMigrations());
    const store = new AlertStore(database);
    for (let index = 0; index < 10; index++) {
      await store.addHistory({
        check: `c${index}`,
        output: "chat",
        timeMs: 1_000 * index,
        status: index % 2 === 0 ? "triggered" : "resolved",
        outcome: index === 3 ? "suppressed" : "delivered",
        ...(index === 3 ? { reason: "router is down (depends-on)" } : {}),
      });
    }
    const all = await store.history({ limit: 100 });
    expect(all.map((entry) => entry.check)).toEqual(["c9", "c8", "c7", "c6", "c5", "c4", "c3", "c2", "c1", "c0"]);
    expect(all[6]).toEqual({
      check: "c3",
      output: "chat",
      timeMs: 3_000,
      status: "resolved",
      outcome: "suppressed",
      reason: "router is down (depends-on)",
    });
    const some = await store.history({ sinceMs: 2_000, untilMs: 6_000, limit: 3 });
    expect(some.map((entry) => entry.check)).toEqual(["c6", "c5", "c4"]);
    await store.pruneHistory(5_000);
    expect((await store.history({ limit: 100 })).map((entry) => entry.check)).toEqual(["c9", "c8", "c7", "c6", "c5"]);
  });

  it.skipIf(skip)("sends a trigger and its resolve once each across restarts on the same database", async () => {
    const port = await freePort();
    const config = {
      database: { url: test.url },
      healthchecks: {
        "min-interval": "100ms",
        "tcp-checks": [
          {
            name: "db",
            target: "127.0.0.1",
            port,
            interval: "100ms",
            timeout: "100ms",
            alerts: [{ output: "chat", "failure-threshold": 2, "success-threshold": 2 }],
          },
        ],
      },
    };
    const start = async (notifier: FakeNotifier) => {
      const server = await startTestServer({
        modules: withNotifier([healthchecksModule], notifier),
        config: { ...config, outputs: declaredOutputs(notifier) },
      });
      servers.push(server);
      return server;
    };
    const results = async (server: VigieServer, count: number) => {
      const seen = new Set<string>();
      await until(async () => {
        const response = await server.app.inject({ method: "GET", url: "/result/db" });
        if (response.statusCode === 200) seen.add(response.json().timestamp);
        return seen.size >= count ? true : undefined;
      }, `${count} results of db`);
    };

    const first = new FakeNotifier(["chat"]);
    let server = await start(first);
    await until(async () => (first.sent.length > 0 ? true : undefined), "the trigger");
    await server.close();
    expect(first.statuses("db")).toEqual(["triggered"]);

    // Restarted while still failing: no second trigger, and the alert is still listed.
    const second = new FakeNotifier(["chat"]);
    server = await start(second);
    await results(server, 5);
    const triggered = (await server.app.inject({ method: "GET", url: "/alerts" })).json();
    expect(triggered).toEqual([
      { check: "db", output: "chat", since: expect.any(String), "last-sent": expect.any(String) },
    ]);
    // The target comes back: one resolve.
    const target = createServer((socket) => socket.end());
    await new Promise<void>((resolve) => target.listen(port, "127.0.0.1", resolve));
    try {
      await until(async () => (second.sent.length > 0 ? true : undefined), "the resolve");
      await results(server, 3);
      await server.close();
      expect(second.statuses("db")).toEqual(["resolved"]);

      // Restarted after the resolve: nothing more.
      const third = new FakeNotifier(["chat"]);
      server = await start(third);
      await results(server, 5);
      expect(third.sent).toEqual([]);
      expect((await server.app.inject({ method: "GET", url: "/alerts" })).json()).toEqual([]);
      const history = (await server.app.inject({ method: "GET", url: "/alerts/history" })).json();
      expect(history.notifications.map((entry: { status: string; outcome: string }) => entry.status)).toEqual([
        "resolved",
        "triggered",
      ]);
    } finally {
      await new Promise((resolve) => target.close(resolve));
    }
  });
});
