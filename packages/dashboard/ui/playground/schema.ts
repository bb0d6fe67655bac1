/**
 * The playground's forms, read from the API's own OpenAPI document (the JSON Schema of each generation request,
 * as the contract's Schemas describe it): the generation endpoints, their models, and each input field's kind,
 * rules and help; the form's text values turned into a request body, and checked by those rules first, with
 * messages that name the field as the API's do. No DOM: the dashboard's tests run it in Node too.
 */

/** The part of JSON Schema the contract's request Schemas use. */
export interface JsonSchema {
  readonly $ref?: string
  readonly type?: string
  readonly enum?: ReadonlyArray<unknown>
  readonly anyOf?: ReadonlyArray<JsonSchema>
  readonly description?: string
  readonly minimum?: number
  readonly maximum?: number
  readonly multipleOf?: number
  readonly minLength?: number
  readonly maxLength?: number
  readonly pattern?: string
  readonly format?: string
  readonly items?: JsonSchema
  readonly minItems?: number
  readonly maxItems?: number
  readonly properties?: Readonly<Record<string, JsonSchema>>
  readonly required?: ReadonlyArray<string>
}

/** The part of an OpenAPI 3.1 document the playground reads. */
export interface OpenApiDocument {
  readonly paths: Readonly<
    Record<
      string,
      Readonly<
        Record<string, {
          readonly operationId?: string
          readonly summary?: string
          readonly description?: string
          readonly requestBody?: { readonly content?: Readonly<Record<string, { readonly schema?: JsonSchema }>> }
        }>
      >
    >
  >
  readonly components?: { readonly schemas?: Readonly<Record<string, JsonSchema>> }
}

/** How a field is edited. */
export type FieldKind =
  | "select" // one of a list
  | "choice" // one of a list, or text of a pattern (a datalist)
  | "text"
  | "long-text"
  | "media" // a URL or an uploaded file as a data URI
  | "list" // several strings, one per line
  | "media-list" // several URLs or uploaded files, one per line
  | "number"
  | "boolean"
  | "json" // anything else: JSON text

/** A field of a request's input. */
export interface FormField {
  readonly name: string
  readonly kind: FieldKind
  readonly required: boolean
  readonly schema: JsonSchema
  /** The values a `select` or `choice` offers. */
  readonly options: ReadonlyArray<string>
  readonly help: string | undefined
}

/** A generation endpoint's form. */
export interface EndpointForm {
  /** The endpoint below `/api/v1/` (`vendor3/text-to-video`). */
  readonly endpoint: string
  readonly summary: string
  readonly description: string | undefined
  readonly models: ReadonlyArray<string>
  readonly fields: ReadonlyArray<FormField>
}

const generationPrefix = "generation."

/** A schema with its `$ref` followed (the referring schema's own keys win, as OpenAPI 3.1 reads them). */
export const resolve = (document: OpenApiDocument, schema: JsonSchema): JsonSchema => {
  let current = schema
  for (let depth = 0; current.$ref !== undefined && depth < 16; depth++) {
    const name = /^#\/components\/schemas\/(.+)$/.exec(current.$ref)?.[1]
    const target = name === undefined ? undefined : document.components?.schemas?.[decodeURIComponent(name)]
    if (target === undefined) break
    const { $ref: _ref, ...own } = current
    current = { ...target, ...own }
  }
  return current
}

/** Whether a field takes a file as a data URI (besides a URL), by what its description says. */
const takesUpload = (schema: JsonSchema): boolean => /data URI/i.test(schema.description ?? "")

/** The strings of an `enum`. */
const stringsOf = (values: ReadonlyArray<unknown> | undefined): ReadonlyArray<string> =>
  (values ?? []).filter((value): value is string => typeof value === "string")

