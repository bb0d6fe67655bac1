/**
 * Field Schemas shared by the request Schemas: integers and enums with messages that name the rule, text with length
 * limits, public URLs, image references (URL or data URI), URL lists with counts, metadata and webhook URLs.
 *
 * Messages are written to follow the field path, e.g. `input.duration: must be an integer from 4 to 12`.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as AST from "effect/SchemaAST"
import { checkUrlHost, parseHttpUrl } from "./Address.js"
import { type DataUriImage, type ImageFormat, inspectImageDataUri, isDataUri } from "./DataUri.js"

/**
 * Parse options of every request body: unknown fields are errors.
 *
 * @since 0.1.0
 * @category constants
 */
export const strictParse = { parseOptions: { onExcessProperty: "error" } } as const

/**
 * An optional field that may be absent but not `undefined` (JSON has no `undefined`).
 *
 * @since 0.1.0
 * @category schemas
 */
export const optional = <S extends Schema.Schema.All>(schema: S) => Schema.optionalWith(schema, { exact: true })

/**
 * Replaces every failure message of a Schema (type mismatch included) with one that states the rule.
 *
 * @since 0.1.0
 * @category schemas
 */
export const withMessage = <S extends Schema.Annotable<S, any, any, any>>(schema: S, message: string): S =>
  schema.annotations({ message: () => ({ message, override: true }) })

/**
 * One of a fixed list of strings.
 *
 * @since 0.1.0
 * @category schemas
 */
export const oneOf = <const L extends readonly [string, ...Array<string>]>(...values: L) =>
  withMessage(Schema.Literal(...values), `must be one of ${values.map((v) => JSON.stringify(v)).join(", ")}`)

/**
 * An integer in a closed range.
 *
 * @since 0.1.0
 * @category schemas
 */
export const integer = (min: number, max: number) =>
  withMessage(Schema.Int.pipe(Schema.between(min, max)), `must be an integer from ${min} to ${max}`)

/**
 * A finite number in a closed range.
 *
 * @since 0.1.0
 * @category schemas
 */
export const number = (min: number, max: number) =>
  withMessage(Schema.Finite.pipe(Schema.between(min, max)), `must be a number from ${min} to ${max}`)

/**
 * A boolean.
 *
 * @since 0.1.0
 * @category schemas
 */
export const boolean = withMessage(Schema.Boolean, "must be a boolean")

/**
 * A string of at most `maxLength` characters (and at least `minLength`, default 0).
 *
 * @since 0.1.0
 * @category schemas
 */
export const text = (maxLength: number, minLength = 0) =>
  withMessage(
    Schema.String.pipe(Schema.minLength(minLength), Schema.maxLength(maxLength)),
    minLength > 0
      ? `must be a string of ${minLength} to ${maxLength} characters`
      : `must be a string of at most ${maxLength} characters`
  )

/**
 * A prompt: a non-blank string of at most `maxLength` characters.
 *
 * @since 0.1.0
 * @category schemas
 */
export const prompt = (maxLength: number) =>
  withMessage(
    Schema.String.pipe(
      Schema.maxLength(maxLength),
      Schema.filter((s) => s.trim().length > 0, { jsonSchema: { minLength: 1 } })
    ),
    `must be a non-empty string of at most ${maxLength} characters`
  )

/**
 * Adds a description that reaches OpenAPI. JSON Schema describes the encoded side, so on a transformation (such as
 * {@link PublicUrl} and {@link imageRef}, whose address check is effectful) only the node's `jsonSchema` annotation
 * is read: the description is merged into it there.
 *
 * @since 0.1.0
 * @category schemas
 */
export const describe = <S extends Schema.Annotable<S, any, any, any>>(schema: S, description: string): S => {
  if (schema.ast._tag !== "Transformation") return schema.annotations({ description })
  const jsonSchema = Option.getOrElse(AST.getJSONSchemaAnnotation(schema.ast), () => ({}))
  return schema.annotations({ description, jsonSchema: { ...jsonSchema, description } })
}

