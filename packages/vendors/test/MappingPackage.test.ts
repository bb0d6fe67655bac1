/**
 * JSONata is an optional package of model mappings (docs/configuration.md "Optional packages"): without it a
 * mapping does not compile, saving one is refused with the install line, and a stored one fails its tasks with the
 * same message instead of being left out; with it, mappings compile and run. JSONata is made "not installed" by
 * replacing `Mapping.loader.require` (a replaced loader is used at the next compile).
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Mapping from "../src/Mapping.js"

const mapping = { "model-a": { target: "upstream-a", input: "{ \"text\": input.prompt }" } }
const context = { model: "model-a", input: { prompt: "a kite" }, taskId: "task_1", metadata: {} }
const installLine = "A model mapping (settings.mapping) needs the package jsonata, which is not installed: " +
  "npm install jsonata@^2"

describe("model mappings and the jsonata package", () => {
  it.effect("without jsonata: saving is refused, a stored mapping fails its task; with it, it maps", () =>
    Effect.gen(function*() {
      const installed = Mapping.loader.require
      Mapping.loader.require = () => {
        throw Object.assign(new Error("Cannot find module 'jsonata'"), { code: "MODULE_NOT_FOUND" })
      }
      try {
        expect(Mapping.problem(mapping, () => true)).toBe(
          `settings.mapping.model-a.input: the input mapping of model model-a does not compile: ${installLine}`
        )
        const error = yield* Effect.flip(Mapping.mapInput(Mapping.compile(mapping)("model-a"), context))
        expect(error.message).toBe(`the input mapping of model model-a failed: ${installLine}`)
      } finally {
        Mapping.loader.require = installed
      }
      expect(Mapping.problem(mapping, () => true)).toBeUndefined()
      expect(yield* Mapping.mapInput(Mapping.compile(mapping)("model-a"), context)).toEqual({ text: "a kite" })
    }))
})
