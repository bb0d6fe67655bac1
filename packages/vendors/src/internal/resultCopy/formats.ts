/**
 * The formats of result files: a format from its content type, URL or first bytes, its extension, and the name a
 * copied file gets in the store.
 */
const formatsByType: Readonly<Record<string, string>> = {
  "image/png": "png",
  "image/jpeg": "jpeg",
  "image/jpg": "jpeg",
  "image/webp": "webp",
  "image/gif": "gif",
  "video/mp4": "mp4",
  "video/webm": "webm",
  "video/quicktime": "mov",
  "audio/mpeg": "mp3",
  "audio/mp3": "mp3",
  "audio/wav": "wav",
  "audio/x-wav": "wav",
  "audio/mp4": "m4a"
}

/** The file extension of a format, and the formats we know. */
export const extensions: Readonly<Record<string, string>> = {
  png: "png",
  jpeg: "jpg",
  jpg: "jpg",
  webp: "webp",
  gif: "gif",
  mp4: "mp4",
  webm: "webm",
  mov: "mov",
  mp3: "mp3",
  wav: "wav",
  m4a: "m4a"
}

export const normalFormat = (format: string): string | undefined => {
  const lower = format.toLowerCase().replace(/^\./, "")
  return lower === "jpg" ? "jpeg" : extensions[lower] === undefined ? undefined : lower
}

export const formatOfType = (contentType: string | undefined): string | undefined =>
  contentType === undefined ? undefined : formatsByType[contentType.split(";")[0]!.trim().toLowerCase()]

export const formatOfUrl = (url: string): string | undefined => {
  if (!URL.canParse(url)) return undefined
  const path = new URL(url).pathname
  const name = path.slice(path.lastIndexOf("/") + 1)
  const dot = name.lastIndexOf(".")
  return dot > 0 ? normalFormat(name.slice(dot + 1)) : undefined
}

/** The format of a file from its first bytes, when they say. */
export const sniffFormat = (head: Uint8Array): string | undefined => {
  const ascii = (from: number, to: number) => String.fromCharCode(...head.subarray(from, to))
  if (head.length >= 8 && head[0] === 0x89 && ascii(1, 4) === "PNG") return "png"
  if (head.length >= 3 && head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff) return "jpeg"
  if (head.length >= 12 && ascii(0, 4) === "RIFF" && ascii(8, 12) === "WEBP") return "webp"
  if (head.length >= 12 && ascii(0, 4) === "RIFF" && ascii(8, 12) === "WAVE") return "wav"
  if (head.length >= 6 && ascii(0, 3) === "GIF") return "gif"
  if (head.length >= 12 && ascii(4, 8) === "ftyp") return ascii(8, 10) === "qt" ? "mov" : "mp4"
  if (head.length >= 4 && head[0] === 0x1a && head[1] === 0x45 && head[2] === 0xdf && head[3] === 0xa3) return "webm"
  if (head.length >= 3 && (ascii(0, 3) === "ID3" || (head[0] === 0xff && (head[1]! & 0xe0) === 0xe0))) return "mp3"
  return undefined
}

/** The content type a format is stored with (the store serves by extension). */
export const keyName = (index: number, kind: string | undefined, format: string) =>
  `${kind ?? "output"}-${index}.${extensions[format] ?? "bin"}`
