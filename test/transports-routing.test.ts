/**
 * The HTTP transports of channels end to end (docs/channels.md), part two: callbacks and polling, and failover across
 * transports, through the built server's HTTP API on SQLite and on PostgreSQL; the setup is that of
 * `transports.test.ts` (see its comment), shared through `transports-gateway.ts` and `transports-upstreams.ts`.
 *
 * 4. **Callbacks and polling** (fal, replicate): on a channel polling every 10 minutes only the upstream's callback
 *    can finish a task soon: it does, within a few seconds, and the fake sent it; on a channel with callbacks off
 *    polling every 300 ms the task finishes, no callback asked. A callback whose URL signature is wrong (fal), or
 *    whose Standard Webhooks signature is (replicate), answers 401; one for an unknown channel 404.
 * 5. **Failover across transports**: fal (priority 10, its fake down) and replicate (priority 0) serve one model:
 *    every task succeeds on replicate, charged once, never refunded.
 *
 * A test that fails keeps the gateway's log in a temporary directory (its path is printed).
 *
 * @since 0.1.0
 */
import { expect, it } from "@effect/vitest"
import { mp4Bytes } from "@mediagate/testing/fakes/common"
import { randomBytes } from "node:crypto"
import { type Envelope, http, makeAccount, readTask, unsucceeded, waitFor } from "./harness.js"
import { createTask, credit, describeTransports, ended, expectBilled, expectCopied } from "./transports-gateway.js"

describeTransports((database, step) => {
  it(
    "callbacks finish tasks (fal, replicate), polling does without; wrong signatures 401, unknown channel 404, a large body 413",
    step("callbacks", async (gw, up) => {
      const keys = await makeAccount(gw.base, "callbacks", credit)
      const falHooks = up.fal.counts().webhooks
      const began = Date.now()
      const names = ["falCallback", "replicateCallback", "falPolling", "replicatePolling"] as const
      const ids = await Promise.all(
        names.map((name) => createTask(gw.base, keys, name, `[fake:video][fake:delay=1500] ${name}`))
      )
      // the callback channels poll every 10 minutes: only the callbacks can end their tasks this soon
      const tasks = await ended(gw.base, ids, 60_000)
      console.info(`callbacks (${database.name}): 4 jobs of 1.5 s ended in ${Date.now() - began} ms`)
      for (const task of tasks) await expectCopied(gw.base, task, mp4Bytes, "video/mp4")
      const [falTask, replicateTask, falPolled, replicatePolled] = tasks
      expect(falTask!.polls, "polls of the fal callback task").toBeLessThanOrEqual(3)

      // the callbacks were asked for, sent and accepted
      const falJob = up.fal.jobs.get(falTask!.upstream_job_id!.split("|")[1]!)!
      const falUrl = falJob.webhook ?? ""
      expect(falUrl.startsWith(`${gw.base}/callbacks/v1/${gw.channels.falCallback.id}/${falTask!.id}?`), falUrl)
        .toBe(true)
      expect(up.fal.counts().webhooks - falHooks, "webhooks fal sent").toBeGreaterThanOrEqual(1)
      const prediction = up.replicate.predictions.get(replicateTask!.upstream_job_id!)!
      const replicateUrl = prediction.webhook ?? ""
      expect(replicateUrl.startsWith(`${gw.base}/callbacks/v1/${gw.channels.replicateCallback.id}/`), replicateUrl)
        .toBe(true)
      await waitFor("replicate's webhook answered 200", 5000, async () => {
        const hooks = up.replicate.webhooks.filter((hook) => hook.predictionId === prediction.id)
        return hooks.some((hook) => hook.status === 200) ? true : undefined
      })
      // the polling channels asked for none
      expect(up.fal.jobs.get(falPolled!.upstream_job_id!.split("|")[1]!)?.webhook).toBeUndefined()
      expect(up.replicate.predictions.get(replicatePolled!.upstream_job_id!)?.webhook).toBeUndefined()

      // a callback URL with a wrong signature, or none
      const body = { request_id: falJob.id, gateway_request_id: falJob.id, status: "OK", payload: {} }
      const forged = falUrl.replace(/signature=[^&]+/, `signature=${randomBytes(32).toString("base64url")}`)
      const wrong = await http<Envelope<unknown>>(forged, "", { json: body })
      expect(wrong.status, wrong.text).toBe(401)
      expect(wrong.body.error?.code).toBe("AUTH_INVALID_TOKEN")
      const unsigned = await http<Envelope<unknown>>(falUrl.slice(0, falUrl.indexOf("?")), "", { json: body })
      expect(unsigned.status, unsigned.text).toBe(401)
      // Replicate's own signature (Standard Webhooks) wrong, on a well-signed URL
      const replicateForged = await http<Envelope<unknown>>(replicateUrl, "", {
        json: up.replicate.view(prediction.id),
        headers: {
          "webhook-id": "msg_forged",
          "webhook-timestamp": String(Math.floor(Date.now() / 1000)),
          "webhook-signature": `v1,${randomBytes(32).toString("base64")}`
        }
      })
      expect(replicateForged.status, replicateForged.text).toBe(401)
      expect(replicateForged.body.error?.code).toBe("AUTH_INVALID_TOKEN")
      // an unknown channel
      const query = new URL(falUrl).search
      const unknown = await http<Envelope<unknown>>(gw.base, `/callbacks/v1/ch_unknown/${falTask!.id}${query}`, {
        json: body
      })
      expect(unknown.status, unknown.text).toBe(404)
      expect(unknown.body.error?.code).toBe("CHANNEL_NOT_FOUND")
      // a body over 1 MiB, on a well-signed URL
      const large = await http<Envelope<unknown>>(falUrl, "", { json: { ...body, logs: "x".repeat(1024 * 1024) } })
      expect(large.status, large.text).toBe(413)
      expect(large.body.error?.code).toBe("PAYLOAD_TOO_LARGE")
      expect((await readTask(gw.base, falTask!.id)).status, "the task after the forged callbacks").toBe("succeeded")
    }),
    180_000
  )

  it(
    "failover from a fal channel that is down to a replicate channel: succeeded, charged once",
    step("failover", async (gw, up) => {
      const keys = await makeAccount(gw.base, "failover", credit)
      const refusedBefore = up.falDown.requests.length
      const ids = await Promise.all([0, 1, 2, 3].map((i) => createTask(gw.base, keys, "failover", `failover ${i}`)))
      const tasks = await ended(gw.base, ids, 60_000)
      expect(unsucceeded(tasks), "tasks that did not succeed").toEqual([])
      for (const task of tasks) {
        expect(task.channel_id, task.id).toBe(gw.channels.failoverReplicate.id)
        expect(up.replicate.predictions.has(task.upstream_job_id ?? ""), `${task.id}: its prediction`).toBe(true)
      }
      expect(up.falDown.requests.length - refusedBefore, "submits the fal channel refused").toBeGreaterThan(0)
      expect(up.falDown.jobs.size, "jobs on the fal fake that is down").toBe(0)
      await expectBilled(gw.base, keys, tasks, false)
    }),
    180_000
  )
})
