/**
 * The alerts' writes gathered into batches (docs/alerts.md): the stored states and history rows of
 * the transitions of a short period (at most {@link DEFAULT_FLUSH_DELAY_MS}) go to the database
 * together, in one transaction of multi-row statements, instead of one statement each. 2 000 alerts
 * triggering over 20 s cost about 450 µs of CPU each when every row was its own statement.
 *
 * - Each write answers a promise that settles once its batch is committed: the evaluator sends a
 *   notification only after its state is stored, as before.
 * - Batches are written one at a time, in the order they were gathered, so a later state of an
 *   alert is never overwritten by an earlier one; within a batch the last state of an alert wins.
 * - Bound: a batch holds at most {@link MAX_BATCH_ROWS} rows; a full batch is written at once
 *   (behind the one in flight) and the next one starts. Nothing is dropped: the states are one row
 *   per alert at most, and history rows one per notification the notifier already holds.
 * - A batch that fails is logged, then its rows are written one by one, so only the rows that fail
 *   on their own are lost; each of those rejects the promise of its write (the evaluator logs it).
 * - {@link AlertWriteQueue.flush} writes what is gathered now: reads and shutdown call it first.
 */
import type { AlertHistoryEntry, EvaluatorLogger, StoredAlert } from "./evaluator.js";

/** Milliseconds a write waits for others before its batch is written. */
export const DEFAULT_FLUSH_DELAY_MS = 100;

/** Rows of one batch at most (states and history rows together). */
export const MAX_BATCH_ROWS = 500;

/** One state to store, or (`state` undefined) to delete. */
export interface StateWrite {
  readonly check: string;
  readonly output: string;
  readonly state: StoredAlert | undefined;
  /** `updated_at`, milliseconds since the epoch. */
  readonly nowMs: number;
}

/** What one batch writes. */
export interface AlertWriteBatch {
  /** At most one write per (check, output). */
  readonly states: readonly StateWrite[];
  readonly history: readonly AlertHistoryEntry[];
}

/** Where batches go (store.ts): the batch in one transaction, and each row alone after a failure. */
export interface AlertBatchWriter {
  writeBatch(batch: AlertWriteBatch): Promise<void>;
  writeState(write: StateWrite): Promise<void>;
  writeHistory(entry: AlertHistoryEntry): Promise<void>;
}

/** Options of {@link AlertWriteQueue}. */
export interface AlertWriteQueueOptions {
  /** Where a failed batch is reported; none: only the rows that still fail are (by their writers). */
  readonly logger?: EvaluatorLogger | undefined;
  /** Default {@link DEFAULT_FLUSH_DELAY_MS}. */
  readonly flushDelayMs?: number | undefined;
  /** Default {@link MAX_BATCH_ROWS}. */
  readonly maxRows?: number | undefined;
}

/** One batch while it gathers, then while it is written. */
class Batch {
  readonly states = new Map<string, StateWrite>();
  readonly history: AlertHistoryEntry[] = [];
  /** Rows that failed alone, with their error (states by key). */
  readonly failedStates = new Map<string, unknown>();
  readonly failedHistory = new Map<AlertHistoryEntry, unknown>();
  /** Settles (never rejects) once the batch was written. */
  readonly done: Promise<void>;
  readonly settle: () => void;

  constructor() {
    let settle: () => void = () => {};
    this.done = new Promise<void>((resolve) => {
      settle = resolve;
    });
    this.settle = settle;
  }

  get rows(): number {
    return this.states.size + this.history.length;
  }
}

/** Gathers the alerts' writes and writes them in batches. */
export class AlertWriteQueue {
  readonly #writer: AlertBatchWriter;
  readonly #logger: EvaluatorLogger | undefined;
  readonly #delayMs: number;
  readonly #maxRows: number;
  #gathering = new Batch();
  #timer: NodeJS.Timeout | undefined;
  /** The last batch handed to the writer: the next one is written after it. */
  #tail: Promise<void> = Promise.resolve();

  constructor(writer: AlertBatchWriter, options: AlertWriteQueueOptions = {}) {
    this.#writer = writer;
    this.#logger = options.logger;
    this.#delayMs = options.flushDelayMs ?? DEFAULT_FLUSH_DELAY_MS;
    this.#maxRows = options.maxRows ?? MAX_BATCH_ROWS;
  }

  /** Stores one alert's state with its batch; rejects if it could not be written. */
  saveState(state: StoredAlert, nowMs: number): Promise<void> {
    return this.#addState({ check: state.check, output: state.output, state, nowMs });
  }

  /** Deletes one alert's state with its batch; rejects if it could not be deleted. */
  deleteState(check: string, output: string, nowMs: number): Promise<void> {
    return this.#addState({ check, output, state: undefined, nowMs });
  }

  /** Records one history row with its batch; rejects if it could not be written. */
  addHistory(entry: AlertHistoryEntry): Promise<void> {
    const batch = this.#gathering;
    batch.history.push(entry);
    this.#gathered(batch);
    return batch.done.then(() => {
      if (batch.failedHistory.has(entry)) throw batch.failedHistory.get(entry);
    });
  }

  /** Writes what is gathered now; resolves once every batch gathered so far was written. */
  flush(): Promise<void> {
    if (this.#gathering.rows > 0) this.#seal();
    return this.#tail;
  }

  /** Rows gathered and not yet handed to the writer. */
  get pending(): number {
    return this.#gathering.rows;
  }

  #addState(write: StateWrite): Promise<void> {
    const batch = this.#gathering;
    const key = `${write.check}\u0000${write.output}`;
    // The last state of an alert wins: a multi-row upsert may not name a row twice (PostgreSQL).
    batch.states.delete(key);
    batch.states.set(key, write);
    this.#gathered(batch);
    return batch.done.then(() => {
      if (batch.failedStates.has(key)) throw batch.failedStates.get(key);
    });
  }

  /** After a row joined `batch`: a full batch is written at once, else within the delay. */
  #gathered(batch: Batch): void {
    if (batch.rows >= this.#maxRows) {
      this.#seal();
    } else if (this.#timer === undefined) {
      this.#timer = setTimeout(() => this.#seal(), this.#delayMs);
      this.#timer.unref();
    }
  }

  /** Hands the gathering batch to the writer (after the one in flight) and starts another. */
  #seal(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    const batch = this.#gathering;
    this.#gathering = new Batch();
    if (batch.rows === 0) return;
    // #write keeps the errors of its rows; the tail never rejects, so later batches still go.
    this.#tail = this.#tail.then(() => this.#write(batch)).then(batch.settle, batch.settle);
  }

  /** Writes `batch` in one transaction, else row by row, keeping the errors of the rows that fail. */
  async #write(batch: Batch): Promise<void> {
    const states = [...batch.states.values()];
    try {
      await this.#writer.writeBatch({ states, history: batch.history });
      return;
    } catch (error) {
      this.#logger?.error(
        { err: error, rows: batch.rows },
        "could not write a batch of alert states and history; writing its rows one by one",
      );
    }
    for (const [key, write] of batch.states) {
      try {
        await this.#writer.writeState(write);
      } catch (error) {
        batch.failedStates.set(key, error);
      }
    }
    for (const entry of batch.history) {
      try {
        await this.#writer.writeHistory(entry);
      } catch (error) {
        batch.failedHistory.set(entry, error);
      }
    }
  }
}