/** A field of `name` described by `schema`. */
export const fieldOf = (
  document: OpenApiDocument,
  name: string,
  raw: JsonSchema,
  required: boolean
): FormField => {
  const schema = resolve(document, raw)
  const field = (kind: FieldKind, options: ReadonlyArray<string> = []): FormField => ({
    name,
    kind,
    required,
    schema,
    options,
    help: schema.description
  })
  if (schema.enum !== undefined && stringsOf(schema.enum).length === schema.enum.length) {
    return field("select", stringsOf(schema.enum))
  }
  if (schema.anyOf !== undefined) {
    const members = schema.anyOf.map((member) => resolve(document, member))
    return members.every((member) => member.type === "string")
      ? field("choice", members.flatMap((member) => stringsOf(member.enum)))
      : field("json")
  }
  switch (schema.type) {
    case "string":
      if (takesUpload(schema)) return field("media")
      return field(name.endsWith("prompt") || (schema.maxLength ?? 0) > 500 ? "long-text" : "text")
    case "integer":
    case "number":
      return field("number")
    case "boolean":
      return field("boolean")
    case "array": {
      const items = schema.items === undefined ? undefined : resolve(document, schema.items)
      if (items?.type !== "string" || items.enum !== undefined) return field("json")
      return field(takesUpload(schema) ? "media-list" : "list")
    }
    default:
      return field("json")
  }
}

