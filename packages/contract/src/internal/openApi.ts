/**
 * Post-processing of the OpenAPI document so third-party generators (openapi-typescript 7 + openapi-fetch under
 * `strict`, docs/client.md) read it as the server behaves. The wire format does not change; only its description.
 *
 * - **Query parameters**: `@effect/platform` lists a query Schema's fields as parameters only when the Schema has no
 *   identifier (with one it becomes a `$ref` and no parameter at all is declared). Every endpoint's query Schema is
 *   expanded here into one `in: query` parameter per field, with its rules, description and whether it is required.
 * - **Request bodies**: a request field with a server-side default (e.g. `aspect_ratio` of `vendor3/text-to-video`)
 *   is optional on the wire (the encoded side). JSON Schema's `default` keyword on a shared component makes
 *   generators such as openapi-typescript (`defaultNonNullable`, on by default) type the field as always present, so
 *   a generated client could not send the minimal request. In components used only by request bodies, the default
 *   moves into the field's description (`Default: "16:9".`); response components keep `default`.
 * - **One document per audience** ({@link partOf}): the public API and the operator API are separate documents,
 *   each with only the components and tags its operations use, its own `info` and `servers`, and one bound per
 *   side where refinements of refinements state two (Redocly's recommended rules: `no-unused-components`,
 *   `no-mixed-number-range-constraints`; packages/server/test/OpenApiLint.test.ts).
 *
 * @since 0.1.0
 */
import * as HttpApi from "@effect/platform/HttpApi"
import type * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApiJsonSchema from "@effect/platform/OpenApiJsonSchema"
import * as Schema from "effect/Schema"
import * as AST from "effect/SchemaAST"

type Json = { [key: string]: unknown }

/** The parts of an OpenAPI document read and changed here. */
interface Document {
  readonly paths: Readonly<Record<string, unknown>>
  readonly components: { readonly schemas: Readonly<Record<string, unknown>> }
}

const isObject = (u: unknown): u is Json => typeof u === "object" && u !== null && !Array.isArray(u)

const refPrefix = "#/components/schemas/"

/** Names of the component schemas referenced from `node`, transitively through `components`. */
const reachable = (roots: ReadonlyArray<unknown>, components: Readonly<Record<string, unknown>>): Set<string> => {
  const seen = new Set<string>()
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(walk)
    if (!isObject(node)) return
    const ref = node["$ref"]
    if (typeof ref === "string" && ref.startsWith(refPrefix)) {
      const name = ref.slice(refPrefix.length)
      if (!seen.has(name)) {
        seen.add(name)
        walk(components[name])
      }
    }
    for (const value of Object.values(node)) walk(value)
  }
  roots.forEach(walk)
  return seen
}

/** Moves `default` of every property (at any depth) of a request-only schema into its description. */
const defaultsToDescriptions = (node: unknown): void => {
  if (Array.isArray(node)) return node.forEach(defaultsToDescriptions)
  if (!isObject(node)) return
  const properties = node["properties"]
  if (isObject(properties)) {
    for (const property of Object.values(properties)) {
      if (isObject(property) && "default" in property) {
        const note = `Default: ${JSON.stringify(property["default"])}.`
        const description = property["description"]
        property["description"] = typeof description !== "string" || description.length === 0
          ? note
          : `${description}${description.endsWith(".") ? "" : "."} ${note}`
        delete property["default"]
      }
    }
  }
  for (const value of Object.values(node)) defaultsToDescriptions(value)
}

/**
 * A query value is text on the wire; when its decoded side is a number or a boolean (`limit`), the parameter is
 * declared as that (with its bounds and default), as OpenAPI's query serialization expects.
 */
const scalar = (type: AST.AST, encoded: unknown, defs: Record<string, unknown>): unknown => {
  try {
    const decoded = OpenApiJsonSchema.makeWithDefs(Schema.make(AST.typeAST(type)), {
      defs,
      topLevelReferenceStrategy: "skip"
    }) as unknown as Json
    if (decoded["type"] !== "integer" && decoded["type"] !== "number" && decoded["type"] !== "boolean") return encoded
    const description = isObject(encoded) ? encoded["description"] : undefined
    const { title: _title, ...rest } = decoded
    return typeof description === "string" ? { ...rest, description } : rest
  } catch {
    return encoded
  }
}

const methods = ["get", "put", "post", "delete", "patch", "head", "options", "trace"] as const

/** Declares every query parameter and makes request-body defaults generator-safe (see the module header). */
export const describeForGenerators = <
  Id extends string,
  Groups extends HttpApiGroup.HttpApiGroup.Any,
  E,
  R,
  Spec extends Document
