import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  BAD_CHALLENGE_RESPONSE,
  CHALLENGE_EXPIRED,
  ChallengeClock,
  type ChallengeSettings,
  challengeExpiresAt,
  challengeSignature,
  issueChallenge,
  listQuestion,
  MAX_CLOCK_LEAD_MS,
  MAX_CLOCK_SKEW_MS,
  mathQuestion,
  normalizeAnswer,
  verifyChallenge,
} from "../../src/comments/challenge.js";

const settings: ChallengeSettings = { secret: "s3cret", ttlMs: 600_000 };
const NOW = 1_700_000_000_000;

/** A draw that returns the given values in turn. */
function sequence(...values: number[]): (max: number) => number {
  return (max) => {
    const value = values.shift();
    if (value === undefined || value >= max) throw new Error(`unexpected draw below ${max}`);
    return value;
  };
}

function solve(question: string): string {
  const match = /^what is the result of: (\d+) ([-+*]) (\d+)$/.exec(question);
  if (match === null) throw new Error(`not a math question: ${question}`);
  const [left, right] = [Number(match[1]), Number(match[3])];
  return String(match[2] === "+" ? left + right : match[2] === "-" ? left - right : left * right);
}

describe("challengeSignature", () => {
  it("is the lower-case hex HMAC-SHA256 of the JSON array [timestamp, answer, website, article]", () => {
    const expected = createHmac("sha256", "s3cret").update('[1700000000000,"10","blog","my-post"]').digest("hex");
    expect(challengeSignature("s3cret", NOW, "10", "blog", "my-post")).toBe(expected);
    expect(expected).toMatch(/^[0-9a-f]{64}$/);
  });

  it("signs the UTF-8 text of the array, answers with quotes and non-ASCII letters included", () => {
    const text = String.raw`[1700000000000,"\"bleu\" ciel é","blog","post"]`;
    expect(text).toBe(JSON.stringify([NOW, '"bleu" ciel é', "blog", "post"]));
    const expected = createHmac("sha256", "s3cret").update(Buffer.from(text, "utf8")).digest("hex");
    expect(challengeSignature("s3cret", NOW, '"bleu" ciel é', "blog", "post")).toBe(expected);
  });

  it("keeps the parts apart: blog/my-post and blog-my/post sign different texts", () => {
    expect(challengeSignature("s3cret", NOW, "10", "blog", "my-post")).not.toBe(
      challengeSignature("s3cret", NOW, "10", "blog-my", "post"),
    );
    expect(challengeSignature("s3cret", NOW, "1-blog", "x", "post")).not.toBe(
      challengeSignature("s3cret", NOW, "1", "blog-x", "post"),
    );
  });

  it("depends on every part and on the secret", () => {
    const base = challengeSignature("s3cret", NOW, "10", "blog", "post");
    expect(challengeSignature("other", NOW, "10", "blog", "post")).not.toBe(base);
    expect(challengeSignature("s3cret", NOW + 1, "10", "blog", "post")).not.toBe(base);
    expect(challengeSignature("s3cret", NOW, "11", "blog", "post")).not.toBe(base);
    expect(challengeSignature("s3cret", NOW, "10", "blog2", "post")).not.toBe(base);
    expect(challengeSignature("s3cret", NOW, "10", "blog", "post2")).not.toBe(base);
  });
});

