/**
 * Reads of stored tasks: one task, pages of an account's tasks, the in-flight counts and the operators' overview.
 *
 * One of the task storage's ports (docs/engine.md "Storage"): the memory implementation is `TaskStorage.layerMemory`,
 * the SQL one (SQLite, PostgreSQL) `SqlTaskStorage.layer`; each provides every port.
 *
 * @since 0.1.0
 */
import type { Task } from "@mediagate/contract"
import type { PersistenceError } from "@mediagate/persistence/PersistenceError"
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type { TaskRecord } from "./TaskRecord.js"
/**
 * Filters and keyset position of a list (newest first).
 *
 * @since 0.1.0
 * @category models
 */
export interface ListQuery {
  readonly status?: Task.TaskStatus | undefined
  readonly provider?: string | undefined
  readonly model?: string | undefined
  /** Epoch ms, inclusive. */
  readonly createdAfter?: number | undefined
  /** Epoch ms, exclusive. */
  readonly createdBefore?: number | undefined
  /** Task id prefix. */
  readonly idPrefix?: string | undefined
  /**
   * Words of the prompt ({@link searchWords}): a task matches when each is the start of a word of its prompt
   * (case and, on SQLite and in memory, accents ignored).
   */
  readonly words?: ReadonlyArray<string> | undefined
  /** Only the tasks of this environment (a key's view); undefined: both (operators). */
  readonly environment?: TaskRecord["environment"] | undefined
  /** Only tasks with an id below this one (the keyset of the next page). */
  readonly beforeId?: string | undefined
  readonly limit: number
}

/**
 * Filters and keyset position of an account's changes (oldest change first): the list's filters, in one environment.
 *
 * @since 0.1.0
 * @category models
 */
export interface ChangeQuery extends Omit<ListQuery, "beforeId" | "limit" | "environment"> {
  readonly environment: TaskRecord["environment"]
  /** Only tasks changed at or after this time (epoch ms, the storage clock: `TaskRecord.changedAt`). */
  readonly since: number
  /** Only changes after this one (the keyset of the next page). */
  readonly after?: ChangeKey | undefined
  /**
   * Changes the reader has already (a stream reading again what it read before): left out of the page's items
   * before their rows are read (SQL: only their index entries are).
   */
  readonly known?: ((change: ChangeKey) => boolean) | undefined
  /** The most changes a page covers (known ones and those the filters leave out included). */
  readonly limit: number
}

/**
 * Where a change stands in an account's changes: its time, then its task's id.
 *
 * @since 0.1.0
 * @category models
 */
export interface ChangeKey {
  readonly changedAt: number
  readonly id: string
}

/**
 * A page of changes: the tasks that pass the filters and that the reader does not know, oldest change first, the
 * keys of every change covered, and the key after the page's last change when more may follow.
 *
 * @since 0.1.0
 * @category models
 */
export interface ChangePage {
  readonly items: ReadonlyArray<TaskRecord>
  /** Every change the page covers, known ones and those the filters leave out included. */
  readonly keys: ReadonlyArray<ChangeKey>
  readonly next: ChangeKey | undefined
}

/** The most words a prompt search matches on (the rest of the text is ignored). */
const maxSearchWords = 8

/** The runs of letters and digits of `text` (NFKC-normalized, lower-cased). */
const wordsOf = (text: string): ReadonlyArray<string> =>
  text.normalize("NFKC").toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []

/**
 * The words a prompt search looks for: the runs of letters and digits of `text`, lower-cased, each once, at most 8.
 *
 * @since 0.1.0
 * @category utils
 */
export const searchWords = (text: string): ReadonlyArray<string> => [...new Set(wordsOf(text))].slice(0, maxSearchWords)

/** Words as the memory storage matches them: lower-cased, accents removed. */
const folded = (text: string): ReadonlyArray<string> => wordsOf(text.normalize("NFKD").replace(/\p{M}/gu, ""))

/**
 * The memory storage's prompt search: whether each of `words` is the start of a word of a task's prompt (the words
 * folded once, each task's prompt on its test).
 *
 * @since 0.1.0
 * @category utils
 */
