/**
 * The engine's implementation of the contract's `TaskService` port: accept (plan, charge, store in one step),
 * read, list, retry and cancel, all scoped to the caller's account and environment: a key sees only the tasks of
 * its own environment (a task of the other one is answered as unknown).
 *
 * @since 0.1.0
 */
import {
  Catalog,
  Envelope,
  Errors,
  type Generation,
  Money,
  type Security,
  Services,
  Task,
  Tracing
} from "@mediagate/contract"
import * as IdempotencyWindow from "@mediagate/persistence/IdempotencyWindow"
import * as Ids from "@mediagate/persistence/Ids"
import { type PersistenceError, toUnavailable } from "@mediagate/persistence/PersistenceError"
import * as Chunk from "effect/Chunk"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FiberSet from "effect/FiberSet"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { createHash } from "node:crypto"
import { Admission } from "./Admission.js"
import * as Changes from "./internal/changes.js"
import * as EngineMetrics from "./internal/metrics.js"
import { Placement } from "./Placement.js"
import { Planner } from "./Planner.js"
import { ResultLinks } from "./ResultLinks.js"
import { type IdempotencyClaim, TaskLifecycle } from "./TaskLifecycle.js"
import { type ListQuery, searchWords, TaskReads } from "./TaskReads.js"
import {
  type NewTask,
  type TaskRecord,
  thumbnailOf,
  toCreationAck,
  toRetryAck,
  toSummary,
  toTask
} from "./TaskRecord.js"
import { Upstream } from "./Upstream.js"

/**
 * How long an `Idempotency-Key` is remembered: the shared window (`IdempotencyWindow.millis`, 24 h).
 *
 * @since 0.1.0
 * @category constants
 */
export const idempotencyWindowMs = IdempotencyWindow.millis

const unavailable = toUnavailable("storage failure")

/** A short fingerprint of a text (SHA-256, 16 characters of base64url). */
const fingerprint = (text: string): string => createHash("sha256").update(text, "utf8").digest("base64url").slice(0, 16)

/**
 * One page of a task list query (`GET /api/v1/tasks`, and across accounts for operators when `accountId` is
 * undefined): the query's filters and cursor to storage, the page's items shaped by `item`, the next cursor.
 *
 * @since 0.1.0
 * @category utils
 */
export const listPage = <A>(
  accountId: string | undefined,
  query: Task.TaskListQuery & { readonly environment?: TaskRecord["environment"] | undefined },
  item: (task: TaskRecord) => A
): Effect.Effect<Envelope.Page<A>, Errors.ValidationError | PersistenceError, TaskReads> =>
  Effect.gen(function*() {
    const storage = yield* TaskReads
    const beforeId = yield* Envelope.decodeIdCursor("task_", query.cursor)
    const page = yield* storage.list(accountId, {
      ...filtersOf(query),
      environment: query.environment,
      beforeId,
      limit: query.limit ?? Task.defaultPageSize
    })
    return Envelope.idPage(page, page.items.map(item))
  })

/** The filters of a list's query (or an event stream's) as the storage takes them. */
const filtersOf = (query: Task.TaskEventsQuery): Omit<ListQuery, "environment" | "beforeId" | "limit"> => ({
  status: query.status,
  provider: query.provider,
  model: query.model,
  createdAfter: query.created_after?.getTime(),
  createdBefore: query.created_before?.getTime(),
  ...searchOf(query.search)
})

/**
 * What a list's `search` looks for: a task id prefix when it could start an id (`t`, `ta`, ... `task_...`), else the
 * words of the prompt (none: nothing matches, as an id prefix would not).
 *
 * @since 0.1.0
 * @category utils
 */
export const searchOf = (search: string | undefined): Pick<ListQuery, "idPrefix" | "words"> => {
  if (search === undefined || search === "") return {}
  if (/^t(?:a(?:s(?:k(?:_[0-9A-Za-z]*)?)?)?)?$/.test(search)) return { idPrefix: search }
  const words = searchWords(search)
  return words.length === 0 ? { idPrefix: search } : { words }
}

const notFound = (id: string) => new Errors.TaskNotFound({ message: `task ${id} not found` })

