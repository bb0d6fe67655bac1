/**
 * Generates docs/api-reference.md from the OpenAPI document of the contract (`npm run docs:api`). A test keeps
 * the committed file equal to what this renders.
 */
import * as OpenApi from "@effect/platform/OpenApi"
import { Api } from "@mediagate/contract"
import { writeFileSync } from "node:fs"
import { fileURLToPath } from "node:url"

type Operation = {
  readonly summary?: string
  readonly description?: string
  readonly tags?: ReadonlyArray<string>
  readonly requestBody?: { readonly content: Record<string, { readonly schema: { readonly $ref?: string } }> }
  readonly parameters?: ReadonlyArray<{ readonly name: string; readonly in: string; readonly required?: boolean }>
  readonly responses: Record<string, { readonly description?: string; readonly content?: Record<string, { readonly schema: unknown }> }>
}

const refName = (schema: unknown): string | undefined => {
  const ref = (schema as { $ref?: string; anyOf?: ReadonlyArray<{ $ref?: string }> } | undefined)
  const names = [ref?.$ref, ...(ref?.anyOf ?? []).map((s) => s.$ref)].filter((r): r is string => typeof r === "string")
  return names.length === 0 ? undefined : names.map((r) => r.split("/").pop()).join(", ")
}

/** The reference as Markdown. */
export const render = (): string => {
  const spec = OpenApi.fromApi(Api.MediagateApi) as unknown as {
    info: { title: string; version: string; description?: string }
    paths: Record<string, Record<string, Operation>>
  }
  const lines: Array<string> = [
    `# ${spec.info.title} ${spec.info.version}: API reference`,
    "",
    "Generated from the OpenAPI document (`GET /api/v1/openapi.json`) by `npm run docs:api`; do not edit by hand.",
    "Every response is an envelope: `{ success: true, data }` or `{ success: false, error: { code, message } }`.",
    "Interactive documentation: `/docs` on a running server.",
    ""
  ]
  for (const [path, methods] of Object.entries(spec.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      lines.push(`## ${method.toUpperCase()} ${path}`, "")
      if (op.summary !== undefined) lines.push(op.summary, "")
      const params = (op.parameters ?? []).filter((p) => p.in !== "header" || p.name === "idempotency-key")
      if (params.length > 0) {
        lines.push(`Parameters: ${params.map((p) => `\`${p.name}\` (${p.in}${p.required === true ? ", required" : ""})`).join(", ")}`, "")
      }
      const body = op.requestBody?.content["application/json"]?.schema
      if (body !== undefined) lines.push(`Body: \`${refName(body) ?? "object"}\``, "")
      const answers = Object.entries(op.responses).map(([status, response]) => {
        const schema = response.content?.["application/json"]?.schema
        return `| ${status} | ${refName(schema) ?? response.description ?? ""} |`
      })
      lines.push("| Status | Answer |", "|---|---|", ...answers, "")
    }
  }
  return lines.join("\n")
}

/** Where the reference is written. */
export const target = fileURLToPath(new URL("../docs/api-reference.md", import.meta.url))

if (import.meta.url === `file://${process.argv[1]}`) {
  writeFileSync(target, render())
  console.log(`wrote ${target}`)
}
