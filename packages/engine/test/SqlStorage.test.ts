/**
 * The SQL task storage (SQLite, and PostgreSQL when it runs): the conformance suite of its ports and the state
 * machine property registered on each, its row encoding (`taskRowOf`) and decoding's fast path, and whether PostgreSQL
 * answers. The SQL-only
 * behaviour is in `SqlStorageBackends`, `SqlStorageMigrations` and `SqlStoragePostgres`.
 */
import { assert, describe, expect, it } from "@effect/vitest"
import * as SqlRows from "@mediagate/persistence/SqlRows"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { taskRowFast } from "../src/internal/sql/rows.js"
import * as SqlTaskStorage from "../src/SqlTaskStorage.js"
import { fromNew, type TaskRecord } from "../src/TaskRecord.js"
import { pgAvailable, pgNotRunning, postgres, runPostgres, sqlite } from "./databases.js"
import { stateMachineProperty } from "./StateMachineProperty.js"
import { newTask } from "./support.js"
import { type Backend, taskStorageSuite } from "./TaskStorageSuite.js"

const notRunning = `${pgNotRunning}: its tests are skipped`
if (!runPostgres) console.warn(notRunning)

// -----------------------------------------------------------------------------------------------------------------
// the conformance suite
// -----------------------------------------------------------------------------------------------------------------

const sqliteBackend: Backend = (billing) =>
  SqlTaskStorage.layer({ time: "clock" }).pipe(Layer.provide(Layer.merge(sqlite(), billing)))
const postgresBackend: Backend = (billing) =>
  SqlTaskStorage.layer({ time: "clock" }).pipe(Layer.provide(Layer.merge(postgres(), billing)))

taskStorageSuite("sqlite", sqliteBackend)
stateMachineProperty("sqlite", sqliteBackend, 100)

if (runPostgres) {
  taskStorageSuite("postgres", postgresBackend)
  stateMachineProperty("postgres", postgresBackend, 25)
}

describe("taskRowOf", () => {
  const base = fromNew(newTask({ createdAt: 1_764_000_000_000, metadata: { order: 7, vip: true, note: null } }))
  const records: ReadonlyArray<TaskRecord> = [
    base,
    {
      ...base,
      status: "succeeded",
      progress: 100,
      result: [
        { url: "https://files.example/a.mp4", duration: 5, format: "mp4", size_bytes: 32_768, kind: "output" },
        { url: "https://files.example/a.png", format: "png", size_bytes: 1_024, width: 1280, height: 720 }
      ],
      upstreamJobId: "job_1",
      channelId: "chan_a",
      traceContext: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
      fence: 3,
      leaseOwner: "node_1",
      leaseExpiresAt: 1_764_000_060_000,
      nextRunAt: null,
      polls: 4,
      startedAt: 1_764_000_001_000,
      completedAt: 1_764_000_030_000,
      refundedMicros: 1_000
    },
    {
      ...base,
      status: "failed",
      error: { code: "UPSTREAM_ERROR", message: "the upstream said no" },
      webhookUrl: "https://hooks.example/x"
    }
  ]

  it("writes what the TaskRow Schema encodes, every column in taskColumns' order", () => {
    const encode = Schema.encodeSync(SqlTaskStorage.TaskRow)
    for (const record of records) {
      const row = Either.getOrThrow(SqlTaskStorage.taskRowOf(record))
      expect(Object.keys(row)).toEqual([...SqlTaskStorage.taskColumns])
      expect(row).toEqual(encode(record))
    }
    // a record read from a row without the later columns: they are written as null, their default
    const { channelId: _channel, traceContext: _trace, ...older } = base
    const encoded = encode(older)
    assert.isFalse("trace_context" in encoded)
    expect(Either.getOrThrow(SqlTaskStorage.taskRowOf(older))).toEqual({
      ...encoded,
      trace_context: null,
      channel_id: null
    })
  })

  it("fails where the Schema fails: a result or error its Schema refuses", () => {
    const badResult = { ...base, result: [{ url: 7 }] } as unknown as TaskRecord
    const badError = { ...base, error: { code: "X" } } as unknown as TaskRecord
    for (const record of [badResult, badError]) {
      assert.isTrue(Either.isLeft(SqlTaskStorage.taskRowOf(record)))
      assert.isTrue(Either.isLeft(Schema.encodeEither(SqlTaskStorage.TaskRow)(record)))
    }
  })
})

