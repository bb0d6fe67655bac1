// `npm run docs:missing [-- [--list] [package ...]]`: the exports that `npm run docs` (docgen, `enforceVersion`)
// will refuse, and the top-level exports without a `@category`, for every publishable package.
//
// docgen stops at the first kind of declaration that fails in a file, so its own errors list only part of what is
// missing; this walks every module the way docgen does (the package's docgen.json `exclude` applied) and counts
// everything at once. Rules, as docgen 0.5 applies them with `enforceVersion`:
//   - the module: its first statement's leading comment has `@since`;
//   - exported interfaces, type aliases, functions, classes, constants and namespaces (and the interfaces and type
//     aliases inside exported namespaces): their JSDoc has `@since`;
//   - a class's methods and its non-static, non-private properties: their JSDoc has `@since`;
//   - `export { a, b } from`, `export { a }`: a doc comment with `@since` before each name; `export * (as X) from`:
//     a doc comment with `@since` before the statement.
// A declaration whose JSDoc says `@internal` or `@ignore` is left out, as docgen does. `@category` is not required
// by docgen; it is counted on the top-level declarations (what the docs pages group by).
import { readdirSync, readFileSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import ts from "typescript"

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..")
const args = process.argv.slice(2)
const list = args.includes("--list")
const wanted = args.filter((arg) => !arg.startsWith("--"))

const publishable = readdirSync(join(root, "packages"), { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => entry.name)
  .filter((name) => JSON.parse(readFileSync(join(root, "packages", name, "package.json"), "utf8")).private !== true)
  .sort()

// docgen.json `exclude` patterns (`*` within a name, `**/` any folders) as a regular expression over `/` paths
const globRegExp = (pattern) =>
  new RegExp(
    `^${
      pattern.split(/(\*\*\/|\*)/).map((part) =>
        part === "**/" ? "(?:.*/)?" : part === "*" ? "[^/]*" : part.replace(/[.+?^${}()|[\]\\]/g, "\\$&")
      ).join("")
    }$`
  )
const sources = (dir, base) =>
  readdirSync(join(dir, base), { withFileTypes: true }).flatMap((entry) => {
    const path = `${base}/${entry.name}`
    return entry.isDirectory() ? sources(dir, path) : entry.name.endsWith(".ts") ? [path] : []
  })

const docComments = (text, pos) =>
  (ts.getLeadingCommentRanges(text, pos) ?? [])
    .map((range) => text.slice(range.pos, range.end))
    .filter((comment) => comment.startsWith("/**"))
const has = (comment, tag) => comment !== undefined && new RegExp(`@${tag}\\s+\\S`).test(comment)
const skipped = (comment) => comment !== undefined && /@(internal|ignore)\b/.test(comment)
const exported = (node) => (ts.getCombinedModifierFlags(node) & ts.ModifierFlags.Export) !== 0
const nameOf = (node) => node.name?.getText() ?? "default"

const totals = { files: 0, module: 0, since: 0, category: 0, reexport: 0 }
const rows = []
for (const name of wanted.length > 0 ? wanted : publishable) {
  const packageDir = join(root, "packages", name)
  const config = JSON.parse(readFileSync(join(packageDir, "docgen.json"), "utf8"))
  const srcDir = config.srcDir ?? "src"
  const excluded = (config.exclude ?? []).map(globRegExp)
  const files = sources(packageDir, srcDir).filter((path) => !excluded.some((re) => re.test(path))).sort()
  const counts = { files: files.length, module: 0, since: 0, category: 0, reexport: 0 }
  const missing = []
  for (const file of files) {
    const text = readFileSync(join(packageDir, file), "utf8")
    const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true)
    const where = (node) => `${relative(root, join(packageDir, file))}#${node}`
    const first = source.statements[0]
    if (first === undefined || !has(docComments(text, first.getFullStart()).at(0), "since")) {
      counts.module++
      missing.push(`${where("<module>")}: @since`)
    }
    const declaration = (node, label, topLevel) => {
      const doc = docComments(text, node.getFullStart()).at(-1)
      if (skipped(doc)) return false
      if (!has(doc, "since")) {
        counts.since++
        missing.push(`${where(label)}: @since${doc === undefined ? " (no doc comment)" : ""}`)
      }
      if (topLevel && !has(doc, "category")) {
        counts.category++
        if (list) missing.push(`${where(label)}: @category`)
      }
      return true
    }
    const seenFunctions = new Set()
    const visit = (statement, prefix) => {
      if (ts.isExportDeclaration(statement)) {
        if (statement.exportClause === undefined || ts.isNamespaceExport(statement.exportClause)) {
          const doc = docComments(text, statement.getFullStart()).at(0)
          if (!has(doc, "since")) {
            counts.reexport++
            missing.push(`${where(statement.getText().replace(/\s+/g, " "))}: @since`)
          }
        } else {
          for (const element of statement.exportClause.elements) {
            const doc = docComments(text, element.getFullStart()).at(0)
            if (!has(doc, "since")) {
              counts.reexport++
              missing.push(`${where(element.name.text)} (re-export): @since`)
            }
          }
        }
        return
      }
      if (!exported(statement)) return
      if (ts.isVariableStatement(statement)) {
        for (const variable of statement.declarationList.declarations) {
          const doc = docComments(text, statement.getFullStart()).at(-1)
          if (skipped(doc)) continue
          if (!has(doc, "since")) {
            counts.since++
            missing.push(`${where(prefix + variable.name.getText())}: @since`)
          }
          if (!has(doc, "category")) {
            counts.category++
            if (list) missing.push(`${where(prefix + variable.name.getText())}: @category`)
          }
        }
      } else if (ts.isFunctionDeclaration(statement)) {
        const fn = nameOf(statement)
        if (seenFunctions.has(fn)) return // overloads: docgen reads the first signature's JSDoc
        seenFunctions.add(fn)
        declaration(statement, prefix + fn, true)
      } else if (ts.isInterfaceDeclaration(statement) || ts.isTypeAliasDeclaration(statement)) {
        declaration(statement, prefix + nameOf(statement), prefix === "")
      } else if (ts.isClassDeclaration(statement)) {
        if (!declaration(statement, prefix + nameOf(statement), true)) return
        for (const member of statement.members) {
          const memberName = `${nameOf(statement)}.${member.name?.getText() ?? "constructor"}`
          const isPrivate = (ts.getCombinedModifierFlags(member) & ts.ModifierFlags.Private) !== 0
          const isStatic = (ts.getCombinedModifierFlags(member) & ts.ModifierFlags.Static) !== 0
          if (ts.isMethodDeclaration(member) || (ts.isPropertyDeclaration(member) && !isStatic && !isPrivate)) {
            declaration(member, memberName, false)
          }
        }
      } else if (ts.isModuleDeclaration(statement) && statement.body && ts.isModuleBlock(statement.body)) {
        if (!declaration(statement, prefix + nameOf(statement), true)) return
        for (const inner of statement.body.statements) {
          if (ts.isInterfaceDeclaration(inner) || ts.isTypeAliasDeclaration(inner) || ts.isModuleDeclaration(inner)) {
            visit(inner, `${prefix}${nameOf(statement)}.`)
          }
        }
      }
    }
    for (const statement of source.statements) visit(statement, "")
  }
  rows.push([name, counts])
  for (const key of Object.keys(totals)) totals[key] += counts[key]
  if (list) { for (const line of missing) console.log(line) }
}

const header = ["package", "modules", "module @since", "export @since", "re-export @since", "@category"]
const table = [
  header,
  ...rows.map(([name, c]) => [name, c.files, c.module, c.since, c.reexport, c.category]),
  ["total", totals.files, totals.module, totals.since, totals.reexport, totals.category]
]
const widths = header.map((_, i) => Math.max(...table.map((row) => String(row[i]).length)))
for (const row of table) console.log(row.map((cell, i) => String(cell).padStart(widths[i])).join("  "))
