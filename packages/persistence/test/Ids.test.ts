/** ULID ids: prefixed, carrying their time, time-sortable, monotonic within a process. */
import { describe, expect, it } from "@effect/vitest"
import { decodeTime } from "ulid"
import * as Ids from "../src/Ids.js"

describe("Ids", () => {
  it("are a prefix and a ULID carrying the given time", () => {
    const at = Date.UTC(2040, 0, 1)
    const task = Ids.taskId(at)
    expect(task).toMatch(/^task_[0-9A-HJKMNP-TV-Z]{26}$/)
    expect(decodeTime(task.slice("task_".length))).toBe(at)
    expect(Ids.eventId(at + 1)).toMatch(/^evt_[0-9A-HJKMNP-TV-Z]{26}$/)
  })

  it("sort by time, and stay increasing within one millisecond (and never go back)", () => {
    const at = Date.UTC(2041, 0, 1)
    const first = Ids.ulid(at)
    const later = Ids.ulid(at + 1)
    const same = Array.from({ length: 50 }, () => Ids.ulid(at + 2))
    expect(first < later).toBe(true)
    expect(later < same[0]!).toBe(true)
    expect([...same].sort()).toEqual(same)
    expect(new Set(same).size).toBe(50)
    // an earlier time still gives a larger id: monotonic within the process
    expect(Ids.ulid(at) > same[49]!).toBe(true)
  })
})