/**
 * `limit` of a list query: 1 to 100, default 20 (every paged list of the API).
 *
 * @since 0.1.0
 * @category constants
 */
export const pageLimit = optional(
  Schema.compose(
    Schema.NumberFromString.annotations({
      message: () => ({ message: "must be an integer from 1 to 100", override: true })
    }),
    integer(1, 100),
    { strict: false }
  ).annotations({ description: "Items per page, 1 to 100 (default 20)", default: 20 })
)

/**
 * `cursor` of a list query: `pagination.cursor` of the previous page.
 *
 * @since 0.1.0
 * @category constants
 */
export const pageCursor = optional(
  text(512, 1).annotations({ description: "`pagination.cursor` of the previous page" })
)

/**
 * Longest URL accepted anywhere.
 *
 * @since 0.1.0
 * @category constants
 */
export const maxUrlLength = 2048

const urlShape = (value: string): string | undefined => {
  if (value.length > maxUrlLength) return `must be a URL of at most ${maxUrlLength} characters`
  return parseHttpUrl(value) === undefined ? "must be an absolute http(s) URL" : undefined
}

const checkPublicHost = (value: string) => {
  const url = parseHttpUrl(value)
  return url === undefined ? Effect.succeed(undefined) : checkUrlHost(url)
}

/**
 * An absolute `http`/`https` URL whose literal host is a public address (decisions.md §2; loopback and private
 * targets are allowed only under a permissive {@link AddressPolicy}).
 *
 * @since 0.1.0
 * @category schemas
 */
export const PublicUrl = Schema.String.pipe(
  Schema.filter(urlShape),
  Schema.filterEffect((value) => Effect.map(checkPublicHost(value), (problem) => problem ?? true))
).annotations({
  title: "PublicUrl",
  description: "Absolute http(s) URL of a public host",
  format: "uri",
  jsonSchema: { type: "string", format: "uri", maxLength: maxUrlLength }
})

/**
 * Rules for an image given as a URL or a base64 data URI; data URIs are checked at request time.
 *
 * @since 0.1.0
 * @category models
 */
export interface ImageRules {
  readonly formats: ReadonlyArray<ImageFormat>
  readonly maxBytes: number
  readonly minSide?: number
  readonly maxSide?: number
  /** Smallest allowed width/height ratio. */
  readonly minRatio?: number
  /** Largest allowed width/height ratio. */
  readonly maxRatio?: number
}

const megabytes = (bytes: number) => `${Math.round(bytes / (1024 * 1024))} MB`

/**
 * Why an image (a decoded data URI, or fetched bytes) breaks the rules, or undefined.
 *
 * @since 0.1.0
 * @category utils
 */
export const imageProblem = (
  image: Pick<DataUriImage, "format" | "bytes" | "width" | "height">,
  rules: ImageRules
): string | undefined => {
  if (image.format === "other" || !rules.formats.includes(image.format)) {
    return `image format must be one of ${rules.formats.join(", ")}`
  }
  if (image.bytes > rules.maxBytes) return `image must be at most ${megabytes(rules.maxBytes)}`
  const { height, width } = image
  if (rules.minSide !== undefined && (width < rules.minSide || height < rules.minSide)) {
    return `image sides must be at least ${rules.minSide} px (got ${width}x${height})`
  }
  if (rules.maxSide !== undefined && (width > rules.maxSide || height > rules.maxSide)) {
    return `image sides must be at most ${rules.maxSide} px (got ${width}x${height})`
  }
  const ratio = width / height
  if (rules.minRatio !== undefined && ratio < rules.minRatio - 1e-9) {
    return `image width/height ratio must be at least ${rules.minRatio} (got ${ratio.toFixed(3)})`
  }
  if (rules.maxRatio !== undefined && ratio > rules.maxRatio + 1e-9) {
    return `image width/height ratio must be at most ${rules.maxRatio} (got ${ratio.toFixed(3)})`
  }
  return undefined
}

