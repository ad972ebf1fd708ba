/**
 * The Disqus parser streams: an 80 MiB export generated on the fly (and removed afterwards) is read
 * with a peak RSS growth far below the file's size. A parser that held the file, or its posts, would
 * grow by more than the file itself (a JavaScript string of 80 MiB of text takes 80 MiB at least).
 */
import { once } from "node:events";
import { createWriteStream, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { disqusItems } from "../../src/comments/import/disqus.js";
import { temporaryDirectory } from "../support/temporary.js";

const FILE_BYTES = 80 * 1024 * 1024;
/** Generous against the parser's real growth (about 25 MiB), far from the file's 80. */
const GROWTH_BOUND_MIB = 48;

describe("the Disqus import's memory", () => {
  const directory = temporaryDirectory("vigie-import-memory-");
  afterAll(() => rmSync(directory, { recursive: true, force: true }));

  it(`reads an 80 MiB export with a peak RSS growth under ${GROWTH_BOUND_MIB} MiB`, async () => {
    const path = join(directory, "disqus.xml");
    const out = createWriteStream(path);
    out.write('<?xml version="1.0"?>\n<disqus xmlns:dsq="http://disqus.com/disqus-internals">\n');
    out.write('<thread dsq:id="t"><link>https://blog.example.org/p/</link></thread>\n');
    const filler = "words of a long comment ".repeat(12);
    let written = 0;
    let count = 0;
    while (written < FILE_BYTES) {
      const post = `<post dsq:id="${count++}"><message><![CDATA[<p>${filler} &amp; more</p>]]></message><createdAt>2020-01-01T00:00:00Z</createdAt><isDeleted>false</isDeleted><isSpam>false</isSpam><author><name>U</name></author><thread dsq:id="t"/></post>\n`;
      written += post.length;
      if (!out.write(post)) await once(out, "drain");
    }
    out.end("</disqus>\n");
    await once(out, "finish");
    expect(statSync(path).size).toBeGreaterThanOrEqual(FILE_BYTES);

    const start = process.memoryUsage().rss;
    let peak = start;
    const timer = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().rss);
    }, 10);
    let read = 0;
    try {
      for await (const item of disqusItems(path)) if (item.kind === "comment") read++;
    } finally {
      clearInterval(timer);
    }
    peak = Math.max(peak, process.memoryUsage().rss);
    const growthMiB = (peak - start) / 1024 / 1024;
    console.log(`${read} posts from ${(written / 1024 / 1024).toFixed(0)} MiB: peak RSS +${growthMiB.toFixed(1)} MiB`);
    expect(read).toBe(count);
    expect(growthMiB).toBeLessThan(GROWTH_BOUND_MIB);
  }, 60_000);
});
