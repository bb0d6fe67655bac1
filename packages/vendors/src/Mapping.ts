/**
 * Per-channel model mapping (docs/channels.md, "Model mapping"): how one of our models maps onto a channel's upstream.
 *
 * - `settings.mapping` is keyed by our model id; an entry is `{ target, input?, output? }`. A served model without
 *   an entry uses our model id as its target.
 * - `input` and `output` are **JSONata** expressions (jsonata-js 2, the reference implementation, kept by its
 *   authors since 2016): JSON in, JSON out, with paths, filters, object construction and functions, and no access
 *   to anything but the document and the bindings given. `input` is evaluated over our request `{ model, input,
 *   metadata }` (the normalized input: `input.prompt`) with the bindings `$model`, `$target`, `$task_id` and
 *   `$metadata`; `output` over the upstream's output JSON.
 * - Without `input` our `input` goes to the upstream unchanged. Without `output` every file URL found in the output
 *   is a result ({@link findFiles}).
 * - Expressions are compiled when a channel is saved ({@link problem}: the admin API answers `400
 *   VALIDATION_ERROR` naming the model and the expression) and once per channel version in the router. An evaluation
 *   is limited to 1 s and a bounded stack (JSONata's own `timeout` and `stack` options): a mapping can be wrong, but
 *   it cannot hang a worker.
 * - JSONata is an optional peer dependency ({@link jsonataPackage}), loaded on the first compile (most deployments
 *   map nothing). Without it a mapping does not compile: saving one answers `400` with the install line, and a
 *   stored one fails its tasks with that message (never a mapping silently left out).
 *
 * @since 0.1.0
 */
import { OptionalPackage } from "@mediagate/contract"
import { UpstreamError } from "@mediagate/engine/Upstream"
import * as Effect from "effect/Effect"
import type * as Jsonata from "jsonata"
import { createRequire } from "node:module"
import type { ModelMapping } from "./ChannelStore.js"

/**
 * JSONata: an optional peer dependency of `@mediagate/vendors`, needed by model mappings only.
 *
 * @since 0.1.0
 * @category constants
 */
export const jsonataPackage: OptionalPackage.Spec = {
  feature: "A model mapping (settings.mapping)",
  name: "jsonata",
  range: "^2"
}

/**
 * How JSONata is loaded (CommonJS: `require` loads it synchronously, as compiling needs); tests replace it.
 *
 * @since 0.1.0
 * @category constants
 */
export const loader = { require: (): unknown => createRequire(import.meta.url)("jsonata") }

/** The module `loader.require` answered, kept with that function: replacing the loader loads again. */
let loaded: { readonly require: () => unknown; readonly module: typeof Jsonata.default } | undefined
/** JSONata, loaded on first use; a `MissingPackage` (thrown) when it is not installed. */
const loadJsonata = (): typeof Jsonata.default => {
  const require = loader.require
  if (loaded?.require === require) return loaded.module
  try {
    const module = require() as typeof Jsonata.default
    loaded = { require, module }
    return module
  } catch (cause) {
    throw OptionalPackage.missing(jsonataPackage, cause)
  }
}

/**
 * A compiled expression.
 *
 * @since 0.1.0
 * @category models
 */
export interface Expression {
  readonly evaluate: (input: unknown, bindings?: Record<string, unknown>) => Promise<unknown>
}

/**
 * A file the upstream produced, before it is copied into our store.
 *
 * @since 0.1.0
 * @category models
 */
export interface ResultSource {
  /** `http(s)` URL, or a `data:` URI. */
  readonly url: string
  /** Container or image format (`mp4`, `png`, ...), when the upstream says. */
  readonly format?: string
  /** The content type the upstream gave, if any. */
  readonly contentType?: string
  readonly kind?: "output" | "last_frame"
  /** Seconds (videos and audio). */
  readonly duration?: number
  readonly sizeBytes?: number
  readonly width?: number
  readonly height?: number
  /** Headers to send with the download (only ever to the channel's own hosts: the upstream's API key). */
  readonly headers?: Readonly<Record<string, string>>
}

/**
 * A model's mapping, compiled.
 *
 * @since 0.1.0
 * @category models
 */
export interface Compiled {
  readonly target: string
  readonly input: Expression | undefined
  readonly output: Expression | undefined
}

