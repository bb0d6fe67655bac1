/**
 * A task's result file previewed in place by its kind (image, playable video, audio) with a download link: the task
 * page's and the playground's.
 */
import { bytes } from "../format.js"

const imageFormats = new Set(["png", "jpg", "jpeg", "webp", "gif", "avif"])
const videoFormats = new Set(["mp4", "webm", "mov", "m4v"])
const audioFormats = new Set(["mp3", "wav", "ogg", "m4a", "aac", "flac", "opus"])

/** What a preview shows of a result file (the task read's result item, of either client). */
export interface PreviewItem {
  readonly url: string
  readonly format: string
  readonly size_bytes: number
  readonly kind?: string | undefined
  readonly width?: number | undefined
  readonly height?: number | undefined
  readonly duration?: number | undefined
}

/** One result file, previewed by its kind, with a download link. */
export const Preview = (props: { readonly item: PreviewItem; readonly type: string; readonly index: number }) => {
  const { item } = props
  const format = item.format.toLowerCase()
  const label = `Result ${props.index + 1}${item.kind === "last_frame" ? " (last frame)" : ""}`
  const media = imageFormats.has(format) || (props.type === "image" && !videoFormats.has(format))
    ? <img src={item.url} alt={label} loading="lazy" />
    : videoFormats.has(format) || props.type === "video"
    ? <video src={item.url} controls preload="metadata" aria-label={label} />
    : audioFormats.has(format) || props.type === "audio" || props.type === "music"
    ? <audio src={item.url} controls preload="metadata" aria-label={label} />
    : null
  return (
    <figure class="preview" data-format={format}>
      {media}
      <figcaption>
        {label}: {format}, {bytes(item.size_bytes)}
        {item.width !== undefined && item.height !== undefined ? `, ${item.width}×${item.height}` : ""}
        {item.duration !== undefined ? `, ${item.duration} s` : ""}
        {" · "}
        <a href={item.url} download rel="noreferrer">Download</a>
      </figcaption>
    </figure>
  )
}
