// The comments import: a generated Disqus export of 100 000 comments (1 000 threads, a third of the
// comments replies, HTML with entities) imported into a new SQLite database through the real code
// (dist/), then imported again (idempotent: adds nothing). Prints comments/s, beside a baseline: a
// bare better-sqlite3 loop inserting the same rows, already in memory, with one prepared statement
// in one transaction, into a table of the same columns and indexes. Also prints the peak RSS growth
// during the import, sampled every 20 ms, against the file's size: the parser streams, so the
// growth stays far below the file's size. Run `npm run build` first (npm run bench does).
//
// Options: COMMENTS=<n> (default 100000).

import { once } from "node:events";
import { createWriteStream, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Sqlite from "better-sqlite3";

const dist = new URL("../dist/", import.meta.url);
const { itemsOf, runImport } = await import(new URL("comments/import/run.js", dist).href);
const { ImportStore } = await import(new URL("comments/storage-import.js", dist).href);
const { openDatabase } = await import(new URL("platform/database.js", dist).href);
const { allMigrations } = await import(new URL("server.js", dist).href);
const { importedId } = await import(new URL("comments/import/items.js", dist).href);

const COMMENTS = Number(process.env.COMMENTS ?? 100_000);
const THREADS = 1000;
const directory = mkdtempSync(join(tmpdir(), "vigie-bench-import-"));

/** Writes the Disqus export; returns its path. */
async function generate() {
  const path = join(directory, "disqus.xml");
  const out = createWriteStream(path);
  const write = async (text) => {
    if (!out.write(text)) await once(out, "drain");
  };
  await write(
    '<?xml version="1.0" encoding="utf-8"?>\n<disqus xmlns="http://disqus.com" xmlns:dsq="http://disqus.com/disqus-internals">\n',
  );
  for (let t = 0; t < THREADS; t++) {
    await write(
      `<thread dsq:id="t${t}"><id>post-${t}</id><link>https://blog.example.org/posts/post-${t}/</link><title>Post ${t}</title><isDeleted>false</isDeleted></thread>\n`,
    );
  }
  for (let c = 0; c < COMMENTS; c++) {
    const thread = c % THREADS;
    // A third are replies to the comment of the same thread one round before.
    const parent = c % 3 === 2 && c >= THREADS ? `<parent dsq:id="${c - THREADS}"/>` : "";
    await write(
      `<post dsq:id="${c}"><id/><message><![CDATA[<p>Comment ${c} &amp; a <a href="https://example.org/${c}">link</a> &mdash; café</p><p>Second paragraph of comment ${c}.</p>]]></message><createdAt>2020-01-01T00:00:00Z</createdAt><isDeleted>false</isDeleted><isSpam>false</isSpam><author><email>user${c % 500}@example.org</email><name>User ${c % 500}</name><isAnonymous>false</isAnonymous></author><thread dsq:id="t${thread}"/>${parent}</post>\n`,
    );
  }
  await write("</disqus>\n");
  out.end();
  await once(out, "finish");
  return path;
}

/** Runs `task` while sampling the RSS; returns its seconds and the peak growth in MiB. */
async function measured(task) {
  const start = process.memoryUsage().rss;
  let peak = start;
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 20);
  const began = performance.now();
  const result = await task();
  const seconds = (performance.now() - began) / 1000;
  clearInterval(timer);
  peak = Math.max(peak, process.memoryUsage().rss);
  return { result, seconds, growthMiB: (peak - start) / 1024 / 1024 };
}

/** The baseline: the same rows inserted by a bare prepared-statement loop in one transaction. */
function baseline() {
  const database = new Sqlite(join(directory, "baseline.db"));
  database.pragma("journal_mode = WAL");
  database.exec(`create table comments_comment (id varchar(36) primary key, website varchar(64) not null,
    article varchar(200) not null, author text not null, author_website varchar(200), content text not null,
    approved integer not null, created_at bigint not null, parent varchar(36), email varchar(254),
    notify_replies integer not null default 0, source varchar(32), source_id varchar(255));
    create index a on comments_comment (website, article, created_at, id);
    create index b on comments_comment (website, approved, created_at, id);
    create index c on comments_comment (website, created_at, id);
    create unique index d on comments_comment (website, source, source_id);`);
  const rows = [];
  for (let c = 0; c < COMMENTS; c++) {
    rows.push([
      importedId("blog", "disqus", String(c)),
      "blog",
      `posts-post-${c % THREADS}`,
      `User ${c % 500}`,
      null,
      `Comment ${c} &amp; a link (https://example.org/${c}) — café\n\nSecond paragraph of comment ${c}.`,
      1,
      1_577_836_800_000,
      c % 3 === 2 && c >= THREADS ? importedId("blog", "disqus", String(c - THREADS)) : null,
      `user${c % 500}@example.org`,
      0,
      "disqus",
      String(c),
    ]);
  }
  const insert = database.prepare("insert into comments_comment values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  const began = performance.now();
  database.transaction(() => {
    for (const row of rows) insert.run(...row);
  })();
  const seconds = (performance.now() - began) / 1000;
  database.close();
  return seconds;
}

try {
  const file = await generate();
  const megabytes = statSync(file).size / 1024 / 1024;
  const database = await openDatabase(`sqlite:${join(directory, "vigie.db")}`, allMigrations());
  const store = new ImportStore(database);
  const settings = { website: "blog", format: "disqus", articleFrom: "path", dryRun: false };
  const first = await measured(() => runImport(itemsOf("disqus", file), store, settings));
  const again = await measured(() => runImport(itemsOf("disqus", file), store, settings));
  await database.close();
  const bare = baseline();
  const rate = (seconds) => Math.round(COMMENTS / seconds).toLocaleString("en");
  console.log(`file: ${COMMENTS} comments, ${megabytes.toFixed(1)} MiB of Disqus XML`);
  console.log(
    `vigie comments import:   ${first.result.added} added in ${first.seconds.toFixed(2)} s = ${rate(first.seconds)} comments/s, peak RSS +${first.growthMiB.toFixed(0)} MiB`,
  );
  console.log(
    `second run (idempotent): ${again.result.added} added in ${again.seconds.toFixed(2)} s = ${rate(again.seconds)} comments/s, peak RSS +${again.growthMiB.toFixed(0)} MiB`,
  );
  console.log(
    `baseline (bare better-sqlite3 insert loop, rows in memory, no parsing): ${bare.toFixed(2)} s = ${rate(bare)} comments/s`,
  );
} finally {
  rmSync(directory, { recursive: true, force: true });
}