>(
  api: HttpApi.HttpApi<Id, Groups, E, R>,
  spec: Spec
): Spec => {
  const schemas = spec.components.schemas as Record<string, unknown>
  HttpApi.reflect(api, {
    onGroup() {},
    onEndpoint({ endpoint }) {
      if (endpoint.urlParamsSchema._tag === "None") return
      const path = endpoint.path.replace(/:(\w+)\??/g, "{$1}")
      const operation = (spec.paths[path] as Record<string, unknown> | undefined)?.[endpoint.method.toLowerCase()]
      if (!isObject(operation)) return
      const query = OpenApiJsonSchema.makeWithDefs(endpoint.urlParamsSchema.value, {
        defs: schemas,
        topLevelReferenceStrategy: "skip"
      }) as unknown as Json
      const properties = isObject(query["properties"]) ? query["properties"] : {}
      const required = Array.isArray(query["required"]) ? query["required"] : []
      const parameters = (Array.isArray(operation["parameters"]) ? operation["parameters"] : []) as Array<Json>
      const signatures = AST.getPropertySignatures(endpoint.urlParamsSchema.value.ast)
      for (const [name, encoded] of Object.entries(properties)) {
        if (parameters.some((p) => p["in"] === "query" && p["name"] === name)) continue
        const signature = signatures.find((ps) => ps.name === name)
        const schema = signature === undefined ? encoded : scalar(signature.type, encoded, schemas)
        const description = isObject(schema) ? schema["description"] : undefined
        parameters.push({
          name,
          in: "query",
          schema,
          required: required.includes(name),
          ...(typeof description === "string" ? { description } : {})
        })
      }
      operation["parameters"] = parameters
    }
  })
  const requestRoots: Array<unknown> = []
  const otherRoots: Array<unknown> = []
  for (const item of Object.values(spec.paths)) {
    for (const method of methods) {
      const operation = (item as Record<string, unknown>)[method]
      if (!isObject(operation)) continue
      requestRoots.push(operation["requestBody"])
      otherRoots.push(operation["responses"], operation["parameters"])
    }
  }
  const requestOnly = reachable(requestRoots, schemas)
  for (const name of reachable(otherRoots, schemas)) requestOnly.delete(name)
  for (const name of requestOnly) defaultsToDescriptions(schemas[name])
  for (const item of Object.values(spec.paths)) {
    for (const method of methods) {
      const operation = (item as Record<string, unknown>)[method]
      if (isObject(operation)) defaultsToDescriptions(operation["requestBody"])
    }
  }
  return spec
}

/** An OpenAPI document as the documents below read and change it. */
interface Spec {
  info: Json
  servers?: ReadonlyArray<Json>
  paths: Record<string, unknown>
  components: { schemas: Record<string, unknown>; securitySchemes?: Record<string, unknown> } & Json
  security?: ReadonlyArray<Record<string, unknown>>
  tags?: ReadonlyArray<Json>
}

/**
 * Keeps the tighter of two bounds on the same side (`minimum` with `exclusiveMinimum`, `maximum` with
 * `exclusiveMaximum`): a refinement of a refinement (`PositiveUsd` of `Usd`) states both, which means the tighter.
 */
const tightenBounds = (node: unknown): void => {
  if (Array.isArray(node)) return node.forEach(tightenBounds)
  if (!isObject(node)) return
  const { exclusiveMaximum, exclusiveMinimum, maximum, minimum } = node
  if (typeof minimum === "number" && typeof exclusiveMinimum === "number") {
    delete node[exclusiveMinimum >= minimum ? "minimum" : "exclusiveMinimum"]
  }
  if (typeof maximum === "number" && typeof exclusiveMaximum === "number") {
    delete node[exclusiveMaximum <= maximum ? "maximum" : "exclusiveMaximum"]
  }
  for (const value of Object.values(node)) tightenBounds(value)
}

/** What a part of a document holds besides its paths. */
export interface Part {
  /** The `info` of the part's document (title, description); version and license are the whole's. */
  readonly info: { readonly title: string; readonly description: string }
  /** The paths the part holds: those starting with this prefix. */
  readonly prefix: string
  /** The document's server: the base URL the paths are relative to. */
  readonly serverUrl: string
}

/**
 * The part of a whole document (every path under `part.prefix`) as a document of its own: only the component
 * schemas, security schemes and tags its operations use, its own `info` and `servers`, bounds tightened.
 */
export const partOf = <S>(whole: S, part: Part): S => {
  const spec = structuredClone(whole) as unknown as Spec
  const paths = Object.fromEntries(Object.entries(spec.paths).filter(([path]) => path.startsWith(part.prefix)))
  const schemas = spec.components.schemas
  const used = reachable([paths], schemas)
  const operations = Object.values(paths).flatMap((item) =>
    methods.map((method) => (item as Record<string, unknown>)[method]).filter(isObject)
  )
  const tags = new Set(operations.flatMap((operation) => (operation["tags"] ?? []) as Array<string>))
  const schemes = new Set(
    operations.flatMap((operation) =>
      ((operation["security"] ?? []) as Array<Record<string, unknown>>).flatMap((requirement) =>
        Object.keys(requirement)
      )
    )
  )
  const { securitySchemes, ...components } = spec.components
  const document: Spec = {
    ...spec,
    info: { ...spec.info, ...part.info },
    servers: [{ url: part.serverUrl }],
    paths,
    components: {
      ...components,
      schemas: Object.fromEntries(Object.entries(schemas).filter(([name]) => used.has(name))),
      ...(securitySchemes === undefined ? {} : {
        securitySchemes: Object.fromEntries(Object.entries(securitySchemes).filter(([name]) => schemes.has(name)))
      })
    },
    tags: (spec.tags ?? []).filter((tag) => tags.has(tag["name"] as string))
  }
  tightenBounds(document.paths)
  tightenBounds(document.components.schemas)
  return document as unknown as S
}
