/**
 * Measures the JavaScript client (`@mediagate/client`) as a browser app ships it: bundled from its entry point and
 * minified with esbuild, then gzipped (`npm run client:size`; the figure is in docs/client.md, and a test keeps it
 * under {@link budget}).
 */
import { build } from "esbuild"
import { fileURLToPath } from "node:url"
import { gzipSync } from "node:zlib"

/** The size a change must not push the gzipped bundle past (bytes). */
export const budget = 6 * 1024

/** The minified and the minified+gzipped size of the whole client, in bytes. */
export const measure = async (): Promise<{ readonly minified: number; readonly gzipped: number }> => {
  const result = await build({
    entryPoints: [fileURLToPath(new URL("../packages/client/src/index.ts", import.meta.url))],
    bundle: true,
    minify: true,
    format: "esm",
    platform: "neutral",
    target: "es2022",
    write: false
  })
  const code = result.outputFiles[0]!.contents
  return { minified: code.byteLength, gzipped: gzipSync(code, { level: 9 }).byteLength }
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const { gzipped, minified } = await measure()
  console.log(
    `@mediagate/client: ${(minified / 1024).toFixed(1)} KiB minified, ${
      (gzipped / 1024).toFixed(1)
    } KiB minified+gzipped`
  )
}
