/**
 * The common shape of every generation request (`model`, `input`, `webhookUrl`, `metadata`) and the helpers the
 * per-family request Schemas use for model-specific rules and defaults.
 *
 * A request Schema decodes in three steps: the field Schemas (types, enums, ranges common to all models of the
 * endpoint), then the endpoint's cross-field and per-model rules (a `Schema.filter` whose failures carry the field
 * path), then normalization (the effective defaults for the chosen model filled in). Encoding is the identity.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { Metadata, optional, strictParse, WebhookUrl, withMessage } from "./Fields.js"

/** A decoded generation request. */
export interface GenerationBody<M extends string, I> {
  readonly model: M
  readonly input: I
  readonly webhookUrl?: string
  readonly metadata?: Metadata
}

/** The JSON form of a generation request. */
export interface GenerationBodyEncoded<M extends string, I> {
  readonly model: M
  readonly input: I
  readonly webhookUrl?: string
  readonly metadata?: { readonly [key: string]: string | number | boolean | null }
}

/** A generation request Schema: JSON body in, validated and normalized body out. */
export interface GenerationRequestSchema<M extends string, I, IE> extends
  Schema.Schema<
    GenerationBody<M, I>,
    GenerationBodyEncoded<M, IE>
  >
{
  /** The models the endpoint accepts. */
  readonly models: ReadonlyArray<M>
  /** The Schema of `input` alone (field rules only, no cross-field rules or defaults). */
  readonly inputFields: Schema.Schema<I, IE>
}

/** Options of {@link make}. */
export interface GenerationRequestOptions<M extends string, F extends Schema.Struct.Fields> {
  /** Name of the request in OpenAPI (e.g. `Vendor1TextToVideoRequest`). */
  readonly identifier: string
  readonly description?: string
  readonly models: readonly [M, ...Array<M>]
  /** The `input` fields with their per-field rules. */
  readonly input: F
  /** Cross-field and per-model rules: every failure with its path from the body root (`["input", "duration"]`). */
  readonly rules?: (body: GenerationBody<M, Schema.Struct.Type<F>>) => ReadonlyArray<Schema.FilterIssue>
  /** The input with the effective defaults of the chosen model filled in. */
  readonly normalize?: (body: GenerationBody<M, Schema.Struct.Type<F>>) => Schema.Struct.Type<F>
}

/** Builds the request Schema of one generation endpoint. */
export const make = <M extends string, F extends Schema.Struct.Fields>(
  options: GenerationRequestOptions<M, F>
): GenerationRequestSchema<M, Schema.Struct.Type<F>, Schema.Struct.Encoded<F>> => {
  const models = options.models
  const inputFields = Schema.Struct(options.input).annotations({
    ...strictParse,
    identifier: `${options.identifier.replace(/Request$/, "")}Input`,
    message: () => ({ message: "must be an object", override: false })
  })
  const body = Schema.Struct({
    model: withMessage(
      Schema.Literal(...models),
      `must be one of ${models.join(", ")} for this endpoint`
    ).annotations({ description: "Model id" }),
    input: inputFields,
    webhookUrl: optional(WebhookUrl.annotations({
      description: "URL that receives a per-job webhook when the task reaches a terminal state"
    })),
    metadata: optional(Metadata)
  }).annotations(strictParse)
  type Body = GenerationBody<M, Schema.Struct.Type<F>>
  const rules = options.rules
  const normalize = options.normalize
  const checked = rules === undefined ? body : body.pipe(Schema.filter((value) => rules(value as Body)))
  const schema = Schema.transform(checked, Schema.typeSchema(body), {
    strict: true,
    decode: (value) => normalize === undefined ? value : { ...value, input: normalize(value as Body) },
    encode: (value) => value
  }).annotations({
    identifier: options.identifier,
    ...(options.description === undefined ? {} : { description: options.description })
  })
  return Object.assign(schema, { models, inputFields }) as unknown as GenerationRequestSchema<
    M,
    Schema.Struct.Type<F>,
    Schema.Struct.Encoded<F>
  >
}

type AnyBody = { readonly model: string; readonly input: object }

const has = (body: AnyBody, field: string): boolean =>
  (body.input as Record<string, unknown>)[field] !== undefined

/** Refuses a field that the chosen model does not support. */
export const onlyFor = (body: AnyBody, field: string, models: ReadonlyArray<string>): Array<Schema.FilterIssue> =>
  has(body, field) && !models.includes(body.model)
    ? [{ path: ["input", field], message: `is not supported by model ${body.model}` }]
    : []

/** Requires an integer input field to lie in a model-specific range. */
export const integerFor = (
  body: AnyBody,
  field: string,
  min: number,
  max: number
): Array<Schema.FilterIssue> => {
  const value = (body.input as Record<string, unknown>)[field]
  return typeof value === "number" && (value < min || value > max || !Number.isInteger(value))
    ? [{ path: ["input", field], message: `must be an integer from ${min} to ${max} for model ${body.model}` }]
    : []
}

/** Requires a string input field to be one of model-specific values. */
export const oneOfFor = (
  body: AnyBody,
  field: string,
  values: ReadonlyArray<string>,
  context = `model ${body.model}`
): Array<Schema.FilterIssue> => {
  const value = (body.input as Record<string, unknown>)[field]
  return typeof value === "string" && !values.includes(value)
    ? [{
      path: ["input", field],
      message: `must be one of ${values.map((v) => JSON.stringify(v)).join(", ")} for ${context}`
    }]
    : []
}

/** Requires a field (missing-field message of the API). */
export const requiredFor = (body: AnyBody, field: string, reason: string): Array<Schema.FilterIssue> =>
  has(body, field) ? [] : [{ path: ["input", field], message: `is required ${reason}` }]

/** Fills in defaults: every `defaults` entry whose field is absent from the input. */
export const withDefaults = <I extends object>(input: I, defaults: Partial<I>): I => {
  const out: Record<string, unknown> = { ...(input as Record<string, unknown>) }
  for (const [key, value] of Object.entries(defaults)) {
    if (out[key] === undefined && value !== undefined) out[key] = value
  }
  return out as unknown as I
}
