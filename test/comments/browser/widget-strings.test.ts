/**
 * The comment widget's strings (every visible string comes from one table per language):
 * both tables complete, counts worded with each language's plural rules, math questions translated.
 */
import { describe, expect, it } from "vitest";
import { countText, type Lang, langOf, questionText, STRINGS } from "../../../src/comments/browser/widget-strings.js";

const LANGS: readonly Lang[] = ["en", "fr"];

describe("STRINGS", () => {
  it("has the same keys in every language, none empty", () => {
    const keys = Object.keys(STRINGS.en).sort();
    for (const lang of LANGS) {
      const table = STRINGS[lang];
      expect(Object.keys(table).sort(), lang).toEqual(keys);
      for (const [key, value] of Object.entries(table)) expect(value.trim(), `${lang}.${key}`).not.toBe("");
    }
  });

  it("translates every string (no English left in French)", () => {
    for (const [key, value] of Object.entries(STRINGS.fr)) {
      expect(value, `fr.${key}`).not.toBe(Reflect.get(STRINGS.en, key));
    }
  });

  it("puts the number and the question where % stands", () => {
    for (const lang of LANGS) {
      for (const key of ["one", "other", "math"] as const) expect(STRINGS[lang][key], `${lang}.${key}`).toContain("%");
    }
  });
});

describe("langOf", () => {
  it("reads fr and its regional variants, and falls back to en", () => {
    expect(langOf("fr")).toBe("fr");
    expect(langOf("FR-ca")).toBe("fr");
    expect(langOf("en")).toBe("en");
    expect(langOf("de")).toBe("en");
    expect(langOf(undefined)).toBe("en");
    expect(langOf("")).toBe("en");
  });
});

describe("countText", () => {
  it("words counts in English", () => {
    expect(countText("en", 0)).toBe("0 comments");
    expect(countText("en", 1)).toBe("1 comment");
    expect(countText("en", 3)).toBe("3 comments");
    expect(countText("en", 1234)).toBe("1,234 comments");
  });

  it("words counts in French, where 0 is singular", () => {
    expect(countText("fr", 0)).toBe("0 commentaire");
    expect(countText("fr", 1)).toBe("1 commentaire");
    expect(countText("fr", 2)).toBe("2 commentaires");
    // French groups thousands with a narrow no-break space.
    expect(countText("fr", 1234)).toBe("1\u202f234 commentaires");
  });
});

describe("questionText", () => {
  it("words the server's math questions in the widget's language, with × for *", () => {
    expect(questionText("en", "what is the result of: 7 + 3")).toBe("What is 7 + 3?");
    expect(questionText("en", "what is the result of: 2 * 11")).toBe("What is 2 × 11?");
    expect(questionText("fr", "what is the result of: 0 - 9")).toBe("Combien font 0 - 9 ?");
  });

  it("shows configured questions as written", () => {
    expect(questionText("fr", "What colour is the sky?")).toBe("What colour is the sky?");
  });
});
