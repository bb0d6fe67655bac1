/**
 * A minimal ComfyUI API-format workflow for the fake's users: text to image, the graph ComfyUI's own examples start
 * from.
 */

/**
 * A minimal valid text-to-image API-format workflow (CheckpointLoaderSimple, CLIPTextEncode ×2, EmptyLatentImage,
 * KSampler, VAEDecode, SaveImage), for tests and docs. The positive prompt is node "6"'s `text`; clone it to edit.
 */
export const textToImageWorkflow: Record<string, unknown> = {
  "3": {
    class_type: "KSampler",
    inputs: {
      seed: 156680208700286,
      steps: 20,
      cfg: 8,
      sampler_name: "euler",
      scheduler: "normal",
      denoise: 1,
      model: ["4", 0],
      positive: ["6", 0],
      negative: ["7", 0],
      latent_image: ["5", 0]
    },
    _meta: { title: "KSampler" }
  },
  "4": {
    class_type: "CheckpointLoaderSimple",
    inputs: { ckpt_name: "v1-5-pruned-emaonly.safetensors" },
    _meta: { title: "Load Checkpoint" }
  },
  "5": {
    class_type: "EmptyLatentImage",
    inputs: { width: 512, height: 512, batch_size: 1 },
    _meta: { title: "Empty Latent Image" }
  },
  "6": {
    class_type: "CLIPTextEncode",
    inputs: { text: "a lighthouse on a cliff at dawn", clip: ["4", 1] },
    _meta: { title: "CLIP Text Encode (Positive Prompt)" }
  },
  "7": {
    class_type: "CLIPTextEncode",
    inputs: { text: "blurry, low quality", clip: ["4", 1] },
    _meta: { title: "CLIP Text Encode (Negative Prompt)" }
  },
  "8": {
    class_type: "VAEDecode",
    inputs: { samples: ["3", 0], vae: ["4", 2] },
    _meta: { title: "VAE Decode" }
  },
  "9": {
    class_type: "SaveImage",
    inputs: { filename_prefix: "ComfyUI", images: ["8", 0] },
    _meta: { title: "Save Image" }
  }
}
