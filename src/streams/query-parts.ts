/**
 * Answers larger than one NATS message (cluster mode, docs/cluster.md): a stream's owner sends an
 * answer that fits the connection's `max_payload` as one plain reply, as before, and a larger one as
 * numbered parts to the asker's inbox, each carrying header `Vigie-Part: <n>` (from 0) and at most
 * `max_payload` − {@link HEADER_ROOM} bytes of the answer, then an empty message with header
 * `Vigie-Parts: <count>` that ends it. NATS keeps the order of one publisher's messages to one
 * subscriber; the numbers tell a lost part (core NATS delivers at most once) from a complete answer.
 *
 * The asker reassembles the parts within a byte bound, waiting at most a given time for each part,
 * and gives up (unsubscribing) at the first part out of order, beyond the bound or late.
 */
import type { Msg, NatsConnection } from "@nats-io/transport-node";
import { natsLibrary } from "../platform/cluster/index.js";

/** Header of a part: its number, from 0. */
const PART_HEADER = "Vigie-Part";

/** Header of the empty message that ends an answer sent in parts: how many parts came before it. */
const PARTS_HEADER = "Vigie-Parts";

/** Bytes of a message kept for its headers (`NATS/1.0`, one `Vigie-Part` line: about 40). */
const HEADER_ROOM = 1_024;

/** NATS's default `max_payload` (1 MiB), when the server has not told its own yet. */
const DEFAULT_MAX_PAYLOAD = 1024 * 1024;

/** Why an answer in parts could not be received. */
export type PartsFailure =
  /** No answer, or a part not received within the wait (or out of order, or the connection failed). */
  | { readonly kind: "unavailable" }
  /** The answer grew beyond the byte bound: the parts received are dropped, the rest ignored. */
  | { readonly kind: "too-large" };

/** A failure to receive an answer in parts. */
export class PartsError extends Error {
  constructor(readonly failure: PartsFailure) {
    super(failure.kind === "too-large" ? "the answer is larger than allowed" : "no complete answer");
    this.name = "PartsError";
  }
}

/** The largest part the connection's server accepts with its headers, in bytes. */
function partSize(connection: NatsConnection): number {
  const maxPayload = connection.info?.max_payload ?? DEFAULT_MAX_PAYLOAD;
  return Math.max(HEADER_ROOM, maxPayload - HEADER_ROOM);
}

/**
 * Replies `answer` to `message`: as one message when it fits the server's `max_payload`, in parts
 * otherwise (see the module's description).
 * @throws Error from the NATS client when the connection is closed (the asker then times out)
 */
export function respondInParts(connection: NatsConnection, message: Msg, answer: Uint8Array): void {
  const size = partSize(connection);
  if (answer.length <= size) {
    message.respond(answer);
    return;
  }
  const { Empty, headers } = natsLibrary().transport;
  let part = 0;
  for (let start = 0; start < answer.length; start += size) {
    const partHeaders = headers();
    partHeaders.set(PART_HEADER, String(part));
    message.respond(answer.subarray(start, start + size), { headers: partHeaders });
    part++;
  }
  const end = headers();
  end.set(PARTS_HEADER, String(part));
  message.respond(Empty, { headers: end });
}

/** Options of {@link requestInParts}. */
export interface PartsRequest {
  /** Milliseconds to wait for the first message, and for each following one. */
  readonly partTimeoutMs: number;
  /** Bytes the whole answer may hold at most. */
  readonly maxBytes: number;
}

/**
 * Sends `data` on `subject` and receives the answer, one plain message or parts (see the module's
 * description), reassembled.
 * @returns the answer's bytes
 * @throws PartsError `unavailable` when nobody answers, a message is late or a part is missing;
 *   `too-large` as soon as the parts received exceed `maxBytes`
 */
export function requestInParts(
  connection: NatsConnection,
  subject: string,
  data: Uint8Array,
  options: PartsRequest,
): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const parts: Uint8Array[] = [];
    let size = 0;
    let done = false;
    let timer: NodeJS.Timeout | undefined;
    const inbox = natsLibrary().transport.createInbox();
    const finish = (outcome: () => void) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      parts.length = 0;
      try {
        subscription.unsubscribe();
      } catch {
        // The connection closed meanwhile: the subscription went with it.
      }
      outcome();
    };
    const fail = (kind: PartsFailure["kind"]) => finish(() => reject(new PartsError({ kind })));
    const wait = () => {
      clearTimeout(timer);
      timer = setTimeout(() => fail("unavailable"), options.partTimeoutMs);
    };
    const receive = (message: Msg) => {
      const partHeader = message.headers?.get(PART_HEADER) ?? "";
      const endHeader = message.headers?.get(PARTS_HEADER) ?? "";
      if (partHeader === "" && endHeader === "") {
        // One plain message: the whole answer (or, without data, "no responders").
        if (parts.length > 0 || message.data.length === 0) fail("unavailable");
        else if (message.data.length > options.maxBytes) fail("too-large");
        else finish(() => resolve(message.data));
      } else if (partHeader !== "") {
        if (partHeader !== String(parts.length)) return fail("unavailable");
        size += message.data.length;
        if (size > options.maxBytes) return fail("too-large");
        parts.push(message.data);
        wait();
      } else if (endHeader === String(parts.length)) {
        const answer = Buffer.concat(parts, size);
        finish(() => resolve(answer));
      } else {
        fail("unavailable");
      }
    };
    const subscription = connection.subscribe(inbox, {
      callback: (error, message) => {
        if (error === null) receive(message);
        else fail("unavailable");
      },
    });
    wait();
    try {
      connection.publish(subject, data, { reply: inbox });
    } catch {
      fail("unavailable");
    }
  });
}
