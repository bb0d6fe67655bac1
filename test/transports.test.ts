/**
 * The HTTP transports of channels end to end (docs/channels.md): `fal`, `replicate`, `comfyui` and `openai`, each
 * against its protocol fake (`@mediagate/testing/fakes/*`, started once for the file), through the built server's
 * HTTP API (`examples/server/dist`), with the gateway on SQLite and on PostgreSQL (a fresh database each; skipped
 * with a warning when no PostgreSQL answers at 127.0.0.1:5432, failing under `CI=true`).
 *
 * One gateway per database serves every scenario of a file: its public base URL is its own address (the fakes call
 * it back), the SSRF guard is on (no `MEDIAGATE_WEBHOOK_ALLOW_PRIVATE`: only each channel's `base_url` host,
 * 127.0.0.1, and its `result_hosts` are trusted), 2 workers, a task deadline of 30 s. Its channels each serve one
 * model, so that routing is unambiguous: fal, replicate (upstream callbacks on), comfyui (a stored workflow) and
 * openai (an image model and a video model), and the channels of the scenarios below. Each scenario uses an account
 * of its own.
 *
 * This file: the lifecycle of a task on every transport. `transports-routing.test.ts` has the callbacks and the
 * failover, `transports-results.ts` the results the gateway copies; `transports-gateway.ts` and
 * `transports-upstreams.ts` hold the setup they share.
 *
 * 1. **Success**, every transport (openai: image and video): the task succeeds; its result is our signed `/files/`
 *    URL on the gateway, which answers the fake's bytes (PNG, or MP4) with their content type.
 * 2. **Upstream failure** (`[fake:fail=boom]`; openai on its video endpoint, where a job fails): `failed`,
 *    `PROVIDER_ERROR`, a message with `boom`; the account's ledger holds one charge and one refund per task and the
 *    balance is back where it was.
 * 3. **Cancel** of a `[fake:delay=20000]` task once the upstream has its job reaches the upstream: fal's job
 *    cancelled, Replicate's prediction canceled, ComfyUI's prompt deleted from its queue (or interrupted), the
 *    OpenAI video deleted; the task is `cancelled` and refunded.
 *
 * A test that fails keeps the gateway's log in a temporary directory (its path is printed).
 *
 * @since 0.1.0
 */
import { expect, it } from "@effect/vitest"
import { mp4Bytes, pngBytes } from "@mediagate/testing/fakes/common"
import { type Envelope, http, makeAccount, ok, readTask, readTasks, waitFor } from "./harness.js"
import {
  createTask,
  credit,
  describeTransports,
  ended,
  expectBilled,
  expectCopied,
  expectProviderError,
  submitted
} from "./transports-gateway.js"

describeTransports((_database, step) => {
  it(
    "success: every transport's result is copied and served under our signed URL",
    step("success", async (gw, up) => {
      const keys = await makeAccount(gw.base, "success", credit)
      const cases = [
        { name: "fal", channel: "fal", bytes: pngBytes, type: "image/png" },
        { name: "replicate", channel: "replicate", bytes: pngBytes, type: "image/png" },
        { name: "comfyui", channel: "comfyui", bytes: pngBytes, type: "image/png" },
        { name: "openaiImage", channel: "openai", bytes: pngBytes, type: "image/png" },
        { name: "openaiVideo", channel: "openai", bytes: mp4Bytes, type: "video/mp4" }
      ] as const
      const ids = await Promise.all(cases.map((c) => createTask(gw.base, keys, c.name, `success on ${c.name}`)))
      const tasks = await ended(gw.base, ids, 60_000)
      for (const [i, c] of cases.entries()) {
        expect(tasks[i]!.channel_id, c.name).toBe(gw.channels[c.channel].id)
        await expectCopied(gw.base, tasks[i]!, c.bytes, c.type)
      }
      await expectBilled(gw.base, keys, tasks, false)
      // what the upstreams were sent: the mapped targets, our prompt
      const [fal, replicate, comfy, , video] = tasks.map((task) => task.upstream_job_id ?? "")
      const falJob = up.fal.jobs.get(fal!.split("|")[1]!)
      expect(falJob?.model).toBe("fal-ai/flux/dev")
      expect(falJob?.input["prompt"]).toBe("success on fal")
      expect(up.replicate.predictions.get(replicate!)?.model).toBe("black-forest-labs/flux-dev")
      expect(JSON.stringify(up.comfy.jobs.get(comfy!)?.graph["6"])).toContain("success on comfyui")
      expect(up.openai.images.at(-1)?.input["model"]).toBe("gpt-image-1")
      expect(up.openai.videos.get(video!)?.model).toBe("sora-2")
    }),
    180_000
  )

  it(
    "upstream failure: failed PROVIDER_ERROR with the upstream's message, charged and refunded once",
    step("failure", async (gw) => {
      const keys = await makeAccount(gw.base, "failure", credit)
      const names = ["fal", "replicate", "comfyui", "openaiVideo"] as const
      const ids = await Promise.all(names.map((name) => createTask(gw.base, keys, name, `[fake:fail=boom] ${name}`)))
      const tasks = await ended(gw.base, ids, 60_000)
      for (const task of tasks) expectProviderError(task, /boom/)
      await expectBilled(gw.base, keys, tasks, true)
    }),
    180_000
  )

  it(
    "cancel reaches the upstream: fal, replicate, comfyui, openai",
    step("cancel", async (gw, up) => {
      const keys = await makeAccount(gw.base, "cancel", credit)
      // ComfyUI runs one prompt at a time: a first one (of another account) keeps the cancelled one in its queue
      const other = await makeAccount(gw.base, "blocker", credit)
      const blocker = await createTask(gw.base, other, "comfyui", "[fake:delay=6000] blocker")
      await waitFor("the blocker to run on ComfyUI", 15_000, async () => {
        const job = up.comfy.jobs.get((await readTask(gw.base, blocker)).upstream_job_id ?? "")
        return job?.state === "running" ? true : undefined
      }, 100)
      const names = ["fal", "replicate", "comfyui", "openaiVideo"] as const
      const ids = await Promise.all(
        names.map((name) => createTask(gw.base, keys, name, `[fake:delay=20000] cancel ${name}`))
      )
      const jobs = await Promise.all(ids.map(async (id) => (await submitted(gw.base, id)).upstream_job_id))
      for (const [i, id] of ids.entries()) {
        expect(jobs[i], `${names[i]}: the upstream's job`).not.toBeNull()
        const reply = await http<Envelope<{ readonly status: string }>>(gw.base, `/api/v1/tasks/${id}/cancel`, {
          method: "POST",
          token: keys.live
        })
        expect(ok(reply, `cancel ${names[i]}`).status).toBe("cancelled")
      }
      const [fal, replicate, comfy, video] = jobs.map((job) => job ?? "")
      await waitFor("the upstreams to record the cancels", 10_000, async () => {
        const done = [
          up.fal.jobs.get(fal!.split("|")[1]!)?.cancelled === true,
          up.replicate.predictions.get(replicate!)?.canceledAt !== undefined,
          ["deleted", "interrupted"].includes(up.comfy.jobs.get(comfy!)?.state ?? ""),
          up.openai.videos.get(video!)?.deleted === true
        ]
        return done.every(Boolean) ? true : undefined
      }, 100)
      const tasks = await readTasks(gw.base, ids)
      expect(tasks.map((task) => task.status)).toEqual(names.map(() => "cancelled"))
      await expectBilled(gw.base, keys, tasks, true)
      const [first] = await ended(gw.base, [blocker], 60_000)
      expect(first!.status, "the blocker").toBe("succeeded")
    }),
    180_000
  )
})
