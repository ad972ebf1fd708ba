import { describe, expect, it } from "vitest";
import { type BudgetHolder, ByteBudget } from "../../../src/streams/riemann/budget.js";

/** A holder that reports what it holds to `budget` and releases it all when shed. */
class Holder implements BudgetHolder {
  held = 0;
  shedCount = 0;
  constructor(
    readonly name: string,
    public waitingSince: number | undefined,
    private readonly budget: () => ByteBudget,
    private readonly releases = true,
  ) {}

  hold(bytes: number): number {
    const delta = bytes - this.held;
    this.held = bytes;
    return this.budget().change(delta);
  }

  shed(): void {
    this.shedCount++;
    if (!this.releases) return;
    this.waitingSince = undefined;
    this.hold(0);
  }
}

function budgetOf(limit: number) {
  const holders: Holder[] = [];
  const changes: number[] = [];
  const budget = new ByteBudget(
    limit,
    () => holders,
    (delta) => changes.push(delta),
  );
  const add = (name: string, waitingSince: number | undefined, releases = true) => {
    const holder = new Holder(name, waitingSince, () => budget, releases);
    holders.push(holder);
    return holder;
  };
  return { budget, add, changes };
}

describe("ByteBudget", () => {
  it("sheds nothing up to the limit, and tells every change", () => {
    const { budget, add, changes } = budgetOf(100);
    const a = add("a", 1);
    const b = add("b", 2);
    expect(a.hold(60)).toBe(0);
    expect(b.hold(40)).toBe(0);
    expect(budget.total).toBe(100);
    expect(a.hold(10)).toBe(0);
    expect(budget.total).toBe(50);
    expect(changes).toEqual([60, 40, -50]);
  });

  it("sheds the holder waiting longest first, until the total is back under the limit", () => {
    const { budget, add } = budgetOf(100);
    const young = add("young", 30);
    const oldest = add("oldest", 10);
    const old = add("old", 20);
    oldest.hold(40);
    old.hold(40);
    // 110 > 100: the oldest goes, the total is 70.
    expect(young.hold(30)).toBe(1);
    expect([oldest.shedCount, old.shedCount, young.shedCount]).toEqual([1, 0, 0]);
    expect(budget.total).toBe(70);
    // 170: both remaining go, oldest first, the one whose bytes came last included.
    expect(young.hold(130)).toBe(2);
    expect([old.shedCount, young.shedCount]).toEqual([1, 1]);
    expect(budget.total).toBe(0);
  });

  it("never sheds holders waiting on the server, and stops when only they are left", () => {
    const { budget, add } = budgetOf(100);
    const handled = add("handled", undefined);
    const waiting = add("waiting", 5);
    handled.hold(90);
    expect(waiting.hold(30)).toBe(1);
    expect(handled.shedCount).toBe(0);
    expect(budget.total).toBe(90);
    expect(handled.hold(150)).toBe(0);
    expect(budget.total).toBe(150);
  });

  it("sheds each holder once, even one that does not release what it holds", () => {
    const { budget, add } = budgetOf(100);
    const stubborn = add("stubborn", 1, false);
    const other = add("other", 2);
    stubborn.hold(80);
    expect(other.hold(50)).toBe(2);
    expect([stubborn.shedCount, other.shedCount]).toEqual([1, 1]);
    expect(budget.total).toBe(80);
  });
});