/** How long one evaluation may take, ms, and how deep it may recurse. */
const limits = { timeout: 1000, stack: 500 }

const compileOne = (text: string): Expression => loadJsonata()(text, limits)

/** Why an expression does not compile, or `undefined`. */
const compileProblem = (text: string): string | undefined => {
  try {
    compileOne(text)
    return undefined
  } catch (error) {
    return messageOf(error)
  }
}

const messageOf = (error: unknown): string => {
  if (typeof error === "object" && error !== null) {
    const { message, position, token } = error as { message?: unknown; position?: unknown; token?: unknown }
    const where = typeof position === "number" ? ` at position ${position}` : ""
    const near = typeof token === "string" && token !== "" ? ` (near "${token}")` : ""
    if (typeof message === "string") return `${message}${where}${near}`
  }
  return String(error)
}

/**
 * The first problem of a channel's mapping, as `settings.mapping.<model>.<input|output>: ...`, or `undefined`.
 * `models`: the models the channel serves (an entry for another model is refused).
 *
 * @since 0.1.0
 * @category utils
 */
export const problem = (
  mapping: Readonly<Record<string, ModelMapping>> | undefined,
  served: (model: string) => boolean
): string | undefined => {
  for (const [model, entry] of Object.entries(mapping ?? {})) {
    if (!served(model)) return `settings.mapping.${model}: the channel does not serve model ${model}`
    for (const part of ["input", "output"] as const) {
      const text = entry[part]
      if (text === undefined) continue
      const broken = compileProblem(text)
      if (broken !== undefined) {
        return `settings.mapping.${model}.${part}: the ${part} mapping of model ${model} does not compile: ${broken}`
      }
    }
  }
  return undefined
}

/**
 * The compiled mapping of a channel: a function from our model id to its target and expressions (compiled once per
 * model; the channel's mapping was checked when it was saved, so a failure here is a channel that changed under us,
 * or JSONata not installed: the expression fails each evaluation with the compile error).
 *
 * @since 0.1.0
 * @category utils
 */
export const compile = (mapping: Readonly<Record<string, ModelMapping>> | undefined): (model: string) => Compiled => {
  const cache = new Map<string, Compiled>()
  const tryCompile = (text: string | undefined) => {
    if (text === undefined) return undefined
    try {
      return compileOne(text)
    } catch (error) {
      return { evaluate: () => Promise.reject(error) }
    }
  }
  return (model) => {
    const known = cache.get(model)
    if (known !== undefined) return known
    const entry = mapping?.[model]
    const compiled: Compiled = {
      target: entry?.target ?? model,
      input: tryCompile(entry?.input),
      output: tryCompile(entry?.output)
    }
    cache.set(model, compiled)
    return compiled
  }
}

const refused = (message: string) => new UpstreamError({ message, retryable: false, kind: "refused" })

/**
 * What an input mapping is evaluated with.
 *
 * @since 0.1.0
 * @category models
 */
export interface InputContext {
  readonly model: string
  readonly input: Readonly<Record<string, unknown>>
  readonly taskId: string
  readonly metadata: Readonly<Record<string, unknown>>
}

/**
 * Our input as the upstream takes it: the `input` expression's value, or the input itself.
 *
 * @since 0.1.0
 * @category utils
 */
export const mapInput = (compiled: Compiled, context: InputContext): Effect.Effect<unknown, UpstreamError> =>
  compiled.input === undefined
    ? Effect.succeed(context.input)
    : Effect.tryPromise({
      try: () =>
        compiled.input!.evaluate({ model: context.model, input: context.input, metadata: context.metadata }, {
          model: context.model,
          target: compiled.target,
          task_id: context.taskId,
          metadata: context.metadata
        }),
      catch: (error) => refused(`the input mapping of model ${context.model} failed: ${messageOf(error)}`)
    }).pipe(Effect.map(plain))

/**
 * The result files of an upstream output: the `output` expression's items, or every file URL found in it.
 *
 * @since 0.1.0
 * @category utils
 */
