/**
 * Reading server-sent event streams in the tests of `GET /api/v1/tasks/{id}/events` and `GET /api/v1/tasks/events`:
 * a stream opened with fetch and parsed as it arrives, and the accounts and tasks the tests use.
 */
import { expect } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { call } from "./served.js"

/** An event of the stream: its fields as sent (`id`, `event`, `data`), or a comment line's text. */
export interface Event {
  readonly id?: string
  readonly event?: string
  readonly data?: string
  readonly comment?: string
}

/** An open stream: its answer, the events read so far, and reading on until a condition holds. */
export interface Opened {
  readonly status: number
  readonly headers: Headers
  /** The body of an answer other than 200 (an error envelope), else undefined. */
  readonly body: any
  readonly events: Array<Event>
  /** Reads until `done(events)` holds or the stream ends (true) or `deadlineMs` passes (false). */
  readonly readUntil: (done: (events: ReadonlyArray<Event>) => boolean, deadlineMs: number) => Promise<boolean>
  readonly ended: () => boolean
  readonly close: () => void
}

/** Opens the stream at `url` with `key` (and `Last-Event-ID` when given). */
export const openStream = (url: string, key: string | undefined, lastEventId?: string): Promise<Opened> =>
  (async () => {
    const controller = new AbortController()
    const response = await fetch(url, {
      headers: {
        ...(key === undefined ? {} : { authorization: `Bearer ${key}` }),
        ...(lastEventId === undefined ? {} : { "last-event-id": lastEventId })
      },
      signal: controller.signal
    })
    const body = response.status === 200
      ? undefined
      : await response.text().then((text) => text === "" ? null : JSON.parse(text))
    const events: Array<Event> = []
    let ended = false
    let buffer = ""
    const reader = response.status === 200 ? response.body?.getReader() : undefined
    const decoder = new TextDecoder()
    const parse = () => {
      let end = buffer.indexOf("\n\n")
      while (end !== -1) {
        const block = buffer.slice(0, end)
        buffer = buffer.slice(end + 2)
        const fields: Record<string, string> = {}
        for (const line of block.split("\n")) {
          if (line.startsWith(":")) fields["comment"] = line.slice(1).trim()
          else {
            const colon = line.indexOf(":")
            fields[line.slice(0, colon)] = line.slice(colon + 1).trimStart()
          }
        }
        events.push(fields)
        end = buffer.indexOf("\n\n")
      }
    }
    const readUntil = async (done: (events: ReadonlyArray<Event>) => boolean, deadlineMs: number) => {
      const deadline = Date.now() + deadlineMs
      while (!done(events)) {
        if (ended || reader === undefined) return true
        const left = deadline - Date.now()
        if (left <= 0) return false
        let timer: NodeJS.Timeout | undefined
        const next = await Promise.race([
          reader.read(),
          new Promise<"late">((resolve) => (timer = setTimeout(() => resolve("late"), left)))
        ])
        clearTimeout(timer)
        if (next === "late") return false
        if (next.done) ended = true
        else {
          buffer += decoder.decode(next.value, { stream: true })
          parse()
        }
      }
      return true
    }
    return {
      status: response.status,
      headers: response.headers,
      body,
      events,
      readUntil,
      ended: () => ended,
      close: () => controller.abort()
    }
  })()

export const tasksOf = (events: ReadonlyArray<Event>) =>
  events.filter((event) => event.event === "task").map((event) => ({
    id: event.id!,
    task: JSON.parse(event.data!) as {
      id: string
      status: string
      progress: number
      logs?: Array<string>
      queue_position?: { account: number | null; upstream: number | null }
    }
  }))

/** An account with a key of each environment (all permissions) and a test key without `tasks:read`. */
export const accountOn = (base: string, adminToken: string) =>
  Effect.gen(function*() {
    const admin = (method: string, path: string, body?: unknown) => call(base, method, path, adminToken, body)
    const account = (yield* admin("POST", "/admin/v1/accounts", { name: "events", balance: 100 })).body.data.id
    const keyOf = (body: Record<string, unknown>) =>
      Effect.map(
        admin("POST", `/admin/v1/accounts/${account}/api-keys`, body),
        (answer) => answer.body.data.key as string
      )
    return {
      test: yield* keyOf({ name: "test", environment: "test" }),
      live: yield* keyOf({ name: "live", environment: "live" }),
      noRead: yield* keyOf({
        name: "no-read",
        environment: "test",
        permissions: { "video:create": true, "image:create": true, "tasks:read": false }
      })
    }
  })

/** Creates a video task with `key`: its id. */
export const createTask = (base: string, key: string, prompt: string) =>
  Effect.map(
    call(base, "POST", "/api/v1/vendor3/text-to-video", key, { model: "vendor3-3", input: { prompt } }),
    (answer) => {
      expect(answer.status).toBe(201)
      return answer.body.data.id as string
    }
  )
