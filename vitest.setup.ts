/**
 * Runs before every test file of the shared pool (`vitest.shared.ts`). `@effect/vitest`'s `layer` assigns its
 * runtime's `effect`, `scoped`, `prop`, `flakyTest` and `layer` onto vitest's own `it` object, which every file of
 * a worker shares when files are not isolated: a file's top-level `it.effect` would run in the layer of the file
 * before it (its scope closed, its `TestClock` already moved). The methods as the package first defined them are
 * kept once per worker and put back before each file.
 */
import { it } from "@effect/vitest"

const key = Symbol.for("@mediagate/vitest/it")
const store = globalThis as { [key]?: Partial<typeof it> }
const pristine = store[key] ??= {
  effect: it.effect,
  scoped: it.scoped,
  prop: it.prop,
  flakyTest: it.flakyTest,
  layer: it.layer
}
Object.assign(it, pristine)