export const promptMatcher = (words: ReadonlyArray<string>): (task: TaskRecord) => boolean => {
  const sought = words.map((word) => folded(word)[0])
  return (task) => {
    const prompt = task.input["prompt"]
    if (typeof prompt !== "string") return false
    const own = folded(prompt)
    return sought.every((start) => start !== undefined && own.some((word) => word.startsWith(start)))
  }
}

/**
 * Whether a task passes a list's filters besides its account (the memory storage; both storages' prompt words on a
 * change page).
 *
 * @since 0.1.0
 * @category utils
 */
export const listFilter = (query: Omit<ListQuery, "beforeId" | "limit">): (task: TaskRecord) => boolean => {
  const hasWords = query.words === undefined || query.words.length === 0 ? undefined : promptMatcher(query.words)
  return (task) =>
    (query.environment === undefined || task.environment === query.environment) &&
    (query.status === undefined || task.status === query.status) &&
    (query.provider === undefined || task.provider === query.provider) &&
    (query.model === undefined || task.model === query.model) &&
    (query.createdAfter === undefined || task.createdAt >= query.createdAfter) &&
    (query.createdBefore === undefined || task.createdAt < query.createdBefore) &&
    (query.idPrefix === undefined || task.id.startsWith(query.idPrefix)) &&
    (hasWords === undefined || hasWords(task))
}

/**
 * Whether a task is the account's, and of `environment` when given (both storages).
 *
 * @since 0.1.0
 * @category utils
 */
export const ownedBy = (task: TaskRecord, accountId: string, environment?: TaskRecord["environment"]): boolean =>
  task.accountId === accountId && (environment === undefined || task.environment === environment)

/**
 * A page of tasks.
 *
 * @since 0.1.0
 * @category models
 */
export interface ListPage {
  readonly items: ReadonlyArray<TaskRecord>
  readonly hasMore: boolean
  /** Tasks matching the filters (all pages). */
  readonly total: number
}

/**
 * Every account's tasks per state, and the active tasks due now and not leased ({@link TaskReads} `overview`).
 *
 * @since 0.1.0
 * @category models
 */
export interface Overview {
  readonly byStatus: Readonly<Record<Task.TaskStatus, number>>
  readonly due: number
}

/**
 * Reads of stored tasks.
 *
 * @since 0.1.0
 * @category services
 */
export class TaskReads extends Context.Tag("@mediagate/engine/TaskReads")<TaskReads, {
  /** A task of an account (and of `environment` when given: a key sees only the tasks of its environment). */
  readonly get: (
    accountId: string,
    id: string,
    environment?: TaskRecord["environment"]
  ) => Effect.Effect<Option.Option<TaskRecord>, PersistenceError>
  /** A task by id alone (workers, operators, tests). */
  readonly getById: (id: string) => Effect.Effect<Option.Option<TaskRecord>, PersistenceError>
  /** A page of an account's tasks (of every account's when `accountId` is undefined: operators), newest first. */
  readonly list: (accountId: string | undefined, query: ListQuery) => Effect.Effect<ListPage, PersistenceError>
  /**
   * A page of an account's changes: its tasks whose visible state changed at or after `since` (and after `after`),
   * oldest change first, that pass the filters (the account's event stream).
   */
  readonly changes: (accountId: string, query: ChangeQuery) => Effect.Effect<ChangePage, PersistenceError>
  /**
   * How many tasks are active (`pending`, `queued`, `running`) in an account and, of those, for one key (the
   * in-flight limits). SQL: the account's from the counters, the key's from the account's active tasks.
   */
  readonly activeCounts: (
    accountId: string,
    keyId: string
  ) => Effect.Effect<{ readonly account: number; readonly key: number }, PersistenceError>
  /**
   * A pending task's place among its account's pending tasks of its environment, oldest first (1: the next to
   * start).
   */
  readonly pendingPosition: (
    task: Pick<TaskRecord, "id" | "accountId" | "environment">
  ) => Effect.Effect<number, PersistenceError>
  /**
   * Operators: every account's tasks per state (SQL: exact, from the counters) and how many active tasks are due
   * now and not leased (work waiting for a worker).
   */
  readonly overview: Effect.Effect<Overview, PersistenceError>
}>() {}
