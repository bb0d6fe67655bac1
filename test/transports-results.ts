/**
 * The HTTP transports of channels end to end (docs/channels.md), part three: the results the gateway copies (internal
 * addresses refused, a large result, a slow one), through the built server's HTTP API, registered for one database
 * by `transports-results-sqlite.test.ts` and `transports-results-postgres.test.ts` (files that run side by side: the
 * slow result waits out the gateway's task deadline); the setup is that of `transports.test.ts` (see its comment),
 * shared through `transports-gateway.ts` and `transports-upstreams.ts`.
 *
 * 6. **Result URLs to internal addresses refused** (fal): outputs at `http://127.0.0.2:<port>/secret` (a server
 *    counting its requests), `http://169.254.169.254/latest/meta-data`, and a redirect from the trusted host
 *    (127.0.0.1) to the 127.0.0.2 server: each task `failed` `PROVIDER_ERROR`, refunded, and the 127.0.0.2 server got
 *    no request; on a channel with `result_hosts: ["127.0.0.2"]` the same URL is copied.
 * 7. **400 MB result without `Content-Length`** (chunked, from a server of ours): copied and served with
 *    `size_bytes` = 400 MiB, the bytes served back whole; the gateway's RSS (`VmRSS`, sampled every 50 ms) never
 *    more than 64 MB above where it was before the task until the task succeeded, and never more than 128 MB above
 *    it while the file is then served (a stream too: the garbage of its reads, never the file).
 * 8. **A 1 byte/s result holds no worker**: with 2 workers and 4 such downloads in flight, tasks on the other
 *    transports still finish within a few seconds; the slow tasks end by their deadline (`failed` or `expired`,
 *    refunded) and the gateway closes the slow downloads then.
 *
 * A test that fails keeps the gateway's log in a temporary directory (its path is printed).
 *
 * @since 0.1.0
 */
import { expect, it } from "@effect/vitest"
import { mp4Bytes, pngBytes } from "@mediagate/testing/fakes/common"
import { randomBytes } from "node:crypto"
import { makeAccount, readTasks, sleep, terminal, unsucceeded, waitFor } from "./harness.js"
import {
  createTask,
  credit,
  type Database,
  deadlineMs,
  describeTransports,
  ended,
  expectBilled,
  expectCopied,
  expectProviderError,
  rssHeadroom
} from "./transports-gateway.js"
import { bigBytes, rssOf } from "./transports-upstreams.js"

