/**
 * Base64 data URIs for image inputs: parsing, and inspection of the decoded bytes (format, size, pixel size).
 *
 * @since 0.1.0
 */
import * as Either from "effect/Either"
import * as Encoding from "effect/Encoding"
import { imageSize } from "image-size"

/**
 * Image formats the specification names (`jpg` and `jpeg` are one format).
 *
 * @since 0.1.0
 * @category models
 */
export type ImageFormat = "jpeg" | "png" | "webp" | "bmp" | "tiff" | "gif" | "heic" | "heif"

/**
 * What a data URI holds, read from its bytes.
 *
 * @since 0.1.0
 * @category models
 */
export interface DataUriImage {
  readonly mimeType: string
  readonly format: ImageFormat | "other"
  readonly bytes: number
  readonly width: number
  readonly height: number
}

const dataUriPattern = /^data:([a-z0-9.+-]+\/[a-z0-9.+-]+)(?:;[a-z0-9-]+=[^;,]*)*;base64,/i

/**
 * Whether a string is written as a data URI (`data:...`), valid or not.
 *
 * @since 0.1.0
 * @category guards
 */
export const isDataUri = (value: string): boolean => value.slice(0, 5).toLowerCase() === "data:"

/** image-size's type names (HEIF containers by their ftyp brand) and the spec's format names. */
const formats: Readonly<Record<string, ImageFormat>> = {
  jpg: "jpeg",
  png: "png",
  webp: "webp",
  bmp: "bmp",
  tiff: "tiff",
  gif: "gif",
  heic: "heic",
  heix: "heic",
  hevc: "heic",
  hevx: "heic",
  heif: "heif",
  mif1: "heif",
  msf1: "heif"
}

/**
 * image-size's type names (and HEIF ftyp brands) as the spec's format names.
 *
 * @since 0.1.0
 * @category encoding
 */
export const formatOfType = (type: string | undefined): ImageFormat | "other" =>
  type !== undefined && Object.hasOwn(formats, type) ? formats[type] : "other"

/**
 * Decodes an image data URI and reads its format and pixel size, or returns the reason it is not one.
 * Only `;base64` data URIs of an image media type are accepted.
 *
 * @since 0.1.0
 * @category utils
 */
export const inspectImageDataUri = (value: string): Either.Either<DataUriImage, string> => {
  const match = dataUriPattern.exec(value)
  if (match === null) return Either.left("must be a base64 data URI (data:image/<format>;base64,...)")
  const mimeType = match[1]!.toLowerCase()
  if (!mimeType.startsWith("image/")) return Either.left(`data URI media type ${mimeType} is not an image type`)
  const payload = value.slice(match[0].length)
  if (payload.length === 0) return Either.left("data URI carries no data")
  const decoded = Encoding.decodeBase64(payload)
  if (Either.isLeft(decoded)) return Either.left("data URI is not valid base64")
  const bytes = decoded.right
  let size: { width: number; height: number; type?: string }
  try {
    size = imageSize(bytes)
  } catch {
    return Either.left("data URI does not hold a readable image")
  }
  return Either.right({
    mimeType,
    format: formatOfType(size.type),
    bytes: bytes.length,
    width: size.width,
    height: size.height
  })
}
