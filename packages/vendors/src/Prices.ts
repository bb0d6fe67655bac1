/**
 * The price table of the registry (its Schema and default prices come from every family's `prices.ts`), the price
 * of a validated request in integer micro-dollars, operator overrides (the price file, `MEDIAGATE_PRICES_FILE`,
 * decisions.md §10) and the `PriceBook` service. The building blocks and the exact arithmetic are in the contract's
 * `Pricing` module; see `docs/prices.md` for the table and the rules.
 *
 * @since 0.1.0
 */
import * as FileSystem from "@effect/platform/FileSystem"
import { type Catalog, Families, type Generation, Pricing } from "@mediagate/contract"
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as AST from "effect/SchemaAST"

/**
 * The whole price table: one entry per model id of the registry.
 *
 * @since 0.1.0
 * @category schemas
 */
export const PriceTable = Schema.Struct(Pricing.fields(Families.registry)).annotations({
  title: "PriceTable",
  description: "Prices in USD by model id (decisions.md §4)"
})

/**
 * The whole price table.
 *
 * @since 0.1.0
 * @category schemas
 */
export type PriceTable = typeof PriceTable.Type

/**
 * `T` with every field at every depth optional (numbers stay numbers).
 *
 * @since 0.1.0
 * @category models
 */
export type DeepPartial<T> = T extends number ? T : { readonly [K in keyof T]?: DeepPartial<T[K]> }

/**
 * An override: any part of the table (some models, some fields of a model, some prices of a field).
 *
 * @since 0.1.0
 * @category schemas
 */
export type PriceOverride = DeepPartial<PriceTable>

/** The same AST with every property at every depth optional (identifiers dropped: it is another Schema). */
const deepPartialAst = (ast: AST.AST): AST.AST => {
  if (!AST.isTypeLiteral(ast)) return ast
  const { [AST.IdentifierAnnotationId]: _identifier, ...annotations } = ast.annotations
  return new AST.TypeLiteral(
    ast.propertySignatures.map((property) =>
      new AST.PropertySignature(
        property.name,
        deepPartialAst(property.type),
        true,
        property.isReadonly,
        property.annotations
      )
    ),
    ast.indexSignatures,
    annotations
  )
}

/**
 * The Schema of a price file: {@link PriceTable} with every field at every depth optional.
 *
 * @since 0.1.0
 * @category schemas
 */
export const PriceOverride: Schema.Schema<PriceOverride> = Schema.make<PriceOverride, PriceOverride, never>(
  deepPartialAst(PriceTable.ast)
).annotations({
  title: "PriceOverride",
  description: "Any part of the price table; what is absent keeps its default"
})

/**
 * The project's default prices (decisions.md §4), in USD: every family's defaults.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultPrices: PriceTable = Pricing.defaults(Families.registry)

// ---------------------------------------------------------------------------------------------------------------------
// Merging
// ---------------------------------------------------------------------------------------------------------------------

const isPriceTable = Schema.is(PriceTable)

const isRecord = (value: unknown): value is Readonly<Record<string, unknown>> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const mergeDeep = (base: unknown, override: unknown): unknown => {
  if (override === undefined) return base
  if (!isRecord(base) || !isRecord(override)) return override
  const merged: Record<string, unknown> = { ...base }
  for (const [key, value] of Object.entries(override)) {
    if (value !== undefined) merged[key] = mergeDeep(base[key], value)
  }
  return merged
}

/**
 * `override` over `base`, merged to the leaves: every number given in the override replaces the same number of the
 * base; objects (models, fields, resolution maps) merge key by key at every depth; anything absent keeps the base.
 *
 * @since 0.1.0
 * @category utils
 */
export const mergePrices = (base: PriceTable, override: PriceOverride): PriceTable => {
  const merged = mergeDeep(base, override)
  if (isPriceTable(merged)) return merged
  throw new Error("unreachable: a price override left the table incomplete")
}

// ---------------------------------------------------------------------------------------------------------------------
// Pricing
// ---------------------------------------------------------------------------------------------------------------------

const priceOfRegistry = Pricing.priceOf(Families.registry)

/**
 * The price charged at accept, in integer micro-dollars, of a validated (normalized) request: the price function of
 * the endpoint's family (`families/<family>/prices.ts`). The input's defaults are expected to be filled in; a model
 * the endpoint does not offer, or a value the table has no price for, throws `Pricing.UnpriceableRequestError` (a
 * defect: validation refuses such requests first).
 *
 * @since 0.1.0
 * @category utils
 */
export const price = (
  endpoint: Catalog.EndpointKey,
  request: Generation.AnyGenerationRequest,
  table: PriceTable = defaultPrices
): number => priceOfRegistry(endpoint, request, table)

