/**
 * The engine's `ResultLinks` port over the {@link UrlSigner}: result URLs are signed anew on every task read (other
 * URLs are left as they are).
 *
 * @since 0.1.0
 */
import { Tracing } from "@mediagate/contract"
import { ResultLinks } from "@mediagate/engine/ResultLinks"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { UrlSigner } from "./UrlSigner.js"

/**
 * Every result URL that points at our `/files/` route is signed again for the signer's default lifetime.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<ResultLinks, never, UrlSigner> = Layer.effect(
  ResultLinks,
  Effect.map(UrlSigner, (signer) => ({
    refresh: (items) =>
      Effect.forEach(items, (item) => {
        const url = URL.canParse(item.url) ? new URL(item.url) : undefined
        if (url === undefined || !url.pathname.startsWith("/files/") || !url.searchParams.has("signature")) {
          return Effect.succeed(item)
        }
        return Effect.map(signer.sign(decodeURIComponent(url.pathname.slice("/files/".length))), (fresh) => ({
          ...item,
          url: fresh
        }))
      }).pipe(Tracing.span("ResultLinks.refresh"))
  }))
)
