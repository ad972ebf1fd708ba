/**
 * Reading the text files of the JSON imports, gzip-compressed or not (Remark42 writes its backups
 * gzipped; a Commento export is often downloaded as `.json.gz`): line by line for JSON lines, whole
 * and bounded for a single JSON document.
 */
import { createReadStream } from "node:fs";
import { open } from "node:fs/promises";
import type { Readable } from "node:stream";
import { pipeline } from "node:stream";
import { createGunzip } from "node:zlib";
import { ImportFormatError } from "./items.js";

/** The longest line of a JSON-lines file: far beyond any comment, short of exhausting memory. */
export const MAX_LINE_BYTES = 16 * 1024 * 1024;

/** Whether the file starts with the gzip magic number (RFC 1952 §2.3.1). */
async function isGzip(path: string): Promise<boolean> {
  const handle = await open(path, "r");
  try {
    const head = Buffer.alloc(2);
    const { bytesRead } = await handle.read(head, 0, 2, 0);
    return bytesRead === 2 && head[0] === 0x1f && head[1] === 0x8b;
  } finally {
    await handle.close();
  }
}

/** The bytes of the file, decompressed when gzipped; an error of either stream ends the iteration. */
async function openBytes(path: string): Promise<Readable> {
  const file = createReadStream(path, { highWaterMark: 64 * 1024 });
  if (!(await isGzip(path))) return file;
  // pipeline destroys the gunzip stream with the error of either side, which the reader then throws.
  return pipeline(file, createGunzip(), () => {});
}

/**
 * The lines of a UTF-8 text file (gzip or not) with their numbers from 1, `\r\n` or `\n`; blank lines
 * are skipped. Holds one chunk and one line in memory.
 * @throws ImportFormatError when a line is longer than {@link MAX_LINE_BYTES}
 */
export async function* textLines(path: string): AsyncGenerator<{ readonly number: number; readonly text: string }> {
  const decoder = new TextDecoder("utf-8");
  let pending = "";
  let number = 0;
  for await (const chunk of await openBytes(path)) {
    pending += decoder.decode(chunk as Buffer, { stream: true });
    let start = 0;
    for (let end = pending.indexOf("\n"); end >= 0; end = pending.indexOf("\n", start)) {
      number++;
      const text = pending.slice(start, end).replace(/\r$/, "");
      start = end + 1;
      if (text.trim() !== "") yield { number, text };
    }
    pending = pending.slice(start);
    if (pending.length > MAX_LINE_BYTES) throw new ImportFormatError(`line ${number + 1}: longer than 16 MiB`);
  }
  pending += decoder.decode();
  if (pending.trim() !== "") yield { number: number + 1, text: pending.replace(/\r$/, "") };
}

/**
 * Parses one line of JSON.
 * @throws ImportFormatError `line <n>: <what JSON.parse says>`
 */
export function parseLine(line: { readonly number: number; readonly text: string }): unknown {
  try {
    return JSON.parse(line.text);
  } catch (error) {
    throw new ImportFormatError(`line ${line.number}: not JSON (${(error as Error).message})`);
  }
}

/**
 * The whole text of a file (gzip or not) of at most `maxBytes` once decompressed.
 * @throws ImportFormatError beyond `maxBytes`
 */
export async function wholeText(path: string, maxBytes: number): Promise<string> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of await openBytes(path)) {
    total += (chunk as Buffer).length;
    if (total > maxBytes) {
      throw new ImportFormatError(`the file holds more than ${Math.round(maxBytes / 1024 / 1024)} MiB of JSON`);
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
}