// ---------------------------------------------------------------------------------------------------------------------
// The price file
// ---------------------------------------------------------------------------------------------------------------------

/**
 * A price file that cannot be used: missing or unreadable, not JSON, or not a valid (partial) price table.
 *
 * @since 0.1.0
 * @category errors
 */
export class PriceFileError extends Schema.TaggedError<PriceFileError>()("PriceFileError", {
  /** The file. */
  file: Schema.String,
  /** The path inside the JSON of the first offending value (empty for a file-level problem). */
  path: Schema.Array(Schema.String),
  message: Schema.String
}) {}

const formatPath = (path: ReadonlyArray<PropertyKey>): string => path.map((key) => String(key)).join(".")

const fileError = (file: string, problems: ReadonlyArray<Pick<ParseResult.ArrayFormatterIssue, "path" | "message">>) =>
  new PriceFileError({
    file,
    path: (problems[0]?.path ?? []).map((key) => String(key)),
    message: `price file ${file}: ${
      problems.map((problem) =>
        problem.path.length === 0 ? problem.message : `${formatPath(problem.path)}: ${problem.message}`
      ).join("; ")
    }`
  })

const decodeOverride = Schema.decodeUnknown(PriceOverride, { errors: "all", onExcessProperty: "error" })

/**
 * Decodes the JSON text of a price file (`file` names it in errors) and merges it over `base`.
 *
 * @since 0.1.0
 * @category encoding
 */
export const parsePriceFile = (
  file: string,
  text: string,
  base: PriceTable = defaultPrices
): Effect.Effect<PriceTable, PriceFileError> =>
  Effect.try({
    try: (): unknown => JSON.parse(text),
    catch: (error) =>
      fileError(file, [{
        path: [],
        message: `is not valid JSON (${error instanceof Error ? error.message : String(error)})`
      }])
  }).pipe(
    Effect.flatMap((json) =>
      decodeOverride(json).pipe(
        Effect.mapError((error) => fileError(file, ParseResult.ArrayFormatter.formatErrorSync(error)))
      )
    ),
    Effect.map((override) => mergePrices(base, override))
  )

/**
 * Reads a JSON price file and merges it over `base` (the defaults): a missing or unreadable file, bad JSON, an
 * unknown model or field, or an invalid (e.g. negative) price fails with {@link PriceFileError}.
 *
 * @since 0.1.0
 * @category utils
 */
export const loadPriceFile = (
  file: string,
  base: PriceTable = defaultPrices
): Effect.Effect<PriceTable, PriceFileError, FileSystem.FileSystem> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const text = yield* fs.readFileString(file).pipe(
      Effect.mapError((error) =>
        fileError(file, [{
          path: [],
          message: error._tag === "SystemError" && error.reason === "NotFound"
            ? "not found"
            : `cannot be read (${error.message})`
        }])
      )
    )
    return yield* parsePriceFile(file, text, base)
  })

// ---------------------------------------------------------------------------------------------------------------------
// PriceBook
// ---------------------------------------------------------------------------------------------------------------------

/**
 * Name of the setting that points at a price file (decisions.md §10).
 *
 * @since 0.1.0
 * @category config
 */
export const pricesFileVariable = "MEDIAGATE_PRICES_FILE"

/**
 * The setting: the price file, when set (a blank value counts as unset).
 *
 * @since 0.1.0
 * @category config
 */
export const pricesFileConfig: Config.Config<Option.Option<string>> = Config.option(Config.string(pricesFileVariable))
  .pipe(Config.map(Option.filter((file) => file.trim() !== "")))

/**
 * The effective price table of the process.
 *
 * @since 0.1.0
 * @category services
 */
export class PriceBook extends Context.Tag("@mediagate/vendors/PriceBook")<PriceBook, PriceTable>() {
  /** A fixed table: the defaults when none is given, or e.g. `Pricing.defaults(registry)` of another registry. */
  static readonly layer = (table: PriceTable = defaultPrices): Layer.Layer<PriceBook> => Layer.succeed(PriceBook, table)

  /** The defaults, overridden by the file named by `MEDIAGATE_PRICES_FILE` when it is set. */
  static readonly layerConfig: Layer.Layer<
    PriceBook,
    PriceFileError | ConfigError.ConfigError,
    FileSystem.FileSystem
  > = Layer.effect(
    PriceBook,
    Effect.flatMap(
      pricesFileConfig,
      Option.match({ onNone: () => Effect.succeed(defaultPrices), onSome: (file) => loadPriceFile(file) })
    )
  )
}
