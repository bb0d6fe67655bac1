/**
 * vendor9: the voice catalog (`GET /api/v1/vendor9/voices`). A default catalog ships; an operator may replace it
 * with a JSON file (`MEDIAGATE_VOICES_FILE`: an array of `{ voice_id, name, description }`).
 *
 * @since 0.1.0
 */
import * as FileSystem from "@effect/platform/FileSystem"
import { Services, Voice } from "@mediagate/contract"
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"

/**
 * The catalog that ships.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultVoices: ReadonlyArray<Voice.Voice> = [
  { voice_id: "v9_alba", name: "Alba", description: "Warm female narrator, neutral accent" },
  { voice_id: "v9_bruno", name: "Bruno", description: "Deep male voice for trailers and documentaries" },
  { voice_id: "v9_chen", name: "Chen", description: "Clear male voice, Mandarin and English" },
  { voice_id: "v9_dalia", name: "Dalia", description: "Bright female voice for advertising" },
  { voice_id: "v9_emeka", name: "Emeka", description: "Calm male storyteller" },
  { voice_id: "v9_freya", name: "Freya", description: "Soft female voice for meditation and sleep content" },
  { voice_id: "v9_gustavo", name: "Gustavo", description: "Energetic male voice for sports and gaming" },
  { voice_id: "v9_hana", name: "Hana", description: "Young female voice, Japanese and English" },
  { voice_id: "v9_ines", name: "Inés", description: "Professional female voice, Spanish and English" },
  { voice_id: "v9_jonas", name: "Jonas", description: "Friendly male voice for tutorials" },
  { voice_id: "v9_kiri", name: "Kiri", description: "Child-like animated character voice" },
  { voice_id: "v9_leon", name: "Léon", description: "Elegant male voice, French and English" }
]

/**
 * A voice file: a non-empty list of voices with unique ids.
 *
 * @since 0.1.0
 * @category schemas
 */
export const VoiceFile = Schema.NonEmptyArray(Voice.Voice).pipe(
  Schema.filter((voices) => new Set(voices.map((v) => v.voice_id)).size === voices.length || "voice ids must be unique")
)

/**
 * Why a voice file could not be used.
 *
 * @since 0.1.0
 * @category errors
 */
export class VoiceFileError extends Schema.TaggedError<VoiceFileError>()("VoiceFileError", {
  file: Schema.String,
  message: Schema.String
}) {}

/**
 * Lists a catalog: `name` filters by case-insensitive substring of the voice name.
 *
 * @since 0.1.0
 * @category utils
 */
export const list = (voices: ReadonlyArray<Voice.Voice>, name: string | undefined): Voice.VoiceList => {
  const needle = name?.trim().toLocaleLowerCase()
  const found = needle === undefined || needle === ""
    ? voices
    : voices.filter((voice) => voice.name.toLocaleLowerCase().includes(needle))
  return { voices: found, total: found.length }
}

/**
 * The voice service over a catalog.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (voices: ReadonlyArray<Voice.Voice> = defaultVoices): Layer.Layer<Services.VoiceService> =>
  Layer.succeed(Services.VoiceService, { list: (name) => Effect.succeed(list(voices, name)) })

/**
 * Reads and checks a voice file.
 *
 * @since 0.1.0
 * @category utils
 */
export const loadVoiceFile = (file: string) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const text = yield* fs.readFileString(file).pipe(
      Effect.mapError(() => new VoiceFileError({ file, message: `voice file ${file}: cannot be read` }))
    )
    const json = yield* Effect.try({
      try: (): unknown => JSON.parse(text),
      catch: () => new VoiceFileError({ file, message: `voice file ${file}: is not valid JSON` })
    })
    return yield* Schema.decodeUnknown(VoiceFile)(json).pipe(
      Effect.mapError((error) => new VoiceFileError({ file, message: `voice file ${file}: ${error.message}` }))
    )
  })

/**
 * The voice service with `MEDIAGATE_VOICES_FILE` when set, else the default catalog.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig = Layer.unwrapEffect(
  Effect.gen(function*() {
    const file = yield* Config.option(Config.string("MEDIAGATE_VOICES_FILE"))
    if (Option.isNone(file) || file.value.trim() === "") return layer()
    return layer(yield* loadVoiceFile(file.value))
  })
)
