/**
 * Test data shared by the packages' suites: a new task as `TaskStorage.accept` takes it, a task record as storage
 * holds it, and the principal of an API key. The defaults describe a live, uncharged vendor3 text-to-video task of
 * `acct_a` (key `key_a`) created now and due within an hour; a test overrides what it looks at.
 *
 * The engine's own suites use these builders too: this module imports the contract's types and the engine's
 * `TaskRecord` module (its `fromNew` builds the stored record), and the task id from `@mediagate/persistence/Ids`:
 * testing's sources depend on the engine's sources, the engine's tests on testing's, and no build step waits on
 * itself.
 */
import type { Security } from "@mediagate/contract"
import { fromNew, type NewTask, type TaskRecord } from "@mediagate/engine/TaskRecord"
import * as Ids from "@mediagate/persistence/Ids"

/** How long a default task has until its deadline. */
export const deadlineMs = 3_600_000

/**
 * A new task (what `TaskStorage.accept` stores): the defaults above, with `overrides` over them. The id is a fresh
 * task id of `createdAt` (ids of one process are monotonic), the deadline an hour after `createdAt`.
 */
export const newTask = (overrides: Partial<NewTask> = {}): NewTask => {
  const createdAt = overrides.createdAt ?? Date.now()
  return {
    id: overrides.id ?? Ids.taskId(createdAt),
    accountId: "acct_a",
    keyId: "key_a",
    environment: "live",
    endpoint: "vendor3/text-to-video",
    provider: "vendor3",
    operation: "text-to-video",
    mediaType: "video",
    model: "vendor3-3",
    input: { prompt: "a cat" },
    metadata: {},
    webhookUrl: null,
    originalTaskId: null,
    chargedMicros: 0,
    estimatedSeconds: 60,
    createdAt,
    deadlineAt: createdAt + deadlineMs,
    ...overrides
  }
}

/**
 * A stored task: the new task of {@link newTask} as storage holds it once accepted (`pending`, unclaimed, due at
 * `createdAt`, as the engine's `TaskRecord.fromNew` builds it), with `overrides` over it, e.g. a claimed, `queued`
 * task. The deadline follows an overridden `createdAt` unless `deadlineAt` is overridden too.
 */
export const taskRecord = (overrides: Partial<TaskRecord> = {}): TaskRecord => {
  const createdAt = overrides.createdAt ?? Date.now()
  const task = newTask(overrides.id === undefined ? { createdAt } : { createdAt, id: overrides.id })
  return { ...fromNew(task), ...overrides }
}

/** The principal of a live key (`key_a` of `acct_a`) without limits or expiry, with `overrides` over it. */
export const principal = (overrides: Partial<Security.Principal> = {}): Security.Principal => ({
  accountId: "acct_a",
  keyId: "key_a",
  environment: "live",
  permissions: {},
  spendLimitMicros: null,
  spentMicros: 0,
  expiresAt: null,
  clientAddress: undefined,
  ...overrides
})