export const mapOutput = (
  compiled: Compiled,
  model: string,
  output: unknown
): Effect.Effect<ReadonlyArray<ResultSource>, UpstreamError> =>
  compiled.output === undefined
    ? Effect.succeed(findFiles(output))
    : Effect.tryPromise({
      try: () => compiled.output!.evaluate(output),
      catch: (error) => refused(`the output mapping of model ${model} failed: ${messageOf(error)}`)
    }).pipe(Effect.flatMap((value) => {
      const items = sourcesOf(plain(value))
      return items === undefined
        ? Effect.fail(refused(
          `the output mapping of model ${model} must give a URL, an object with a url, or an array of them`
        ))
        : Effect.succeed(items)
    }))

/** JSONata answers arrays with extra properties (sequences): a plain JSON copy of a value. */
const plain = (value: unknown): unknown => value === undefined ? undefined : JSON.parse(JSON.stringify(value))

const isFileUrl = (value: unknown): value is string =>
  typeof value === "string" && (/^https?:\/\/[^\s]+$/i.test(value) || /^data:[a-z]+\/[a-z0-9.+-]+;base64,/i.test(value))

const numberOf = (value: unknown): number | undefined =>
  typeof value === "number" && Number.isFinite(value) && value >= 0 ? value : undefined

const stringOf = (value: unknown): string | undefined => typeof value === "string" && value !== "" ? value : undefined

/** A result source from an object describing a file (`url` plus what it says of the file), if it has a URL. */
const sourceOfObject = (record: Readonly<Record<string, unknown>>): ResultSource | undefined => {
  const url = record["url"]
  if (!isFileUrl(url)) return undefined
  const kind = record["kind"] === "last_frame" ? "last_frame" : record["kind"] === "output" ? "output" : undefined
  const format = stringOf(record["format"])
  const contentType = stringOf(record["content_type"]) ?? stringOf(record["contentType"]) ??
    stringOf(record["mime_type"])
  const duration = numberOf(record["duration"])
  const sizeBytes = numberOf(record["size_bytes"]) ?? numberOf(record["file_size"])
  const width = numberOf(record["width"])
  const height = numberOf(record["height"])
  return {
    url,
    ...(format === undefined ? {} : { format }),
    ...(contentType === undefined ? {} : { contentType }),
    ...(kind === undefined ? {} : { kind }),
    ...(duration === undefined ? {} : { duration }),
    ...(sizeBytes === undefined ? {} : { sizeBytes }),
    ...(width === undefined ? {} : { width }),
    ...(height === undefined ? {} : { height })
  }
}

/** The items an output expression gave: a URL, an object with a `url`, or an array of them; undefined otherwise. */
const sourcesOf = (value: unknown): ReadonlyArray<ResultSource> | undefined => {
  const one = (item: unknown): ResultSource | undefined =>
    isFileUrl(item)
      ? { url: item }
      : typeof item === "object" && item !== null && !Array.isArray(item)
      ? sourceOfObject(item as Record<string, unknown>)
      : undefined
  const list = Array.isArray(value) ? value : [value]
  const items = list.map(one)
  return items.length === 0 || items.some((item) => item === undefined) ? undefined : items as Array<ResultSource>
}

/**
 * Every file URL in an upstream's output, in document order, each once: an object with a `url` (fal's `images[]`
 * and `video`, OpenAI's `data[]`) with what it says of the file (content type, size, width, height, duration); any
 * other string that is an http(s) URL or a base64 `data:` URI (Replicate's `output` string or array). At most 100.
 *
 * @since 0.1.0
 * @category utils
 */
export const findFiles = (output: unknown): ReadonlyArray<ResultSource> => {
  const found: Array<ResultSource> = []
  const seen = new Set<string>()
  const add = (source: ResultSource) => {
    if (seen.has(source.url) || found.length >= 100) return
    seen.add(source.url)
    found.push(source)
  }
  const walk = (value: unknown, depth: number): void => {
    if (depth > 32) return
    if (isFileUrl(value)) return add({ url: value })
    if (Array.isArray(value)) {
      for (const item of value) walk(item, depth + 1)
      return
    }
    if (typeof value !== "object" || value === null) return
    const record = value as Record<string, unknown>
    const described = sourceOfObject(record)
    if (described !== undefined) return add(described)
    for (const [key, item] of Object.entries(record)) {
      // input echoes (a prompt's image URLs) are not outputs
      if (key === "input" || key === "prompt") continue
      walk(item, depth + 1)
    }
  }
  walk(output, 0)
  return found
}
