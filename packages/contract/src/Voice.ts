/**
 * Voices of vendor9 (`GET /api/v1/vendor9/voices`).
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { optional, text } from "./Fields.js"

/**
 * A voice for text-to-speech use.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Voice = Schema.Struct({
  voice_id: Schema.String,
  name: Schema.String,
  description: Schema.String
}).annotations({ identifier: "Voice" })
/**
 * A voice.
 *
 * @since 0.1.0
 * @category schemas
 */
export type Voice = typeof Voice.Type

/**
 * `data` of the voice list.
 *
 * @since 0.1.0
 * @category schemas
 */
export const VoiceList = Schema.Struct({
  voices: Schema.Array(Voice),
  total: Schema.Number
}).annotations({ identifier: "VoiceList" })
/**
 * `data` of the voice list.
 *
 * @since 0.1.0
 * @category schemas
 */
export type VoiceList = typeof VoiceList.Type

/**
 * Query of the voice list: `name` filters by case-insensitive substring.
 *
 * @since 0.1.0
 * @category schemas
 */
export const VoiceListQuery = Schema.Struct({
  name: optional(text(100).annotations({ description: "Case-insensitive part of the voice name" }))
}).annotations({ identifier: "VoiceListQuery" })
/**
 * Query of the voice list.
 *
 * @since 0.1.0
 * @category schemas
 */
export type VoiceListQuery = typeof VoiceListQuery.Type