/**
 * Reads an image data URI and checks it against the rules; the reason it fails, or undefined.
 *
 * @since 0.1.0
 * @category utils
 */
export const dataUriProblem = (value: string, rules: ImageRules): string | undefined =>
  Either.match(inspectImageDataUri(value), {
    onLeft: (reason) => reason,
    onRight: (image) => imageProblem(image, rules)
  })

/**
 * An image given as a public http(s) URL or a base64 data URI whose bytes satisfy `rules`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const imageRef = (rules: ImageRules) =>
  Schema.String.pipe(
    Schema.filter((value) => isDataUri(value) ? dataUriProblem(value, rules) : urlShape(value)),
    Schema.filterEffect((value) =>
      isDataUri(value) ? Effect.succeed(true) : Effect.map(checkPublicHost(value), (problem) => problem ?? true)
    )
  ).annotations({
    title: "ImageRef",
    description: `Public http(s) URL or base64 data URI of an image (${rules.formats.join(", ")}, at most ${
      megabytes(rules.maxBytes)
    })`,
    jsonSchema: { type: "string" }
  })

/**
 * A list with an item count in a closed range; `noun` names the items in the message ("URLs", "images").
 *
 * @since 0.1.0
 * @category schemas
 */
export const list = <S extends Schema.Schema.Any>(
  item: S,
  options: { readonly min: number; readonly max: number; readonly noun: string; readonly message?: string }
) => {
  const message = options.message ??
    (options.min === options.max
      ? `must contain exactly ${options.min} ${options.noun}`
      : options.min === 0
      ? `must contain at most ${options.max} ${options.noun}`
      : `must contain ${options.min} to ${options.max} ${options.noun}`)
  return Schema.Array(item).annotations({ message: () => "must be an array" }).pipe(
    Schema.filter((items) => (items.length >= options.min && items.length <= options.max) || message, {
      jsonSchema: { minItems: options.min, maxItems: options.max }
    })
  )
}

/**
 * Metadata values: string (≤ 500 chars), number, boolean or null.
 *
 * @since 0.1.0
 * @category schemas
 */
export const MetadataValue = withMessage(
  Schema.Union(Schema.String.pipe(Schema.maxLength(500)), Schema.Finite, Schema.Boolean, Schema.Null),
  "must be a string of at most 500 characters, a number, a boolean or null"
)

/**
 * `metadata`: a flat object of at most 50 keys of 1 to 40 characters (decisions.md §2).
 *
 * @since 0.1.0
 * @category schemas
 */
export const Metadata = Schema.Record({ key: Schema.String, value: MetadataValue }).pipe(
  Schema.filter((record) => {
    const keys = Object.keys(record)
    if (keys.length > 50) return "must have at most 50 keys"
    const bad = keys.find((key) => key.length < 1 || key.length > 40)
    return bad === undefined ? undefined : { path: [bad], message: "keys must be 1 to 40 characters long" }
  }, { jsonSchema: { maxProperties: 50, propertyNames: { minLength: 1, maxLength: 40 } } })
).annotations({
  identifier: "Metadata",
  title: "Metadata",
  description: "Custom key-value data: at most 50 keys of 1 to 40 characters; values are strings of at most 500 " +
    "characters, numbers, booleans or null"
})
/**
 * Metadata of a task.
 *
 * @since 0.1.0
 * @category schemas
 */
export type Metadata = typeof Metadata.Type

/**
 * A webhook target: an absolute http(s) URL of a public host (decisions.md §6).
 *
 * @since 0.1.0
 * @category schemas
 */
export const WebhookUrl = PublicUrl.annotations({ identifier: "WebhookUrl", title: "WebhookUrl" })

/**
 * A failure of a cross-field rule, at a path relative to the request body (e.g. `["input", "duration"]`).
 *
 * @since 0.1.0
 * @category utils
 */
export const issue = (path: ReadonlyArray<PropertyKey>, message: string): Schema.FilterIssue => ({ path, message })