/**
 * Builds the service.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = Effect.gen(function*() {
  const lifecycle = yield* TaskLifecycle
  const reads = yield* TaskReads
  const planner = yield* Planner
  const upstream = yield* Upstream
  const links = yield* ResultLinks
  // the node accepting here, recorded on its tasks (nodes apart from it leave them to it; see Placement)
  const nodeId = Option.match(yield* Effect.serviceOption(Placement), { onNone: () => null, onSome: (p) => p.nodeId })
  // while this node's workers are behind, a new task waits before it is created (see Admission)
  const admit = Option.match(yield* Effect.serviceOption(Admission), {
    onNone: () => Effect.void,
    onSome: (gate) => gate.admit
  })
  // best-effort upstream cancels run after the answer, owned by the service's scope
  const background = yield* FiberSet.make()

  // the API's view of a record, made once per record: storage answers the same record for a row read again
  // unchanged (`SqlRows.remembering`), as when a client polls a task that is waiting
  const presented = new WeakMap<TaskRecord, Task.Task>()
  const view = (task: TaskRecord) => {
    const known = presented.get(task)
    if (known !== undefined) return known
    const read = toTask(task)
    presented.set(task, read)
    return read
  }

  /**
   * Where a task waits: a pending one in its account's pending tasks (read now: it moves as others start), a queued
   * one in the upstream's queue (as last reported).
   */
  const positionOf = (
    task: Pick<TaskRecord, "id" | "accountId" | "environment" | "status" | "upstreamReport">
  ): Effect.Effect<Task.QueuePosition | undefined, PersistenceError> =>
    task.status === "pending"
      ? Effect.map(reads.pendingPosition(task), (account) => ({ account, upstream: null }))
      : Effect.succeed(upstreamPosition(task))

  /** A queued task's place in the upstream's queue (as last reported); nothing for any other state. */
  const upstreamPosition = (task: Pick<TaskRecord, "status" | "upstreamReport">): Task.QueuePosition | undefined =>
    task.status === "queued" ? { account: null, upstream: task.upstreamReport?.position ?? null } : undefined

  const refreshed = (result: Task.Task["result"]) =>
    result === undefined ? Effect.succeed(undefined) : links.refresh(result)

  /** A finished image task's first image, its link signed anew (a list item's thumbnail). */
  const thumbnail = (task: TaskRecord) => {
    const item = thumbnailOf(task)
    return item === undefined
      ? Effect.succeed(undefined)
      : Effect.map(links.refresh([item]), (items) => items[0]?.url)
  }

  /** The full read, with result links signed anew and where the task waits. */
  const present = (task: TaskRecord) => presentAt(task, positionOf(task))

  /** The full read, with result links signed anew and `where` the task waits. */
  const presentAt = <E>(task: TaskRecord, where: Effect.Effect<Task.QueuePosition | undefined, E>) =>
    Effect.map(Effect.zip(refreshed(view(task).result), where), ([result, position]) => ({
      read: result === undefined ? waiting(task, position) : {
        ...view(task),
        result,
        ...(position === undefined ? {} : { queue_position: position })
      },
      position
    }))

  /** A read without result links: one object per stored state and place (the server encodes its answer once). */
  const placed = new WeakMap<TaskRecord, { readonly place: string; readonly read: Task.Task }>()
  const waiting = (task: TaskRecord, position: Task.QueuePosition | undefined) => {
    if (position === undefined) return view(task)
    const place = `${position.account}.${position.upstream}`
    const known = placed.get(task)
    if (known?.place === place) return known.read
    const read = { ...view(task), queue_position: position }
    placed.set(task, { place, read })
    return read
  }

  /**
   * A state's version: the fingerprint of its view (made before links are signed, so alike on every node) and of
   * where it waits.
   */
  const versions = new WeakMap<TaskRecord, string>()
  const versionOf = (task: TaskRecord, position: Task.QueuePosition | undefined) => {
    let version = versions.get(task)
    if (version === undefined) {
      version = fingerprint(JSON.stringify(view(task)))
      versions.set(task, version)
    }
    return position === undefined ? version : `${version}.${position.account ?? 0}.${position.upstream ?? 0}`
  }
  const versioned = (task: TaskRecord): Effect.Effect<Services.TaskVersion, PersistenceError> =>
    Effect.map(present(task), ({ position, read }) => ({
      version: versionOf(task, position),
      task: read,
      terminal: Task.terminalStatuses.includes(task.status)
    }))

  /**
   * A change as the account's stream sends it: the read with result links signed anew and, while queued, the
   * upstream's place (a pending task's place among the account's moves with every start: it is on its own read and
   * stream, not sent to every stream of the account at each start).
   */
  const presentChange = (task: TaskRecord) =>
    Effect.map(presentAt(task, Effect.succeed(upstreamPosition(task))), ({ read }) => read)

  /** The states after `after`, read every `every` ms, until a terminal one or until the task is gone. */
  const changes =
    (accountId: string, id: string, environment: Security.Principal["environment"]) =>
    (after: Services.TaskVersion, every: number): Stream.Stream<Services.TaskVersion, Errors.ServiceUnavailable> =>
      Stream.unfoldChunkEffect(after, (
        last
      ): Effect.Effect<
        Option.Option<readonly [Chunk.Chunk<Services.TaskVersion>, Services.TaskVersion]>,
        Errors.ServiceUnavailable
      > =>
        last.terminal
          ? Effect.succeed(Option.none())
          : Effect.sleep(Duration.millis(every)).pipe(
            Effect.zipRight(reads.get(accountId, id, environment)),
            Effect.flatMap(Option.match({
              onNone: () => Effect.succeed(Option.none()),
              onSome: (task) =>
                Effect.map(versioned(task), (next) =>
                  next.version === last.version
                    ? Option.some([Chunk.empty<Services.TaskVersion>(), last] as const)
                    : Option.some([Chunk.of(next), next] as const))
            })),
            Effect.catchTag("PersistenceError", unavailable)
          ))

  const accept = (
    principal: Security.Principal,
    endpoint: Catalog.EndpointKey,
    request: Generation.AnyGenerationRequest,
    originalTaskId: string | null,
    idempotency: IdempotencyClaim | undefined
  ) =>
    Effect.gen(function*() {
      const plan = yield* planner.plan(endpoint, request)
      yield* admit
      const now = yield* Clock.currentTimeMillis
      const [provider, operation] = Catalog.partsOf(endpoint)
      const charged = principal.environment === "test" ? 0 : plan.priceMicros
      const task: NewTask = {
        id: Ids.taskId(now),
        accountId: principal.accountId,
        keyId: principal.keyId,
        environment: principal.environment,
        endpoint,
        provider,
        operation,
        mediaType: plan.mediaType,
        model: request.model,
        input: request.input,
        metadata: request.metadata ?? {},
        webhookUrl: request.webhookUrl ?? null,
        originalTaskId,
        chargedMicros: charged,
        estimatedSeconds: plan.estimatedSeconds,
        deadlineAt: now + plan.timeoutMs,
        createdAt: now,
        // the request's trace, continued by the task's worker steps and webhooks (undefined while tracing is off)
        traceContext: yield* Tracing.traceparent,
        nodeId
      }
      const charge = charged > 0
        ? {
          accountId: task.accountId,
          keyId: task.keyId,
          taskId: task.id,
          amountMicros: charged,
          description: `${task.model} ${task.operation}`
        }
        : undefined
      const result = yield* lifecycle.accept({ task, charge, idempotency })
      if (result._tag === "Created") EngineMetrics.created(result.task)
      return result.task
    })

  const noClaim: Effect.Effect<IdempotencyClaim | undefined> = Effect.succeed(undefined)
  const claimOf = (principal: Security.Principal, key: string | undefined, parts: ReadonlyArray<unknown>) =>
    key === undefined
      ? noClaim
      : Effect.map(
        Clock.currentTimeMillis,
        (now) => IdempotencyWindow.claim(key, [principal.environment, ...parts], now)
      )

  const findTask = (principal: Security.Principal, id: string) =>
    Effect.flatMap(
      reads.get(principal.accountId, id, principal.environment),
      (task) => Option.isSome(task) ? Effect.succeed(task.value) : Effect.fail(notFound(id))
    )

  // the spans of the hot paths, made once
  const createSpan = Tracing.span("TaskService.create")
  const getSpan = Tracing.span("TaskService.get")

  const service: Services.TaskService["Type"] = {
    create: (principal, command) =>
      Effect.flatMap(
        claimOf(principal, command.idempotencyKey, [command.endpoint, command.request]),
        (claim) => Effect.map(accept(principal, command.endpoint, command.request, null, claim), toCreationAck)
      ).pipe(Effect.catchTag("PersistenceError", unavailable), createSpan),

    get: (principal, id) =>
      Effect.flatMap(findTask(principal, id), present).pipe(
        Effect.map(({ read }) => read),
        Effect.catchTag("PersistenceError", unavailable),
        getSpan
      ),

    watch: (principal, id) =>
      Effect.flatMap(findTask(principal, id), versioned).pipe(
        Effect.map((current) => ({
          current,
          changes: changes(principal.accountId, id, principal.environment)
        })),
        Effect.catchTag("PersistenceError", unavailable),
        Tracing.span("TaskService.watch")
      ),

    estimate: (principal, { endpoint, request }) =>
      Effect.map(planner.plan(endpoint, request), (plan) => {
        const [provider, operation] = Catalog.partsOf(endpoint)
        const livePrice = Money.fromMicros(plan.priceMicros)
        return {
          type: operation,
          provider,
          model: request.model,
          price: principal.environment === "test" ? 0 : livePrice,
          live_price: livePrice,
          estimated_seconds: plan.estimatedSeconds,
          input: request.input
        }
      }).pipe(Tracing.span("TaskService.estimate")),

    changes: (principal, query, options) =>
      Changes.stream({
        read: (page) =>
          reads.changes(principal.accountId, {
            ...filtersOf(query),
            environment: principal.environment,
            ...page
          }),
        present: presentChange,
        after: Changes.changeTimeOf(options.after),
        every: options.every
      }).pipe(Stream.catchTag("PersistenceError", (error) => Stream.fromEffect(unavailable(error)))),

    list: (principal, query) =>
      listPage(principal.accountId, { ...query, environment: principal.environment }, (task) => task).pipe(
        // each item with where it waits (a read per pending item)
        Effect.flatMap((page) =>
          Effect.map(
            Effect.forEach(page.data, (task) =>
              Effect.map(Effect.zip(positionOf(task), thumbnail(task)), ([position, thumbnailUrl]) => ({
                ...toSummary(task),
                ...(position === undefined ? {} : { queue_position: position }),
                ...(thumbnailUrl === undefined ? {} : { thumbnail_url: thumbnailUrl })
              }))),
            (data) => ({ ...page, data })
          )
        ),
        Effect.provideService(TaskReads, reads),
        Effect.catchTag("PersistenceError", unavailable),
        Tracing.span("TaskService.list")
      ),

    retry: (principal, id, idempotencyKey) =>
      Effect.gen(function*() {
        const original = yield* findTask(principal, id)
        if (!Task.retryableStatuses.includes(original.status)) {
          return yield* new Errors.TaskNotRetryable({
            message: `task ${id} is ${original.status}; only failed or expired tasks can be retried`
          })
        }
        const request: Generation.AnyGenerationRequest = {
          model: original.model,
          input: original.input,
          ...(original.webhookUrl === null ? {} : { webhookUrl: original.webhookUrl }),
          ...(Object.keys(original.metadata).length === 0 ? {} : { metadata: original.metadata })
        }
        const claim = yield* claimOf(principal, idempotencyKey, ["retry", id])
        const task = yield* accept(principal, original.endpoint, request, original.id, claim)
        return toRetryAck(task)
      }).pipe(Effect.catchTag("PersistenceError", unavailable), Tracing.span("TaskService.retry")),

    cancel: (principal, id) =>
      Effect.gen(function*() {
        const result = yield* lifecycle.cancel(principal.accountId, id, principal.environment)
        switch (result._tag) {
          case "NotFound":
            return yield* notFound(id)
          case "NotCancellable":
            return yield* new Errors.TaskNotCancellable({
              message: `task ${id} is ${result.status}; only pending or queued tasks can be cancelled`
            })
          case "Cancelled": {
            EngineMetrics.finished(result.task)
            const jobId = result.task.upstreamJobId
            if (jobId !== null) {
              // best effort, after the commit: the task is cancelled and refunded whatever the upstream says
              yield* FiberSet.run(background, upstream.cancel(result.task, jobId))
            }
            return toTask(result.task)
          }
        }
      }).pipe(Effect.catchTag("PersistenceError", unavailable), Tracing.span("TaskService.cancel")),

    inFlight: (principal) =>
      reads.activeCounts(principal.accountId, principal.keyId).pipe(
        Effect.catchTag("PersistenceError", unavailable),
        Tracing.span("TaskService.inFlight")
      ),

    providerOf: (principal, id) =>
      Effect.map(
        reads.get(principal.accountId, id, principal.environment),
        Option.map((task: TaskRecord) => ({ provider: task.provider, type: task.mediaType }))
      ).pipe(Effect.catchTag("PersistenceError", unavailable))
  }
  return service
})

/**
 * The engine's `TaskService`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<
  Services.TaskService,
  never,
  TaskLifecycle | TaskReads | Planner | Upstream | ResultLinks
> = Layer.scoped(
  Services.TaskService,
  make
)
