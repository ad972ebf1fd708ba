/**
 * Framing of the Riemann protocol over TCP (docs/streams.md): every message is a 4-byte
 * big-endian length, then that many bytes of protobuf `Msg`.
 *
 * A {@link FrameReader} collects the chunks a socket delivers and cuts frames out of them. Memory
 * is bounded by what the peer actually sent of the current frame: a declared length is checked
 * against the maximum as soon as its 4 bytes are in, nothing is allocated ahead of the bytes, and a
 * frame that lies within one chunk is handed out without copying.
 */
import { LENGTH_PREFIX } from "./protocol.js";

/** What {@link FrameReader.next} found. */
export type FrameResult =
  /** A whole frame: `body` is the message, without its length prefix. */
  | { readonly kind: "frame"; readonly body: Buffer }
  /** Not enough bytes yet for a whole frame. */
  | { readonly kind: "incomplete" }
  /** The next frame declares a length over the maximum (bytes, prefix excluded); nothing else can be read. */
  | { readonly kind: "oversized"; readonly length: number };

const INCOMPLETE: FrameResult = { kind: "incomplete" };

/** Cuts length-prefixed frames out of a stream of chunks. */
export class FrameReader {
  readonly #chunks: Buffer[] = [];
  /** Where the unread bytes of the first chunk start. */
  #offset = 0;
  #buffered = 0;

  /** @param maxFrameSize the largest frame body accepted, in bytes (`streams.riemann.max-frame-size`) */
  constructor(readonly maxFrameSize: number) {}

  /** Bytes received and not yet handed out in a frame. */
  get buffered(): number {
    return this.#buffered;
  }

  /** The length the next frame declares, once its prefix is in. */
  get declaredLength(): number | undefined {
    return this.#buffered < LENGTH_PREFIX ? undefined : this.#readLength();
  }

  /** Adds bytes received from the peer. */
  push(chunk: Buffer): void {
    if (chunk.length === 0) return;
    this.#chunks.push(chunk);
    this.#buffered += chunk.length;
  }

  /** Forgets everything buffered (the connection is closing). */
  clear(): void {
    this.#chunks.length = 0;
    this.#offset = 0;
    this.#buffered = 0;
  }

  /** The next whole frame, or why there is none yet. */
  next(): FrameResult {
    if (this.#buffered < LENGTH_PREFIX) return INCOMPLETE;
    const length = this.#readLength();
    if (length > this.maxFrameSize) return { kind: "oversized", length };
    if (this.#buffered < LENGTH_PREFIX + length) return INCOMPLETE;
    this.#skip(LENGTH_PREFIX);
    return { kind: "frame", body: this.#take(length) };
  }

  /** The first buffered chunk; called only with bytes buffered, so there is one. */
  #first(): Buffer {
    const first = this.#chunks[0];
    if (first === undefined) throw new Error("FrameReader: no chunk buffered");
    return first;
  }

  #readLength(): number {
    const first = this.#first(); // #buffered ≥ 4
    if (first.length - this.#offset >= LENGTH_PREFIX) return first.readUInt32BE(this.#offset);
    // The prefix spans chunks: gather its bytes.
    let length = 0;
    let read = 0;
    let offset = this.#offset;
    for (const chunk of this.#chunks) {
      for (let i = offset; i < chunk.length && read < LENGTH_PREFIX; i++, read++) {
        length = length * 256 + chunk.readUInt8(i);
      }
      if (read === LENGTH_PREFIX) break;
      offset = 0;
    }
    return length;
  }

  #skip(count: number): void {
    let remaining = count;
    while (remaining > 0) {
      const first = this.#first();
      const available = first.length - this.#offset;
      if (available > remaining) {
        this.#offset += remaining;
        break;
      }
      remaining -= available;
      this.#chunks.shift();
      this.#offset = 0;
    }
    this.#buffered -= count;
  }

  /** The next `count` bytes (all buffered): a view of the first chunk when it holds them, else a copy. */
  #take(count: number): Buffer {
    const first = this.#chunks[0];
    if (first === undefined || count === 0) return Buffer.alloc(0);
    if (first.length - this.#offset >= count) {
      const body = first.subarray(this.#offset, this.#offset + count);
      this.#skip(count);
      return body;
    }
    const body = Buffer.allocUnsafe(count);
    let written = 0;
    while (written < count) {
      const chunk = this.#first();
      const end = Math.min(chunk.length, this.#offset + count - written);
      chunk.copy(body, written, this.#offset, end);
      written += end - this.#offset;
      if (end === chunk.length) {
        this.#chunks.shift();
        this.#offset = 0;
      } else {
        this.#offset = end;
      }
    }
    this.#buffered -= count;
    return body;
  }
}
