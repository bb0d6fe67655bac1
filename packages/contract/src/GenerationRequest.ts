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
import * as Option from "effect/Option"
import * as Rec from "effect/Record"
import * as Schema from "effect/Schema"
import * as AST from "effect/SchemaAST"
import { Metadata, optional, strictParse, WebhookUrl, withMessage } from "./Fields.js"

/**
 * A decoded generation request.
 *
 * @since 0.1.0
 * @category models
 */
export interface GenerationBody<M extends string, I> {
  readonly model: M
  readonly input: I
  readonly webhookUrl?: string
  readonly metadata?: Metadata
}

/**
 * A generation request Schema: JSON body in (the same shape, its input encoded), validated and normalized body out.
 *
 * @since 0.1.0
 * @category models
 */
export interface GenerationRequestSchema<M extends string, I, IE, R = never>
  extends Schema.Schema<GenerationBody<M, I>, GenerationBody<M, IE>, R>
{
  /** The models the endpoint accepts. */
  readonly models: ReadonlyArray<M>
  /** The Schema of `input` alone (field rules only, no cross-field rules or defaults). */
  readonly inputFields: Schema.Schema<I, IE, R>
}

/**
 * Options of {@link make}.
 *
 * @since 0.1.0
 * @category models
 */
export interface GenerationRequestOptions<M extends string, F extends Schema.Struct.Fields> {
  /** Name of the request in OpenAPI (e.g. `Vendor1TextToVideoRequest`). */
  readonly identifier: string
  readonly description?: string
  readonly models: readonly [M, ...Array<M>]
  /** The `input` fields with their per-field rules. */
  readonly input: F
  /** Cross-field and per-model rules: every failure with its path from the body root (`["input", "duration"]`). */
  readonly rules?: (body: GenerationBody<M, Schema.Struct<F>["Type"]>) => ReadonlyArray<Schema.FilterIssue>
  /**
   * The input with the effective defaults of the chosen model filled in; `"annotated"`: every absent field whose
   * Schema has a `default` annotation (the one OpenAPI shows) gets that default, for every model alike.
   */
  readonly normalize?: ((body: GenerationBody<M, Schema.Struct<F>["Type"]>) => Schema.Struct<F>["Type"]) | "annotated"
}

/** The `default` annotation of a field (on an optional field: of its Schema). */
const defaultOf = ({ ast }: Schema.Struct.Field): Option.Option<unknown> =>
  ast._tag === "PropertySignatureTransformation"
    ? Option.none()
    : AST.getDefaultAnnotation(ast._tag === "PropertySignatureDeclaration" ? ast.type : ast)

/**
 * Builds the request Schema of one generation endpoint.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = <M extends string, F extends Schema.Struct.Fields>(
  options: GenerationRequestOptions<M, F>
): GenerationRequestSchema<M, Schema.Struct<F>["Type"], Schema.Struct<F>["Encoded"], Schema.Struct<F>["Context"]> => {
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
  const rules = options.rules
  const annotated = Rec.getSomes(Rec.map(options.input, defaultOf))
  const normalize = options.normalize === "annotated"
    ? (body: GenerationBody<M, Schema.Struct<F>["Type"]>) => fill(body.input, annotated)
    : options.normalize
  const checked = rules === undefined ? body : body.pipe(Schema.filter((value) => rules(value)))
  const schema = Schema.transform(checked, Schema.typeSchema(body), {
    strict: true,
    decode: (value) => normalize === undefined ? value : { ...value, input: normalize(value) },
    encode: (value) => value
  }).annotations({
    identifier: options.identifier,
    ...(options.description === undefined ? {} : { description: options.description })
  })
  return Object.assign(schema, { models, inputFields })
}

type AnyBody = { readonly model: string; readonly input: Readonly<Record<string, unknown>> }

/**
 * Refuses a field that the chosen model does not support.
 *
 * @since 0.1.0
 * @category utils
 */
export const onlyFor = (body: AnyBody, field: string, models: ReadonlyArray<string>): Array<Schema.FilterIssue> =>
  body.input[field] !== undefined && !models.includes(body.model)
    ? [{ path: ["input", field], message: `is not supported by model ${body.model}` }]
    : []

/**
 * Requires an integer input field to lie in a model-specific range.
 *
 * @since 0.1.0
 * @category utils
 */
export const integerFor = (
  body: AnyBody,
  field: string,
  min: number,
  max: number
): Array<Schema.FilterIssue> => {
  const value = body.input[field]
  return typeof value === "number" && (value < min || value > max || !Number.isInteger(value))
    ? [{ path: ["input", field], message: `must be an integer from ${min} to ${max} for model ${body.model}` }]
    : []
}

/**
 * Requires a string input field to be one of model-specific values.
 *
 * @since 0.1.0
 * @category utils
 */
export const oneOfFor = (
  body: AnyBody,
  field: string,
  values: ReadonlyArray<string>,
  context = `model ${body.model}`
): Array<Schema.FilterIssue> => {
  const value = body.input[field]
  return typeof value === "string" && !values.includes(value)
    ? [{
      path: ["input", field],
      message: `must be one of ${values.map((v) => JSON.stringify(v)).join(", ")} for ${context}`
    }]
    : []
}

/**
 * Requires a field (missing-field message of the API).
 *
 * @since 0.1.0
 * @category utils
 */
export const requiredFor = (body: AnyBody, field: string, reason: string): Array<Schema.FilterIssue> =>
  body.input[field] === undefined ? [{ path: ["input", field], message: `is required ${reason}` }] : []

/** The input with every defined entry of `defaults` whose field it lacks added (after its own fields). */
const fill = <I extends object>(input: I, defaults: object): I => ({
  ...input,
  ...Object.fromEntries(
    Object.entries(defaults).filter(([key, value]) => value !== undefined && Reflect.get(input, key) === undefined)
  )
})

/**
 * Fills in defaults: every `defaults` entry whose field is absent from the input.
 *
 * @since 0.1.0
 * @category utils
 */
export const withDefaults = <I extends object>(input: I, defaults: Partial<I>): I => fill(input, defaults)
