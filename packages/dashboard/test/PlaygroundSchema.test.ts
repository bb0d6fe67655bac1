/**
 * The playground's forms (`ui/playground/schema.ts`) read from the API's own OpenAPI document: every generation
 * endpoint has a form with its models; the contract's minimal request of every model, typed into its form as text,
 * makes that request's body again; and a field's rules are checked before sending, with the field's name.
 */
import { describe, expect, it } from "@effect/vitest"
import { Api, Catalog, Examples } from "@mediagate/contract"
import { bodyOf, endpointsOf, type FormValues, type OpenApiDocument, probeOf, shown } from "../ui/playground/schema.js"

const document = Api.documents(Api.MediagateApi).public as unknown as OpenApiDocument
const forms = endpointsOf(document)
const formOf = (endpoint: string) => {
  const form = forms.find((f) => f.endpoint === endpoint)
  if (form === undefined) throw new Error(`no form for ${endpoint}`)
  return form
}

describe("the playground's forms", () => {
  it("has a form for every generation endpoint, with its models, and no estimate endpoint among them", () => {
    expect(forms.map((form) => form.endpoint).sort()).toEqual(Object.keys(Catalog.endpoints).sort())
    for (const form of forms) {
      const [family] = form.endpoint.split("/")
      expect(form.models.length).toBeGreaterThan(0)
      for (const model of form.models) expect(Catalog.modelIds).toContain(model)
      expect(form.models.every((model) => model.startsWith(family!))).toBe(true)
      expect(form.fields.length).toBeGreaterThan(0)
    }
  })

  it("turns the text of every minimal request's fields back into that request", () => {
    for (const { body, endpoint } of Examples.minimalRequests) {
      const form = formOf(endpoint)
      // what a person types: each value as its field shows it
      const values: FormValues = Object.fromEntries(
        Object.entries(body.input as Record<string, unknown>).map(([name, value]) => [name, shown(value)])
      )
      const made = bodyOf(form, body.model, values)
      expect(made, `${endpoint} ${body.model}`).toEqual({
        _tag: "Body",
        body: { model: body.model, input: body.input }
      })
    }
  })

  it("edits each field by its kind and checks its rules before sending, naming the field", () => {
    const video = formOf("vendor3/text-to-video")
    const kinds = Object.fromEntries(video.fields.map((field) => [field.name, field.kind]))
    expect(kinds).toMatchObject({
      prompt: "long-text",
      aspect_ratio: "select",
      seed: "number",
      enable_translation: "boolean"
    })
    const image = formOf("vendor4/image-to-image")
    const imageKinds = Object.fromEntries(image.fields.map((field) => [field.name, field.kind]))
    expect(imageKinds).toMatchObject({ image: "media", images: "media-list", size: "choice" })

    const check = (values: FormValues) => bodyOf(video, "vendor3-3", values)
    expect(check({})).toEqual({ _tag: "Invalid", messages: { prompt: "input.prompt: is required" } })
    expect(check({ prompt: "p", seed: "5" })).toEqual({
      _tag: "Invalid",
      messages: { seed: "input.seed: must be at least 10000" }
    })
    expect(check({ prompt: "p", seed: "12345.5" })).toMatchObject({
      messages: { seed: "input.seed: must be a whole number" }
    })
    expect(check({ prompt: "p", aspect_ratio: "4:3" })).toMatchObject({
      messages: { aspect_ratio: "input.aspect_ratio: must be one of 16:9, 9:16, Auto" }
    })
    expect(check({ prompt: "p", seed: "12345", enable_translation: "false", aspect_ratio: "9:16" })).toEqual({
      _tag: "Body",
      body: { model: "vendor3-3", input: { prompt: "p", seed: 12345, enable_translation: false, aspect_ratio: "9:16" } }
    })
    // a choice: a preset, or text of its pattern
    const sized = (size: string) =>
      bodyOf(image, "vendor4-4-0", { prompt: "p", image: "https://example.com/a.png", size })
    expect(sized("2K")).toMatchObject({ _tag: "Body" })
    expect(sized("2048x1024")).toMatchObject({ _tag: "Body" })
    expect(sized("huge")).toMatchObject({ _tag: "Invalid" })
    // several media, one per line
    expect(bodyOf(image, "vendor4-4-0", {
      prompt: "p",
      image: "https://example.com/a.png",
      images: "https://example.com/b.png\n\n data:image/png;base64,AAAA \n"
    })).toEqual({
      _tag: "Body",
      body: {
        model: "vendor4-4-0",
        input: {
          prompt: "p",
          image: "https://example.com/a.png",
          images: ["https://example.com/b.png", "data:image/png;base64,AAAA"]
        }
      }
    })
  })

  it("fills the required fields with stand-ins that pass their rules, to ask for a model's defaults", () => {
    for (const form of forms) {
      const probe = probeOf(form, form.models[0]!, {})
      const required = form.fields.filter((field) => field.required)
      if (required.some((field) => field.kind === "json")) {
        expect(probe, form.endpoint).toBeUndefined()
        continue
      }
      expect(probe, form.endpoint).toBeDefined()
      expect(Object.keys(probe!.input).sort(), form.endpoint).toEqual(required.map((field) => field.name).sort())
    }
    // what is filled stays as typed
    expect(probeOf(formOf("vendor3/text-to-video"), "vendor3-3", { seed: "12345" })).toEqual({
      model: "vendor3-3",
      input: { prompt: "a", seed: 12345 }
    })
    // a filled field its rules refuse: no probe
    expect(probeOf(formOf("vendor3/text-to-video"), "vendor3-3", { seed: "5" })).toBeUndefined()
  })
})