/** The generation endpoints of an OpenAPI document, with their forms, in the document's order. */
export const endpointsOf = (document: OpenApiDocument): ReadonlyArray<EndpointForm> =>
  Object.entries(document.paths).flatMap(([path, item]) => {
    const operation = item["post"]
    if (operation?.operationId?.startsWith(generationPrefix) !== true) return []
    const body = operation.requestBody?.content?.["application/json"]?.schema
    if (body === undefined) return []
    const request = resolve(document, body)
    const input = request.properties?.["input"] === undefined
      ? undefined
      : resolve(document, request.properties["input"])
    const model = request.properties?.["model"] === undefined
      ? undefined
      : resolve(document, request.properties["model"])
    const required = new Set(input?.required ?? [])
    return [{
      endpoint: path.replace(/^\/api\/v1\//, ""),
      summary: operation.summary ?? path,
      description: request.description,
      models: stringsOf(model?.enum),
      fields: Object.entries(input?.properties ?? {}).map(([name, schema]) =>
        fieldOf(document, name, schema, required.has(name))
      )
    }]
  })

/** A form's values: each field's text as typed (a checkbox's `"true"` / `"false"`, `""` for unset). */
export type FormValues = Readonly<Record<string, string>>

/** A field's value turned into JSON, or the message of why it cannot be (naming the field as the API does). */
export type FieldValue =
  | { readonly _tag: "Unset" }
  | { readonly _tag: "Value"; readonly value: unknown }
  | { readonly _tag: "Invalid"; readonly message: string }

const invalid = (field: FormField, message: string): FieldValue => ({
  _tag: "Invalid",
  message: `input.${field.name}: ${message}`
})

/** The checks of a string against its field's rules. */
const checkText = (field: FormField, text: string): FieldValue => {
  const schema = field.schema
  const length = [...text].length
  if (schema.minLength !== undefined && length < schema.minLength) {
    return invalid(field, `must be at least ${schema.minLength} characters`)
  }
  if (schema.maxLength !== undefined && length > schema.maxLength) {
    return invalid(field, `must be at most ${schema.maxLength} characters`)
  }
  if (schema.pattern !== undefined && !new RegExp(schema.pattern, "u").test(text)) {
    return invalid(field, `must match ${schema.pattern}`)
  }
  return { _tag: "Value", value: text }
}

/** The value of a field from its text: unset when empty, else JSON by the field's kind, checked by its rules. */
export const valueOf = (field: FormField, raw: string | undefined): FieldValue => {
  const text = raw ?? ""
  if (text.trim() === "") {
    return field.required ? invalid(field, "is required") : { _tag: "Unset" }
  }
  const schema = field.schema
  switch (field.kind) {
    case "number": {
      const n = Number(text)
      if (!Number.isFinite(n)) return invalid(field, "must be a number")
      if (schema.type === "integer" && !Number.isInteger(n)) return invalid(field, "must be a whole number")
      if (schema.minimum !== undefined && n < schema.minimum) {
        return invalid(field, `must be at least ${schema.minimum}`)
      }
      if (schema.maximum !== undefined && n > schema.maximum) return invalid(field, `must be at most ${schema.maximum}`)
      if (schema.multipleOf !== undefined && n % schema.multipleOf !== 0) {
        return invalid(field, `must be a multiple of ${schema.multipleOf}`)
      }
      return { _tag: "Value", value: n }
    }
    case "boolean":
      return text === "true" || text === "false"
        ? { _tag: "Value", value: text === "true" }
        : invalid(field, "must be true or false")
    case "select":
      return field.options.includes(text)
        ? { _tag: "Value", value: text }
        : invalid(field, `must be one of ${field.options.join(", ")}`)
    case "choice": {
      if (field.options.includes(text)) return { _tag: "Value", value: text }
      const patterns = (schema.anyOf ?? []).flatMap((member) => member.pattern === undefined ? [] : [member.pattern])
      return patterns.length === 0 || patterns.some((pattern) => new RegExp(pattern, "u").test(text))
        ? { _tag: "Value", value: text }
        : invalid(field, `must be one of ${field.options.join(", ")} or match ${patterns.join(" or ")}`)
    }
    case "list":
    case "media-list": {
      const items = text.split(/\r?\n/).map((line) => line.trim()).filter((line) => line !== "")
      if (schema.minItems !== undefined && items.length < schema.minItems) {
        return invalid(field, `must have at least ${schema.minItems} items`)
      }
      if (schema.maxItems !== undefined && items.length > schema.maxItems) {
        return invalid(field, `must have at most ${schema.maxItems} items`)
      }
      return { _tag: "Value", value: items }
    }
    case "json":
      try {
        return { _tag: "Value", value: JSON.parse(text) }
      } catch {
        return invalid(field, "must be JSON")
      }
    default:
      return checkText(field, text)
  }
}

/** A request body from a form, or the messages of the fields that cannot be sent (by field name). */
export const bodyOf = (
  form: EndpointForm,
  model: string,
  values: FormValues
):
  | { readonly _tag: "Body"; readonly body: { readonly model: string; readonly input: Record<string, unknown> } }
  | { readonly _tag: "Invalid"; readonly messages: Readonly<Record<string, string>> } =>
{
  const input: Record<string, unknown> = {}
  const messages: Record<string, string> = {}
  for (const field of form.fields) {
    const value = valueOf(field, values[field.name])
    if (value._tag === "Invalid") messages[field.name] = value.message
    else if (value._tag === "Value") input[field.name] = value.value
  }
  return Object.keys(messages).length > 0 ? { _tag: "Invalid", messages } : { _tag: "Body", body: { model, input } }
}

/** A value of an estimate's input as a field shows it (its placeholder: the effective default). */
export const shown = (value: unknown): string =>
  value === undefined ?
    "" :
    typeof value === "string" ?
    value :
    Array.isArray(value) && value.every((v) => typeof v === "string")
    ? value.join("\n")
    : JSON.stringify(value)

/** A placeholder input file for a stand-in (never fetched: an estimate does not read its inputs). */
const standInUrl = "https://example.com/input.png"

/**
 * A value for a required field that the form does not have yet, such that its rules hold, or undefined when none
 * is known (JSON): the form asks the estimate with them for the model's defaults of the other fields.
 */
export const standIn = (field: FormField): string | undefined => {
  const schema = field.schema
  switch (field.kind) {
    case "select":
    case "choice":
      return field.options[0]
    case "number": {
      const step = schema.multipleOf ?? 1
      return String(Math.ceil((schema.minimum ?? step) / step) * step)
    }
    case "boolean":
      return "false"
    case "media":
      return standInUrl
    case "list":
    case "media-list":
      return Array.from({ length: Math.max(1, schema.minItems ?? 1) }, () => standInUrl).join("\n")
    case "json":
      return undefined
    default:
      // a field of a file by its format or name (a URL only, no upload): the placeholder URL
      return schema.format === "uri" || /url|image|video|audio|mask|frame/i.test(field.name)
        ? standInUrl
        : "a".repeat(Math.max(1, schema.minLength ?? 1))
  }
}

/**
 * The body of a form whose required fields are not all filled yet, with stand-ins for them ({@link standIn}): to
 * ask the estimate for the model's defaults of the fields left unset. Undefined when a field has no stand-in or a
 * filled field is refused.
 */
export const probeOf = (
  form: EndpointForm,
  model: string,
  values: FormValues
): { readonly model: string; readonly input: Record<string, unknown> } | undefined => {
  const filled: Record<string, string> = { ...values }
  for (const field of form.fields) {
    if (!field.required || (values[field.name] ?? "").trim() !== "") continue
    const value = standIn(field)
    if (value === undefined) return undefined
    filled[field.name] = value
  }
  const body = bodyOf(form, model, filled)
  return body._tag === "Body" ? body.body : undefined
}
