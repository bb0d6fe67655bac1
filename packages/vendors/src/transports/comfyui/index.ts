/**
 * `comfyui`: a self-hosted ComfyUI (`ComfyUpstream.ts`) running the workflows stored on the channel. Its API key is
 * optional (sent to a proxy in front of it); a lost submit's prompt is looked up by our key in its queue and history.
 * A channel's mapping targets must name its stored workflows, and each workflow must be well formed.
 *
 * @since 0.1.0
 */
import * as Comfy from "../../ComfyUpstream.js"
import * as Transport from "../../Transport.js"

/**
 * The ComfyUI transport.
 *
 * @since 0.1.0
 * @category transports
 */
export const comfyui = Transport.make({
  name: "comfyui",
  summary: "a self-hosted ComfyUI",
  baseUrl: "required",
  apiKey: "optional",
  mapping: true,
  workflows: true,
  callbacks: false,
  submitRecovery: "lookup",
  check: (settings) => {
    for (const [model, entry] of Object.entries(settings.mapping ?? {})) {
      if (settings.workflows?.[entry.target] === undefined) {
        return `settings.mapping.${model}.target: no workflow named ${entry.target} in settings.workflows`
      }
    }
    for (const [name, workflow] of Object.entries(settings.workflows ?? {})) {
      const broken = Comfy.workflowProblem(workflow)
      if (broken !== undefined) return `settings.workflows.${name}: ${broken}`
    }
    return undefined
  },
  build: Transport.fromContext(Comfy.make)
})
