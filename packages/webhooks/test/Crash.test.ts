/**
 * A delivery process killed with SIGKILL in the middle of an attempt: after a restart the event is delivered
 * (at least once), with the same event id.
 */
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import { describe, expect, it } from "@effect/vitest"
import { Services } from "@mediagate/contract"
import * as Billing from "@mediagate/engine/Billing"
import * as SqlTaskStorage from "@mediagate/engine/SqlTaskStorage"
import { TaskStorage } from "@mediagate/engine/TaskStorage"
import { bundled } from "@mediagate/testing/bundle"
import * as Fixtures from "@mediagate/testing/fixtures"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync } from "node:fs"
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import * as Outbound from "../src/Outbound.js"
import * as SqlWebhookStore from "../src/SqlWebhookStore.js"
import * as WebhookService from "../src/WebhookService.js"
import { principal } from "./support.js"

const script = fileURLToPath(new URL("./fixtures/dispatcher-process.ts", import.meta.url))

const startDispatcher = (file: string, owner: string) =>
  Effect.acquireRelease(
    Effect.map(Effect.promise(() => bundled(script)), (bundle) =>
      spawn(process.execPath, [bundle], {
        env: { ...process.env, DATABASE_FILE: file, OWNER: owner },
        stdio: ["ignore", "ignore", "inherit"]
      })),
    (child: ChildProcess) => Effect.sync(() => child.exitCode === null && child.kill("SIGKILL"))
  )

describe("webhook delivery across a crash", () => {
  it.live(
    "a dispatcher killed mid-attempt: the event is delivered after restart, same event id",
    () =>
      Effect.gen(function*() {
        // the receiver hangs on its first request (the attempt in flight when the process dies), then answers 200
        const seen: Array<{ id: string | undefined; signature: string | undefined }> = []
        let answered = 0
        const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
          req.resume()
          seen.push({
            id: req.headers["x-webhook-id"] as string | undefined,
            signature: req.headers["x-webhook-signature"] as string | undefined
          })
          if (seen.length === 1) return // hang
          answered++
          res.writeHead(200).end("ok")
        })
        yield* Effect.acquireRelease(
          Effect.promise(() => new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))),
          () =>
            Effect.sync(() => void server.closeAllConnections()).pipe(
              Effect.zipRight(Effect.promise(() => new Promise((r) => server.close(r))))
            )
        )
        const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`
        const file = join(mkdtempSync(join(tmpdir(), "mg-crash-")), "mediagate.db")

        // register a webhook and finish a task, so the outbox holds one task.completed event
        const Setup = WebhookService.layer({ allowPrivate: true }).pipe(
          Layer.provide(Outbound.layerSender({ allowPrivate: true })),
          Layer.provideMerge(SqlWebhookStore.layer()),
          Layer.provideMerge(SqlTaskStorage.layer()),
          Layer.provide(Billing.layerUnmetered),
          Layer.provide(SqliteClient.layer({ filename: file }))
        )
        const eventId = yield* Effect.gen(function*() {
          const webhooks = yield* Services.WebhookService
          yield* webhooks.create(principal("acct_a"), { url, events: ["task.completed"] }, undefined)
          const storage = yield* TaskStorage
          const now = Date.now()
          yield* storage.accept({
            task: Fixtures.newTask({
              input: { prompt: "p" },
              estimatedSeconds: 1,
              deadlineAt: now + 60_000,
              createdAt: now
            }),
            charge: undefined,
            idempotency: undefined
          })
          const [claimed] = yield* storage.claim("w", 1, 60_000)
          yield* storage.finish(claimed!.id, claimed!.fence, { _tag: "Succeeded", result: [] })
          const { entries } = yield* storage.readOutbox(undefined, 10)
          return entries[0]!.eventId
        }).pipe(Effect.provide(Setup), Effect.scoped)

        const first = yield* startDispatcher(file, "doomed")
        while (seen.length === 0) yield* Effect.sleep(50)
        first.kill("SIGKILL")
        yield* startDispatcher(file, "survivor")
        const deadline = Date.now() + 30_000
        while (answered === 0 && Date.now() < deadline) yield* Effect.sleep(50)
        expect(answered).toBeGreaterThanOrEqual(1)
        expect(seen.length).toBeGreaterThanOrEqual(2)
        expect(new Set(seen.map((s) => s.id))).toEqual(new Set([eventId]))
        expect(seen.every((s) => s.signature?.startsWith("sha256="))).toBe(true)
      }).pipe(Effect.scoped),
    { timeout: 60_000 }
  )
})
