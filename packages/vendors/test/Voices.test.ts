import { NodeContext } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Services } from "@mediagate/contract"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Voices from "../src/Voices.js"

const withConfig = (values: Record<string, string>) =>
  Voices.layerConfig.pipe(
    Layer.provide(NodeContext.layer),
    Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(values)))))
  )

describe("vendor9 voices", () => {
  it("filter by case-insensitive part of the name", () => {
    expect(Voices.list(Voices.defaultVoices, "ALB")).toEqual({
      voices: [{ voice_id: "v9_alba", name: "Alba", description: "Warm female narrator, neutral accent" }],
      total: 1
    })
    expect(Voices.list(Voices.defaultVoices, "al").voices.map((v) => v.name)).toEqual(["Alba", "Dalia"])
    expect(Voices.list(Voices.defaultVoices, "é").voices.map((v) => v.name)).toEqual(["Inés", "Léon"])
    expect(Voices.list(Voices.defaultVoices, undefined).total).toBe(Voices.defaultVoices.length)
    expect(Voices.list(Voices.defaultVoices, "zzz")).toEqual({ voices: [], total: 0 })
  })

  it.effect("serve the default catalog", () =>
    Effect.gen(function*() {
      const service = yield* Services.VoiceService
      expect((yield* service.list("bru")).voices.map((v) => v.voice_id)).toEqual(["v9_bruno"])
    }).pipe(Effect.provide(withConfig({}))))

  it.effect("serve an operator's catalog from MEDIAGATE_VOICES_FILE", () => {
    const file = join(mkdtempSync(join(tmpdir(), "mg-voices-")), "voices.json")
    writeFileSync(file, JSON.stringify([{ voice_id: "x1", name: "Xena", description: "Custom" }]))
    return Effect.gen(function*() {
      const service = yield* Services.VoiceService
      expect(yield* service.list(undefined)).toEqual({
        voices: [{ voice_id: "x1", name: "Xena", description: "Custom" }],
        total: 1
      })
    }).pipe(Effect.provide(withConfig({ MEDIAGATE_VOICES_FILE: file })))
  })

  it.effect("refuse a bad voice file with a message naming it", () => {
    const dir = mkdtempSync(join(tmpdir(), "mg-voices-"))
    const duplicate = join(dir, "dup.json")
    writeFileSync(
      duplicate,
      JSON.stringify([{ voice_id: "a", name: "A", description: "" }, { voice_id: "a", name: "B", description: "" }])
    )
    const broken = join(dir, "broken.json")
    writeFileSync(broken, "[{")
    return Effect.gen(function*() {
      const dup = yield* Effect.flip(Layer.build(withConfig({ MEDIAGATE_VOICES_FILE: duplicate })))
      expect(String((dup as { message: string }).message)).toContain("voice ids must be unique")
      const bad = yield* Effect.flip(Layer.build(withConfig({ MEDIAGATE_VOICES_FILE: broken })))
      expect(String((bad as { message: string }).message)).toBe(`voice file ${broken}: is not valid JSON`)
      const missing = yield* Effect.flip(Layer.build(withConfig({ MEDIAGATE_VOICES_FILE: join(dir, "none.json") })))
      expect(String((missing as { message: string }).message)).toContain("cannot be read")
    }).pipe(Effect.scoped)
  })
})
