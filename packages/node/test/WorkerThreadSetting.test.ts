/**
 * Whether the production server runs its workers on a worker thread (`MEDIAGATE_WORKER_THREAD`, `Server.runsOnTwoThreads`):
 * `auto` by default, which does when the process may run on two or more CPUs; `true` and `false` decide either way.
 */
import { describe, expect, it } from "@effect/vitest"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Server from "../src/Server.js"

const read = (env: Record<string, string>) =>
  Effect.runSync(Effect.either(Effect.withConfigProvider(
    Server.workerThreadSetting,
    ConfigProvider.fromMap(new Map(Object.entries(env)))
  )))

describe("MEDIAGATE_WORKER_THREAD", () => {
  it("is auto by default, and auto takes two threads from two CPUs on", () => {
    expect(read({})).toEqual(Either.right("auto"))
    expect(Server.runsOnTwoThreads("auto", 1)).toBe(false)
    expect(Server.runsOnTwoThreads("auto", 2)).toBe(true)
    expect(Server.runsOnTwoThreads("auto", 16)).toBe(true)
  })

  it("takes a boolean in any of its spellings, which decides whatever the CPUs", () => {
    for (const text of ["true", "TRUE", "yes", "on", "1", " true "]) {
      expect(read({ MEDIAGATE_WORKER_THREAD: text })).toEqual(Either.right(true))
    }
    for (const text of ["false", "no", "off", "0"]) {
      expect(read({ MEDIAGATE_WORKER_THREAD: text })).toEqual(Either.right(false))
    }
    expect(read({ MEDIAGATE_WORKER_THREAD: "Auto" })).toEqual(Either.right("auto"))
    expect(Server.runsOnTwoThreads(true, 1)).toBe(true)
    expect(Server.runsOnTwoThreads(false, 8)).toBe(false)
  })

  it("refuses anything else, naming the setting and what it takes", () => {
    const result = read({ MEDIAGATE_WORKER_THREAD: "two" })
    expect(Either.isLeft(result)).toBe(true)
    expect(String(Either.getLeft(result).pipe((left) => left._tag === "Some" ? left.value : ""))).toMatch(
      /MEDIAGATE_WORKER_THREAD.*expected auto, true or false, got "two"/s
    )
  })
})
