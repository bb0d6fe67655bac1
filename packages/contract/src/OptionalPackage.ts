/**
 * Integrations that are off by default (OTLP trace export, the S3 file store) live in packages Mediagate does not
 * install: they are optional peer dependencies, imported only when the setting that turns them on is given. A
 * missing one is a {@link MissingPackage} naming the setting, the package and the line that installs it, never a
 * crash at import time (docs/configuration.md lists them).
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"

/**
 * An optional package of a feature: its name and the version range Mediagate works with.
 *
 * @since 0.1.0
 * @category models
 */
export interface Spec {
  /** What turns the feature on, for the message (`MEDIAGATE_FILE_STORE=s3`). */
  readonly feature: string
  /** The package (`@aws-sdk/client-s3`). */
  readonly name: string
  /** The range to install (`^3`). */
  readonly range: string
}

/**
 * The command that installs the package of `spec`.
 *
 * @since 0.1.0
 * @category utils
 */
export const installLine = (spec: Spec): string => `npm install ${spec.name}@${spec.range}`

/**
 * A feature is configured but its optional package cannot be loaded (installing it is the fix).
 *
 * @since 0.1.0
 * @category errors
 */
export class MissingPackage extends Schema.TaggedError<MissingPackage>()("MissingPackage", {
  name: Schema.String,
  install: Schema.String,
  message: Schema.String,
  cause: Schema.optional(Schema.Defect)
}) {}

const notFound = (cause: unknown) =>
  typeof cause === "object" && cause !== null && "code" in cause &&
  (cause.code === "ERR_MODULE_NOT_FOUND" || cause.code === "MODULE_NOT_FOUND")

/**
 * The {@link MissingPackage} of `spec` for the error its import (or `require`) failed with.
 *
 * @since 0.1.0
 * @category utils
 */
export const missing = (spec: Spec, cause: unknown): MissingPackage => {
  const install = installLine(spec)
  const reason = notFound(cause)
    ? "is not installed"
    : `could not be loaded (${cause instanceof Error ? cause.message : String(cause)})`
  return new MissingPackage({
    name: spec.name,
    install,
    message: `${spec.feature} needs the package ${spec.name}, which ${reason}: ${install}`,
    cause
  })
}

/**
 * How {@link load} imports a package: given its spec and its `import()`.
 *
 * @since 0.1.0
 * @category models
 */
export type Importer = (spec: Spec, load: () => Promise<unknown>) => Promise<unknown>

/**
 * The importer in use: by default the package's own `import()`. A test replaces it (`Effect.provideService`,
 * `Layer.succeed`) to run a configured feature as if its package were not installed.
 *
 * @since 0.1.0
 * @category services
 */
export class CurrentImporter extends Context.Reference<CurrentImporter>()(
  "@mediagate/contract/OptionalPackage/CurrentImporter",
  { defaultValue: (): Importer => (_spec, load) => load() }
) {}

/**
 * Imports the optional package of `spec` with `load` (a literal `import("...")`, so bundlers and the type checker
 * see it) through the {@link CurrentImporter}; fails with a {@link MissingPackage} when it is not installed or does
 * not load.
 *
 * @since 0.1.0
 * @category utils
 */
export const load = <A>(spec: Spec, load: () => Promise<A>): Effect.Effect<A, MissingPackage> =>
  Effect.flatMap(CurrentImporter, (importer) =>
    Effect.tryPromise({
      try: () => importer(spec, load) as Promise<A>,
      catch: (cause) => missing(spec, cause)
    }))