describe("taskRowFast", () => {
  const decode = Schema.decodeUnknownEither(SqlTaskStorage.TaskRow)
  const record = fromNew(newTask({ createdAt: 1_764_000_000_000, metadata: { order: 7, vip: true, note: null } }))
  const row = Either.getOrThrow(SqlTaskStorage.taskRowOf(record)) as Record<string, unknown>
  const succeeded = Either.getOrThrow(SqlTaskStorage.taskRowOf({
    ...record,
    status: "succeeded",
    result: [{ url: "https://files.example/a.png", format: "png", size_bytes: 1_024, width: 64, kind: "output" }],
    startedAt: 1_764_000_001_000,
    completedAt: 1_764_000_002_000
  })) as Record<string, unknown>
  const taken: ReadonlyArray<Record<string, unknown>> = [
    row,
    succeeded,
    { ...row, status: "failed", error: JSON.stringify({ code: "UPSTREAM_ERROR", message: "no", extra: 1 }) },
    { ...row, upstream_seconds: 4.5, upstream_cost_micros: null, submit_fence: 2, node_id: "node_1" },
    { ...row, upstream_report: JSON.stringify({ position: 3, logs: ["queued"] }) },
    { ...row, upstream_report: null, trace_context: null, channel_id: "chan_a" },
    { ...succeeded, result: JSON.stringify([{ url: "u", format: "mp4", size_bytes: 1, ignored: true }]) },
    { ...row, input: JSON.stringify({ prompt: "a", nested: { list: [1, 2] } }), metadata: "{}" },
    // numbers as PostgreSQL answers BIGINT columns (text), and as bigints
    { ...row, charged_micros: "500", created_at: "1764000000000", lease_expires_at: "1764000060000", fence: 3n }
  ]

  it("decodes the rows it takes as the TaskRow Schema does", () => {
    for (const candidate of taken) {
      const fast = taskRowFast(candidate)
      assert.isDefined(fast)
      expect(fast).toStrictEqual(Either.getOrThrow(decode(candidate)))
    }
  })

  it("leaves every other row to the Schema: converted, or refused with its message", () => {
    const left: ReadonlyArray<Record<string, unknown>> = [
      { ...row, charged_micros: " " },
      { ...row, fence: "3 apples" },
      { ...row, status: "bogus" },
      { ...row, endpoint: "vendor0/none" },
      { ...row, input: "[1]" },
      { ...row, input: "{not json" },
      { ...row, input: "{\"__proto__\":{\"x\":1}}" },
      { ...row, metadata: JSON.stringify({ nested: { no: 1 } }) },
      { ...row, progress: Number.NaN },
      { ...row, webhook_url: 7 },
      { ...succeeded, result: JSON.stringify([{ url: "u" }]) },
      { ...row, error: JSON.stringify({ code: "X" }) },
      { ...row, upstream_report: JSON.stringify({ position: "first" }) },
      { ...row, submit_fence: undefined }
    ]
    const schemaOnly = SqlRows.decoder("tasks", SqlTaskStorage.TaskRow)
    const withFast = SqlRows.withFastPath(schemaOnly, taskRowFast)
    let converted = 0
    for (const candidate of left) {
      assert.isUndefined(
        taskRowFast(candidate),
        JSON.stringify(candidate, (_, v) => typeof v === "bigint" ? `${v}n` : v)
      )
      // what the storage answers for such a row is the Schema's own answer: the value converted, or its RowError
      const answer = withFast.all([candidate])
      expect(answer).toStrictEqual(schemaOnly.all([candidate]))
      if (Either.isRight(answer)) converted++
    }
    // the input with a `__proto__` key and a submit fence present as undefined are decoded by the Schema; the rest
    // refused
    expect(converted).toBe(2)
    assert.isUndefined(taskRowFast(null))
    assert.isUndefined(taskRowFast("row"))
  })
})

describe("PostgreSQL availability", () => {
  it.skipIf(!runPostgres)("answers at 127.0.0.1:5432", () => {
    assert.isTrue(pgAvailable, `${pgNotRunning} (required when CI=true)`)
  })
})
