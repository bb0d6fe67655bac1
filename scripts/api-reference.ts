/**
 * Generates docs/api-reference.md from the OpenAPI documents of the contract (`npm run docs:api`). A test keeps
 * the committed file equal to what this renders.
 */
import { Api } from "@mediagate/contract"
import { writeFileSync } from "node:fs"
import { fileURLToPath } from "node:url"

type Operation = {
  readonly summary?: string
  readonly description?: string
  readonly tags?: ReadonlyArray<string>
  readonly requestBody?: { readonly content: Record<string, { readonly schema: { readonly $ref?: string } }> }
  readonly parameters?: ReadonlyArray<{ readonly name: string; readonly in: string; readonly required?: boolean }>
  readonly responses: Record<
    string,
    { readonly description?: string; readonly content?: Record<string, { readonly schema: unknown }> }
  >
}

const refName = (schema: unknown): string | undefined => {
  const ref = schema as { $ref?: string; anyOf?: ReadonlyArray<{ $ref?: string }> } | undefined
  const names = [ref?.$ref, ...(ref?.anyOf ?? []).map((s) => s.$ref)].filter((r): r is string => typeof r === "string")
  return names.length === 0 ? undefined : names.map((r) => r.split("/").pop()).join(", ")
}

type Document = {
  info: { title: string; version: string; description?: string }
  paths: Record<string, Record<string, Operation>>
}

/** The operations of a document, one section each. */
const operations = (spec: Document): Array<string> => {
  const lines: Array<string> = []
  for (const [path, methods] of Object.entries(spec.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      lines.push(`## ${method.toUpperCase()} ${path}`, "")
      if (op.summary !== undefined) lines.push(op.summary, "")
      const params = (op.parameters ?? []).filter((p) => p.in !== "header" || p.name === "idempotency-key")
      if (params.length > 0) {
        lines.push(
          `Parameters: ${
            params.map((p) => `\`${p.name}\` (${p.in}${p.required === true ? ", required" : ""})`).join(", ")
          }`,
          ""
        )
      }
      const body = op.requestBody?.content["application/json"]?.schema
      if (body !== undefined) lines.push(`Body: \`${refName(body) ?? "object"}\``, "")
      const answers = Object.entries(op.responses).map(([status, response]) => {
        const schema = response.content?.["application/json"]?.schema
        return `| ${status} | ${refName(schema) ?? response.description ?? ""} |`
      })
      lines.push("| Status | Answer |", "|---|---|")
      for (const answer of answers) lines.push(answer)
      lines.push("")
    }
  }
  return lines
}

/** Text as lines of at most 120 columns (words kept whole). */
const wrap = (text: string): Array<string> =>
  text.split(" ").reduce<Array<string>>((lines, word) => {
    const last = lines[lines.length - 1]
    if (last !== undefined && last.length + 1 + word.length <= 120) lines[lines.length - 1] = `${last} ${word}`
    else lines.push(word)
    return lines
  }, [])

/** What the `idempotency-key` header of the creating POSTs means. */
const idempotency = "`Idempotency-Key` (header, 1 to 255 characters) is taken by every POST that creates: a " +
  "generation, a retry (`POST /api/v1/tasks/{id}/retry`), an API key, a webhook. The same key with the same request " +
  "within 24 h answers the original response (the same task id, no second charge), also to requests sent at the " +
  "same time; the same key with another request is `409 IDEMPOTENCY_KEY_REUSED`. Without the header every request " +
  "is a new one: each create or retry is a new task and a new charge, however often it is sent, so a client that " +
  "sends again after a lost answer must send the same key. `@mediagate/client` and the dashboard always send one " +
  "(docs/client.md, docs/dashboard.md)."

/** The reference as Markdown: the public API, then the operator API. */
export const render = (): string => {
  const documents = Api.documents(Api.MediagateApi) as unknown as { public: Document; admin: Document }
  const { admin, public: spec } = documents
  return [
    `# ${spec.info.title} ${spec.info.version}: API reference`,
    "",
    "Generated from the OpenAPI documents (`GET /api/v1/openapi.json`, and `GET /admin/v1/openapi.json` for the",
    "operator API) by `npm run docs:api`; do not edit by hand.",
    "Every response is an envelope: `{ success: true, data }` or `{ success: false, error: { code, message } }`.",
    "Interactive documentation of both: `/docs` on a running server.",
    "",
    ...wrap(idempotency),
    "",
    ...operations(spec),
    `# ${admin.info.title} ${admin.info.version}`,
    "",
    ...wrap(admin.info.description ?? ""),
    "",
    ...operations(admin)
  ].join("\n")
}

/** Where the reference is written. */
export const target = fileURLToPath(new URL("../docs/api-reference.md", import.meta.url))

if (import.meta.url === `file://${process.argv[1]}`) {
  writeFileSync(target, render())
  console.log(`wrote ${target}`)
}
