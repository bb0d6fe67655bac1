/**
 * The task storage's ports: each implementation's layer provides every port (`TaskLifecycle`, `TaskReads`,
 * `TaskOutbox`, `NodeRegistry`, `ChannelSlots`, `TaskRetention`, `StorageClock`), and they are views of one storage:
 * what one port writes, the others read.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as TestClock from "effect/TestClock"
import { layerUnmetered } from "../src/Billing.js"
import { ChannelSlots } from "../src/ChannelSlots.js"
import { NodeRegistry } from "../src/NodeRegistry.js"
import * as SqlTaskStorage from "../src/SqlTaskStorage.js"
import { StorageClock } from "../src/StorageClock.js"
import { TaskLifecycle } from "../src/TaskLifecycle.js"
import { TaskOutbox } from "../src/TaskOutbox.js"
import { TaskReads } from "../src/TaskReads.js"
import { TaskRetention } from "../src/TaskRetention.js"
import * as TaskStorage from "../src/TaskStorage.js"
import { sqlite } from "./databases.js"
import { newTask, start } from "./support.js"

const backends = [
  ["memory", () => TaskStorage.layerMemory().pipe(Layer.provide(layerUnmetered))],
  ["sqlite", () => SqlTaskStorage.layer({ time: "clock" }).pipe(Layer.provide(Layer.merge(sqlite(), layerUnmetered)))]
] as const

describe.each(backends)("the task storage's ports (%s)", (_, backend) => {
  it.scoped("are provided by the layer, and each reads what the others wrote", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(start)
      const lifecycle = yield* TaskLifecycle
      const reads = yield* TaskReads
      const outbox = yield* TaskOutbox
      const registry = yield* NodeRegistry
      const slots = yield* ChannelSlots
      const retention = yield* TaskRetention
      const clock = yield* StorageClock
      expect(yield* clock.now).toBe(start)

      const task = newTask({ createdAt: start, accountId: "acct_ports" })
      const accepted = yield* lifecycle.accept({ task, charge: undefined, idempotency: undefined })
      expect(accepted._tag).toBe("Created")
      expect(Option.map(yield* reads.getById(task.id), (found) => found.status)).toStrictEqual(Option.some("pending"))

      const [claimed] = yield* lifecycle.claim("worker-a", 1, 30_000)
      expect(claimed?.id).toBe(task.id)
      expect(yield* registry.heartbeat("worker-a", 30_000)).toBe(1)
      expect(yield* slots.reserveChannel(task.id, claimed!.fence, "chn_ports", 0)).toBe(true)
      expect((yield* slots.channelLoad).get("chn_ports")).toBe(1)

      const ended = yield* lifecycle.finish(task.id, claimed!.fence, { _tag: "Succeeded", result: [] })
      expect(Option.map(ended, (done) => done.status)).toStrictEqual(Option.some("succeeded"))
      const page = yield* outbox.readOutbox(undefined, 10)
      expect(page.entries.map((entry) => [entry.taskId, entry.eventType])).toStrictEqual([[task.id, "task.completed"]])
      const scanned = yield* retention.scanResults("live", undefined, "task_~", 10)
      expect(scanned.map((row) => [row.id, row.status])).toStrictEqual([[task.id, "succeeded"]])

      yield* registry.beatNode({ id: "node-a", host: "h", pid: 1, concurrency: 4, heartbeatMs: 1000, leases: 0 })
      expect((yield* registry.nodes(0)).map((node) => node.id)).toStrictEqual(["node-a"])
    }).pipe(Effect.provide(backend())))
})