/** Registers the result scenarios for the gateway on one database. */
export const resultScenarios = (only: Database["name"]) =>
  describeTransports((database, step) => {
    it(
      "result URLs to internal addresses are refused; a result host of the channel is copied",
      step("ssrf", async (gw, up) => {
        const keys = await makeAccount(gw.base, "ssrf", credit)
        const secret = `/secret-${database.name}-${randomBytes(4).toString("hex")}`
        const outputs = [
          { url: `${up.internal.url}${secret}`, refused: /127\.0\.0\.2/ },
          { url: "http://169.254.169.254/latest/meta-data", refused: /169\.254\.169\.254/ },
          { url: `${up.redirector.url}/to${secret}`, refused: /127\.0\.0\.2/ }
        ]
        const ids = await Promise.all(
          outputs.map(({ url }) => createTask(gw.base, keys, "guarded", `[fake:output=${url}] ssrf`))
        )
        const tasks = await ended(gw.base, ids, 60_000)
        for (const [i, task] of tasks.entries()) {
          expectProviderError(task, /copying the upstream's result failed: .*not a public/)
          expect(task.error?.message, `${task.id}: the address refused`).toMatch(outputs[i]!.refused)
        }
        expect(up.redirector.hits(`/to${secret}`), "requests to the trusted redirector").toBe(1)
        expect(up.internal.hits(secret), "requests that reached 127.0.0.2").toBe(0)
        await expectBilled(gw.base, keys, tasks, true)

        // the operator's result host: the same URL is copied
        const other = await makeAccount(gw.base, "result hosts", credit)
        const id = await createTask(gw.base, other, "resultHosts", `[fake:output=${outputs[0]!.url}] allowed`)
        const [task] = await ended(gw.base, [id], 60_000)
        await expectCopied(gw.base, task!, pngBytes, "image/png")
        expect(up.internal.hits(secret), "requests that reached 127.0.0.2").toBe(1)
      }),
      180_000
    )

    it(
      "a 400 MiB result without Content-Length is copied and served; the gateway's RSS rises 64 MB at most copying it",
      step("large result", async (gw, up) => {
        const keys = await makeAccount(gw.base, "large", credit)
        const pid = gw.server.child.pid!
        const before: Array<number> = []
        for (let i = 0; i < 10; i++) {
          before.push(rssOf(pid))
          await sleep(50)
        }
        const baseline = Math.max(...before)
        const samples: Array<number> = []
        const sampler = setInterval(() => samples.push(rssOf(pid)), 50)
        const path = `/big-${database.name}.mp4`
        let served = 0
        let copied = 0
        const head: Array<Buffer> = []
        try {
          const id = await createTask(gw.base, keys, "guarded", `[fake:video][fake:output=${up.big.url}${path}] large`)
          const [task] = await ended(gw.base, [id], 150_000)
          copied = samples.length
          expect(task!.status, JSON.stringify(task!.error ?? null)).toBe("succeeded")
          const item = task!.result![0]!
          expect(item.size_bytes, "size_bytes").toBe(bigBytes)
          expect(item.format).toBe("mp4")
          expect(item.url.startsWith(`${gw.base}/files/`), item.url).toBe(true)
          const response = await fetch(item.url, { signal: AbortSignal.timeout(60_000) })
          expect(response.status).toBe(200)
          expect(response.headers.get("content-type")).toBe("video/mp4")
          const reader = response.body!.getReader()
          for (let read = await reader.read(); !read.done; read = await reader.read()) {
            if (served < 128) head.push(Buffer.from(read.value.subarray(0, 128)))
            served += read.value.length
          }
        } finally {
          clearInterval(sampler)
        }
        const mb = (bytes: number) => `${Math.round(bytes / 1024 / 1024)} MB`
        const copying = Math.max(...samples.slice(0, copied))
        const serving = Math.max(...samples.slice(copied))
        console.info(
          `large result (${database.name}): RSS ${mb(baseline)} before the task, at most ${mb(copying)} until it ` +
            `succeeded, ${mb(serving)} while serving the file (${samples.length} samples)`
        )
        expect(up.big.hits(path), "downloads of the large file").toBe(1)
        expect(served, "bytes served").toBe(bigBytes)
        expect(Buffer.concat(head).subarray(0, mp4Bytes.length).equals(Buffer.from(mp4Bytes)), "the first bytes")
          .toBe(true)
        expect(copied, "RSS samples while copying").toBeGreaterThan(10)
        expect(copying - baseline, `RSS rise while copying: ${mb(copying - baseline)}`).toBeLessThanOrEqual(rssHeadroom)
        // serving streams the file too: garbage of its 64 KiB reads, never the file (400 MiB)
        expect(serving - baseline, `RSS rise while serving: ${mb(serving - baseline)}`)
          .toBeLessThanOrEqual(2 * rssHeadroom)
      }),
      240_000
    )

    it(
      "1 byte/s results hold no worker: other tasks finish; the slow ones end by their deadline",
      step("slow result", async (gw, up) => {
        const keys = await makeAccount(gw.base, "slow", credit)
        const path = `/slow-${database.name}.mp4`
        const createdAt = Date.now()
        const slowIds = await Promise.all(
          [0, 1, 2, 3].map((i) =>
            createTask(gw.base, keys, "guarded", `[fake:video][fake:output=${up.slow.url}${path}] slow ${i}`)
          )
        )
        await waitFor("4 slow downloads", 30_000, async () => (up.slow.opened(path) >= 4 ? true : undefined), 100)
        expect(up.slow.opened(path), "slow downloads").toBe(4)
        expect(up.slow.closed(path), "slow downloads closed").toBe(0)

        // the 2 workers are free: tasks on every transport finish at once
        const names = ["fal", "replicate", "comfyui", "openaiImage", "falPolling", "replicatePolling"] as const
        const began = Date.now()
        const others = await Promise.all(names.map((name) => createTask(gw.base, keys, name, `meanwhile on ${name}`)))
        const done = await ended(gw.base, others, 60_000)
        console.info(`slow result (${database.name}): ${names.length} other tasks ended in ${Date.now() - began} ms`)
        expect(unsucceeded(done), "other tasks that did not succeed").toEqual([])
        const slow = await readTasks(gw.base, slowIds)
        expect(slow.filter((task) => terminal.has(task.status)).map((task) => task.id), "slow tasks ended").toEqual([])
        expect(up.slow.closed(path), "slow downloads closed").toBe(0)

        // the deadline ends them: failed (the copy given up) or expired, refunded, their downloads closed
        const finished = await ended(gw.base, slowIds, createdAt + deadlineMs + 15_000 - Date.now())
        console.info(
          `slow result (${database.name}): the slow tasks ended ${Date.now() - createdAt} ms after creation: ` +
            finished.map((task) => `${task.status} ${task.error?.code ?? ""}`).join(", ")
        )
        for (const task of finished) {
          expect(["failed", "expired"], `${task.id}: ${JSON.stringify(task.error ?? null)}`).toContain(task.status)
          expect(task.refunded, `${task.id}: refunded`).toBeCloseTo(task.charged, 6)
        }
        await waitFor("the slow downloads to be closed", 5000, async () => {
          return up.slow.closed(path) >= 4 ? true : undefined
        })
        expect(up.slow.opened(path), "slow downloads, in all").toBe(4)
      }),
      300_000
    )
  }, only)
