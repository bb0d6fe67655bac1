// `npm run lint:staged [-- --changed] [-- --fix]`: `npm run lint` on the files a commit is about to take, for a
// pre-commit hook (`.git/hooks/pre-commit`: `exec npm run -s lint:staged`), in a few seconds instead of the tree.
//
//   (default)   the staged files (added, copied, modified, renamed): ESLint on code, dprint on JSON and Markdown
//   --changed   every file that differs from HEAD, staged or not, and untracked files
//   --fix       apply the fixes (ESLint's and dprint's formatting) instead of only reporting; re-stage afterwards
//
// It reads the files in the work tree, not the staged copies: stage what you checked. Files that eslint.config.mjs
// or dprint.json leave out are skipped. Exits non-zero when a check fails.
import { spawnSync } from "node:child_process"
import { existsSync } from "node:fs"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..")
const args = process.argv.slice(2)
const fix = args.includes("--fix")

const git = (...gitArgs) => {
  const run = spawnSync("git", gitArgs, { cwd: root, encoding: "utf8" })
  if (run.status !== 0) throw new Error(`git ${gitArgs.join(" ")}: ${run.stderr}`)
  return run.stdout.split("\n").filter((line) => line.length > 0)
}

const files = args.includes("--changed")
  ? [
    ...git("diff", "HEAD", "--name-only", "--diff-filter=ACMR"),
    ...git("ls-files", "--others", "--exclude-standard")
  ]
  : git("diff", "--cached", "--name-only", "--diff-filter=ACMR")
const present = [...new Set(files)].filter((file) => existsSync(join(root, file)))
const code = present.filter((file) => /\.(ts|tsx|mts|cts|js|mjs|cjs)$/.test(file))
const data = present.filter((file) => /\.(json|md)$/.test(file))

const bin = join(root, "node_modules", ".bin")
const run = (command, commandArgs) =>
  spawnSync(join(bin, command), commandArgs, { cwd: root, stdio: "inherit" }).status === 0

let ok = true
if (code.length > 0) ok = run("eslint", ["--no-warn-ignored", ...(fix ? ["--fix"] : []), ...code]) && ok
if (data.length > 0) ok = run("dprint", [fix ? "fmt" : "check", "--allow-no-files", ...data]) && ok
console.log(`lint:staged: ${code.length} code file(s), ${data.length} JSON/Markdown file(s): ${ok ? "ok" : "failed"}`)
if (!ok && !fix) console.log("lint:staged: `npm run lint:staged -- --fix` (or `npm run lint:fix`) applies the fixes")
process.exit(ok ? 0 : 1)
