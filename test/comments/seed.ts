/**
 * Comments stored with chosen timestamps, for the paging and count tests: written through a
 * {@link CommentStore} on the server's own database (the routes stamp comments with the clock,
 * which would leave no ties to test). They bypass the public list's cache, so tests that read the
 * whole list after seeding use an article nobody read before.
 */
import { randomBytes } from "node:crypto";
import type { Comment } from "../../src/comments/resources.js";
import { CommentStore } from "../../src/comments/storage.js";
import type { VigieServer } from "../../src/server.js";

/** A comment to seed: where, when (milliseconds since the epoch) and whether it is approved. */
export interface Seed {
  readonly website: string;
  readonly article: string;
  readonly timestamp: number;
  readonly approved: boolean;
}

/** A store on the server's database with a rate limit no test reaches. */
export function seedStore(server: VigieServer): CommentStore {
  return new CommentStore(server.context.database, { limit: 1_000_000, windowMs: 1 });
}

/**
 * Stores the comments one after the other and returns them as the API shows them.
 * @throws Error when the store refuses one (it never should: fresh signatures, no rate limit)
 */
export async function seed(store: CommentStore, seeds: readonly Seed[]): Promise<Comment[]> {
  const comments: Comment[] = [];
  for (const [index, { website, article, timestamp, approved }] of seeds.entries()) {
    const comment = await store.add({
      website,
      article,
      author: `author-${index}`,
      authorWebsite: undefined,
      content: `comment ${index} at ${timestamp}`,
      approved,
      signature: randomBytes(32).toString("hex"),
      challengeExpiresAt: timestamp + 600_000,
      clientAddress: `10.0.${index >> 8}.${index & 255}`,
      now: timestamp,
    });
    comments.push(comment);
  }
  return comments;
}

/** Orders comments as the lists do: timestamp, then id. */
export function oldestFirst(a: Comment, b: Comment): number {
  if (a.timestamp !== b.timestamp) return a.timestamp - b.timestamp;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}
