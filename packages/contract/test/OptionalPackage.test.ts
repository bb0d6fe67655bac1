/**
 * Optional packages: a configured feature whose package is not installed fails with a `MissingPackage` that names
 * the feature, the package and its install line; a package that is installed loads; the importer can be replaced
 * (what the tests of the features use to run them as if the package were missing).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as OptionalPackage from "../src/OptionalPackage.js"

const spec: OptionalPackage.Spec = { feature: "MEDIAGATE_FILE_STORE=s3", name: "@aws-sdk/client-s3", range: "^3" }

/** What Node rejects `import()` with for a package that is not installed. */
const notInstalled = (name: string) =>
  Object.assign(new Error(`Cannot find package '${name}' imported from /app/index.js`), {
    code: "ERR_MODULE_NOT_FOUND"
  })

describe("OptionalPackage", () => {
  it.effect("a package that is not installed: the feature, the package and the install line", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(OptionalPackage.load(spec, () => Promise.reject(notInstalled(spec.name))))
      assert.instanceOf(error, OptionalPackage.MissingPackage)
      assert.strictEqual(error.name, "@aws-sdk/client-s3")
      assert.strictEqual(error.install, "npm install @aws-sdk/client-s3@^3")
      assert.strictEqual(
        error.message,
        "MEDIAGATE_FILE_STORE=s3 needs the package @aws-sdk/client-s3, which is not installed: " +
          "npm install @aws-sdk/client-s3@^3"
      )
    }))

  it.effect("a package that fails to load: its error in the message, with the install line", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(OptionalPackage.load(spec, () => Promise.reject(new SyntaxError("bad build"))))
      assert.strictEqual(
        error.message,
        "MEDIAGATE_FILE_STORE=s3 needs the package @aws-sdk/client-s3, which could not be loaded (bad build): " +
          "npm install @aws-sdk/client-s3@^3"
      )
    }))

  it.effect("an installed package loads; a replaced importer makes it missing", () =>
    Effect.gen(function*() {
      const effectSpec: OptionalPackage.Spec = { feature: "a test", name: "effect", range: "^3" }
      const loaded = yield* OptionalPackage.load(effectSpec, () => import("effect/Duration"))
      assert.strictEqual(typeof loaded.seconds, "function")
      const missing = yield* OptionalPackage.load(effectSpec, () => import("effect/Duration")).pipe(
        Effect.provideService(OptionalPackage.CurrentImporter, (s) => Promise.reject(notInstalled(s.name))),
        Effect.flip
      )
      assert.strictEqual(missing.install, "npm install effect@^3")
    }))
})