describe("mathQuestion", () => {
  it("reads `what is the result of: a op b` with the decimal result as answer", () => {
    expect(mathQuestion(sequence(7, 0, 3))).toEqual({ question: "what is the result of: 7 + 3", answer: "10" });
    expect(mathQuestion(sequence(2, 1, 11))).toEqual({ question: "what is the result of: 2 - 11", answer: "-9" });
    expect(mathQuestion(sequence(11, 2, 11))).toEqual({ question: "what is the result of: 11 * 11", answer: "121" });
    expect(mathQuestion(sequence(0, 2, 5))).toEqual({ question: "what is the result of: 0 * 5", answer: "0" });
  });

  it("draws operands in 0–11 and operators among + - * with crypto.randomInt", () => {
    const operands = new Set<number>();
    const operators = new Set<string>();
    for (let i = 0; i < 2000; i++) {
      const { question, answer } = mathQuestion();
      const match = /^what is the result of: (\d+) ([-+*]) (\d+)$/.exec(question);
      expect(match).not.toBeNull();
      operands.add(Number(match?.[1])).add(Number(match?.[3]));
      operators.add(match?.[2] as string);
      expect(answer).toBe(solve(question));
    }
    expect([...operands].sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    expect([...operators].sort()).toEqual(["*", "+", "-"]);
  });
});

describe("listQuestion", () => {
  it("draws one entry of the list", () => {
    const list = [
      { question: "What colour is the sky?", answer: "blue" },
      { question: "Two plus two?", answer: "four" },
    ];
    expect(listQuestion(list, sequence(1))).toBe(list[1]);
    const seen = new Set<string>();
    for (let i = 0; i < 200; i++) seen.add(listQuestion(list).answer);
    expect([...seen].sort()).toEqual(["blue", "four"]);
  });

  it("refuses an empty list", () => {
    expect(() => listQuestion([])).toThrow("no question configured");
  });
});

describe("issueChallenge", () => {
  it("signs the lower-cased answer and never returns the answer", () => {
    const issued = issueChallenge(settings, { question: "Sky?", answer: "Blue" }, "blog", "post", NOW);
    expect(issued).toEqual({
      timestamp: NOW,
      question: "Sky?",
      signature: challengeSignature("s3cret", NOW, "blue", "blog", "post"),
    });
    expect(JSON.stringify(issued)).not.toMatch(/blue/i);
  });
});

describe("verifyChallenge", () => {
  const issued = issueChallenge(
    settings,
    { question: "what is the result of: 2 - 5", answer: "-3" },
    "blog",
    "post",
    NOW,
  );
  const response = (answer: string, overrides: Partial<{ timestamp: number; signature: string }> = {}) => ({
    timestamp: issued.timestamp,
    signature: issued.signature,
    answer,
    ...overrides,
  });

  it("accepts the right answer, negative ones included, within the TTL", () => {
    expect(verifyChallenge(settings, response("-3"), "blog", "post", NOW)).toBeUndefined();
    expect(verifyChallenge(settings, response("-3"), "blog", "post", NOW + settings.ttlMs)).toBeUndefined();
  });

  it("compares the answer trimmed and lower-cased", () => {
    const words = issueChallenge(settings, { question: "Sky?", answer: "Blue" }, "blog", "post", NOW);
    for (const answer of ["blue", "BLUE", "  Blue\t", "\nbLuE "]) {
      expect(verifyChallenge(settings, { ...words, answer }, "blog", "post", NOW)).toBeUndefined();
    }
    expect(verifyChallenge(settings, { ...words, answer: "b lue" }, "blog", "post", NOW)).toBe(BAD_CHALLENGE_RESPONSE);
    expect(verifyChallenge(settings, response(" -3 "), "blog", "post", NOW)).toBeUndefined();
  });

  it("refuses a wrong answer", () => {
    expect(verifyChallenge(settings, response("3"), "blog", "post", NOW)).toBe(BAD_CHALLENGE_RESPONSE);
    expect(verifyChallenge(settings, response(""), "blog", "post", NOW)).toBe(BAD_CHALLENGE_RESPONSE);
    expect(verifyChallenge(settings, response("- 3"), "blog", "post", NOW)).toBe(BAD_CHALLENGE_RESPONSE);
  });

  it("accepts an upper-case spelling of the signature", () => {
    const upper = response("-3", { signature: issued.signature.toUpperCase() });
    expect(verifyChallenge(settings, upper, "blog", "post", NOW)).toBeUndefined();
  });

  it("refuses a challenge of another article or website", () => {
    expect(verifyChallenge(settings, response("-3"), "blog", "other", NOW)).toBe(BAD_CHALLENGE_RESPONSE);
    expect(verifyChallenge(settings, response("-3"), "shop", "post", NOW)).toBe(BAD_CHALLENGE_RESPONSE);
  });

  it("verifies a challenge of blog/my-post for blog/my-post and not for blog-my/post", () => {
    const question = { question: "what is the result of: 7 + 3", answer: "10" };
    const mine = { ...issueChallenge(settings, question, "blog", "my-post", NOW), answer: "10" };
    expect(verifyChallenge(settings, mine, "blog", "my-post", NOW)).toBeUndefined();
    expect(verifyChallenge(settings, mine, "blog-my", "post", NOW)).toBe(BAD_CHALLENGE_RESPONSE);
    // And the other way round.
    const theirs = { ...issueChallenge(settings, question, "blog-my", "post", NOW), answer: "10" };
    expect(verifyChallenge(settings, theirs, "blog-my", "post", NOW)).toBeUndefined();
    expect(verifyChallenge(settings, theirs, "blog", "my-post", NOW)).toBe(BAD_CHALLENGE_RESPONSE);
  });

  it("refuses a changed timestamp or signature, and another secret", () => {
    expect(verifyChallenge(settings, response("-3", { timestamp: NOW - 1 }), "blog", "post", NOW)).toBe(
      BAD_CHALLENGE_RESPONSE,
    );
    const forged = `${issued.signature.slice(0, 63)}${issued.signature.endsWith("0") ? "1" : "0"}`;
    expect(verifyChallenge(settings, response("-3", { signature: forged }), "blog", "post", NOW)).toBe(
      BAD_CHALLENGE_RESPONSE,
    );
    expect(verifyChallenge({ ...settings, secret: "other" }, response("-3"), "blog", "post", NOW)).toBe(
      BAD_CHALLENGE_RESPONSE,
    );
  });

  it("says expired once the timestamp is more than the TTL in the past, before checking the answer", () => {
    const late = NOW + settings.ttlMs + 1;
    expect(verifyChallenge(settings, response("-3"), "blog", "post", late)).toBe(CHALLENGE_EXPIRED);
    expect(verifyChallenge(settings, response("wrong"), "blog", "post", late)).toBe(CHALLENGE_EXPIRED);
  });

  it("refuses a timestamp more than one minute in the future, even when correctly signed", () => {
    const future = NOW + MAX_CLOCK_SKEW_MS + 1;
    const ahead = issueChallenge(settings, { question: "q", answer: "1" }, "blog", "post", future);
    expect(verifyChallenge(settings, { ...ahead, answer: "1" }, "blog", "post", NOW)).toBe(BAD_CHALLENGE_RESPONSE);
    const slightly = issueChallenge(settings, { question: "q", answer: "1" }, "blog", "post", NOW + MAX_CLOCK_SKEW_MS);
    expect(verifyChallenge(settings, { ...slightly, answer: "1" }, "blog", "post", NOW)).toBeUndefined();
  });
});

describe("helpers", () => {
  it("normalizes answers and computes the expiry of a challenge in milliseconds", () => {
    expect(normalizeAnswer("  MiXeD Case ")).toBe("mixed case");
    expect(challengeExpiresAt(settings, NOW)).toBe(NOW + 600_000);
  });
});

describe("ChallengeClock", () => {
  it("gives strictly increasing timestamps, following the clock when it is ahead", () => {
    const clock = new ChallengeClock();
    expect(clock.next(NOW)).toBe(NOW);
    expect(clock.next(NOW)).toBe(NOW + 1);
    expect(clock.next(NOW)).toBe(NOW + 2);
    expect(clock.next(NOW - 50)).toBe(NOW + 3);
    expect(clock.next(NOW + 100)).toBe(NOW + 100);
  });

  it("never runs more than MAX_CLOCK_LEAD_MS ahead of the clock, so its challenges stay valid", () => {
    const clock = new ChallengeClock();
    // The system clock is set back by an hour: the next timestamp follows it.
    expect(clock.next(NOW)).toBe(NOW);
    expect(clock.next(NOW - 3_600_000)).toBe(NOW - 3_600_000);
    // A long burst within one millisecond: the lead is capped.
    const burst = new ChallengeClock();
    let last = 0;
    for (let i = 0; i <= MAX_CLOCK_LEAD_MS + 5; i++) last = burst.next(NOW);
    expect(last - NOW).toBeLessThanOrEqual(MAX_CLOCK_LEAD_MS);
    const issued = issueChallenge(settings, { question: "q", answer: "1" }, "blog", "post", last);
    expect(verifyChallenge(settings, { ...issued, answer: "1" }, "blog", "post", NOW)).toBeUndefined();
  });

  it("keeps signatures of one article apart even for the same answer in the same millisecond", () => {
    const clock = new ChallengeClock();
    const question = { question: "what is the result of: 0 * 1", answer: "0" };
    const signatures = new Set(
      Array.from({ length: 50 }, () => issueChallenge(settings, question, "blog", "post", clock.next(NOW)).signature),
    );
    expect(signatures.size).toBe(50);
  });
});
