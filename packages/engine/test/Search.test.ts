/**
 * What a list's `search` looks for: an id prefix when it could start a task id, else the words of the prompt, through
 * `TaskService.listPage` on the memory storage (the storages' own matching: `TaskReadsSuite.ts`).
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as TestClock from "effect/TestClock"
import { searchWords } from "../src/TaskReads.js"
import { listPage, searchOf } from "../src/TaskService.js"
import * as TaskStorage from "../src/TaskStorage.js"
import { newTask, now, runOn } from "./support.js"

describe("list search", () => {
  it("an id prefix when it could start a task id, else the prompt's words", () => {
    for (const prefix of ["t", "ta", "tas", "task", "task_", "task_01M8", "task_01m8ab"]) {
      expect(searchOf(prefix)).toEqual({ idPrefix: prefix })
    }
    expect(searchOf(undefined)).toEqual({})
    expect(searchOf("")).toEqual({})
    expect(searchOf("Lighthouse")).toEqual({ words: ["lighthouse"] })
    expect(searchOf("tasks")).toEqual({ words: ["tasks"] })
    expect(searchOf("task_01 fog")).toEqual({ words: ["task", "01", "fog"] })
    // nothing to look for: matches nothing, as an id prefix would
    expect(searchOf("!!! ...")).toEqual({ idPrefix: "!!! ..." })
  })

  it("words: runs of letters and digits, lower-cased, each once, at most 8", () => {
    expect(searchWords("A lighthouse, at DUSK (4K) lighthouse")).toEqual(["a", "lighthouse", "at", "dusk", "4k"])
    expect(searchWords("café naïve Ｗｉｄｅ")).toEqual(["café", "naïve", "wide"])
    expect(searchWords("one two three four five six seven eight nine ten")).toHaveLength(8)
    expect(searchWords("\"'*:&|()")).toEqual([])
  })

  it.effect("GET /tasks?search= through the service: by a word of the prompt, or by an id prefix", () =>
    runOn((billing) => TaskStorage.layerMemory().pipe(Layer.provide(billing)))(() =>
      Effect.gen(function*() {
        const storage = yield* TaskStorage.TaskStorage
        const ids: Array<string> = []
        for (const prompt of ["a lighthouse at dusk", "a kite over the sea", "LIGHTHOUSE in fog"]) {
          yield* TestClock.adjust(1000)
          const task = newTask({ createdAt: yield* now, accountId: "acct_search", input: { prompt } })
          yield* storage.accept({ task, charge: undefined, idempotency: undefined })
          ids.push(task.id)
        }
        const page = (search: string) =>
          Effect.map(
            listPage("acct_search", { search, limit: 10 }, (task) => task.id),
            (answer) => ({ ids: answer.data, total: answer.pagination.total })
          )
        expect(yield* page("Lighthouse")).toEqual({ ids: [ids[2], ids[0]], total: 2 })
        expect(yield* page("lightho fog")).toEqual({ ids: [ids[2]], total: 1 })
        expect(yield* page(ids[1]!)).toEqual({ ids: [ids[1]], total: 1 })
        expect(yield* page("task_")).toEqual({ ids: [...ids].reverse(), total: 3 })
        expect(yield* page("???")).toEqual({ ids: [], total: 0 })
      })
    ))
})
