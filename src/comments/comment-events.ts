/**
 * New comments as stream events: `comments.streams` receives every new comment
 * as one event through the platform's event sink, so that a stream with an output
 * notifies the author. Never the content, nor the author's website.
 */
import type { EventSink, SinkEvent } from "../platform/events.js";

/** What an event tells of a new comment. */
export interface NewComment {
  readonly id: string;
  readonly website: string;
  readonly article: string;
  /** The author's name as posted (not HTML-escaped: an event is not HTML). */
  readonly author: string;
  readonly approved: boolean;
  /** Creation time, milliseconds since the Unix epoch. */
  readonly timestamp: number;
}

/**
 * The event of a new comment: `{"service": "comment", "host": <website>, "article", "comment-id",
 * "author", "state": "pending" or "approved", "description": "New comment <id> on article
 * <article>", "time": <seconds>}`.
 */
export function commentEvent(comment: NewComment): SinkEvent {
  return {
    service: "comment",
    host: comment.website,
    article: comment.article,
    "comment-id": comment.id,
    author: comment.author,
    state: comment.approved ? "approved" : "pending",
    description: `New comment ${comment.id} on article ${comment.article}`,
    time: comment.timestamp / 1000,
  };
}

/** Pushes every new comment into the configured streams; never throws nor awaits. */
export class CommentPublisher {
  constructor(
    readonly sink: EventSink,
    /** `comments.streams`. */
    readonly streams: readonly string[],
  ) {}

  /** Pushes the event of `comment` into every configured stream, in the order of the list. */
  publish(comment: NewComment): void {
    if (this.streams.length === 0) return;
    const events = [commentEvent(comment)];
    for (const stream of this.streams) this.sink.push(stream, events);
  }
}
