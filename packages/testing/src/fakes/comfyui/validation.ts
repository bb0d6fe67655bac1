/**
 * ComfyUI's prompt checks without a node registry: the graph's shape, its output nodes, links to missing nodes and
 * dependency cycles (`validate_prompt`), the order the needed nodes run in, and the prompt text a plan reads.
 */
import { isObject, type Node, type NodeErrors, outputClasses, type ValidationError } from "./types.js"

/** The first string input named `text` or `prompt` in the graph. */
export const promptTextOf = (nodes: Record<string, Node>): string | undefined => {
  for (const node of Object.values(nodes)) {
    for (const [name, value] of Object.entries(node.inputs)) {
      if ((name === "text" || name === "prompt") && typeof value === "string") return value
    }
  }
  return undefined
}

/** Thrown where ComfyUI's `prompt[o_id]` raises a `KeyError`: a link to a node that is not in the graph. */
class MissingNode {
  constructor(readonly id: unknown) {}
  get text() {
    return typeof this.id === "string" ? `'${this.id}'` : String(this.id)
  }
}

type Validation =
  | { readonly ok: true; readonly outputs: Array<string>; readonly nodeErrors: Record<string, NodeErrors> }
  | { readonly ok: false; readonly error: ValidationError; readonly nodeErrors: Record<string, NodeErrors> }

const invalid = (type: string, message: string, details = ""): Validation => ({
  ok: false,
  error: { type, message, details, extra_info: {} },
  nodeErrors: {}
})

/** ComfyUI's `validate_prompt`, minus the node registry (no input types, no required inputs, no value lists). */
export const validatePrompt = (prompt: unknown, targets: unknown): Validation => {
  if (!isObject(prompt)) return invalid("invalid_prompt", "The prompt must be a JSON object of nodes", "")
  const nodes: Record<string, Node> = {}
  const outputs: Array<string> = []
  for (const [id, node] of Object.entries(prompt)) {
    if (!isObject(node) || typeof node["class_type"] !== "string") {
      return invalid(
        "invalid_prompt",
        "Cannot execute because a node is missing the class_type property.",
        `Node ID '#${id}'`
      )
    }
    if (!isObject(node["inputs"])) {
      const message = `Cannot execute because node ${node["class_type"]} has no inputs.`
      return invalid("invalid_prompt", message, `Node ID '#${id}'`)
    }
    nodes[id] = { class_type: node["class_type"], inputs: node["inputs"] }
    const targeted = !Array.isArray(targets) || targets.includes(id)
    if (outputClasses.has(node["class_type"]) && targeted) outputs.push(id)
  }
  if (outputs.length === 0) return invalid("prompt_no_outputs", "Prompt has no outputs")

  const validated = new Map<string, { valid: boolean; reasons: Array<ValidationError> }>()
  const validate = (id: string, visiting: Array<string>): { valid: boolean; reasons: Array<ValidationError> } => {
    const known = validated.get(id)
    if (known !== undefined) return known
    if (visiting.includes(id)) {
      const cycle = [...visiting.slice(visiting.indexOf(id)), id]
      const path = cycle.map((node) => `${node} (${nodes[node]!.class_type})`).join(" -> ")
      for (const node of new Set(cycle)) {
        validated.set(node, {
          valid: false,
          reasons: [{
            type: "dependency_cycle",
            message: "Dependency cycle detected",
            details: path,
            extra_info: { node_id: node, cycle_nodes: [...new Set(cycle)] }
          }]
        })
      }
      return validated.get(id)!
    }
    const errors: Array<ValidationError> = []
    let valid = true
    for (const [name, value] of Object.entries(nodes[id]!.inputs)) {
      if (!Array.isArray(value)) continue
      if (value.length !== 2) {
        errors.push({
          type: "bad_linked_input",
          message: "Bad linked input, must be a length-2 list of [node_id, slot_index]",
          details: name,
          extra_info: { input_name: name, input_config: null, received_value: value }
        })
        continue
      }
      const target: unknown = value[0]
      if (typeof target !== "string" || !(target in nodes)) throw new MissingNode(target)
      try {
        if (!validate(target, [...visiting, id]).valid) valid = false
      } catch (error) {
        if (!(error instanceof MissingNode)) throw error
        valid = false
        validated.set(target, {
          valid: false,
          reasons: [{
            type: "exception_during_inner_validation",
            message: "Exception when validating inner node",
            details: error.text,
            extra_info: {
              input_name: name,
              input_config: null,
              exception_message: error.text,
              exception_type: "KeyError",
              traceback: [],
              linked_node: value
            }
          }]
        })
      }
    }
    const prior = validated.get(id) ?? { valid: true, reasons: [] }
    const result = { valid: prior.valid && valid && errors.length === 0, reasons: [...prior.reasons, ...errors] }
    validated.set(id, result)
    return result
  }

  const good: Array<string> = []
  const failed: Array<ValidationError> = []
  const nodeErrors: Record<string, NodeErrors> = {}
  for (const output of outputs) {
    let result: { valid: boolean; reasons: Array<ValidationError> }
    try {
      result = validate(output, [])
    } catch (error) {
      if (!(error instanceof MissingNode)) throw error
      result = {
        valid: false,
        reasons: [{
          type: "exception_during_validation",
          message: "Exception when validating node",
          details: error.text,
          extra_info: { exception_type: "KeyError", traceback: [] }
        }]
      }
      validated.set(output, result)
    }
    if (result.valid) {
      good.push(output)
      continue
    }
    for (const reason of result.reasons) failed.push(reason)
    for (const [id, { reasons, valid }] of validated) {
      if (valid || reasons.length === 0) continue
      const entry = nodeErrors[id] ??= { errors: reasons, dependent_outputs: [], class_type: nodes[id]!.class_type }
      entry.dependent_outputs.push(output)
    }
  }
  if (good.length === 0) {
    return {
      ok: false,
      error: {
        type: "prompt_outputs_failed_validation",
        message: "Prompt outputs failed validation",
        details: failed.map((error) => `${error.message}: ${error.details}`).join("\n"),
        extra_info: {}
      },
      nodeErrors
    }
  }
  return { ok: true, outputs: good, nodeErrors }
}

/** The nodes the outputs need, each after the nodes it links to (graph order otherwise). */
export const executionOrder = (nodes: Record<string, Node>, outputs: ReadonlyArray<string>): Array<string> => {
  const linksOf = (id: string) =>
    Object.values(nodes[id]!.inputs).flatMap((value) =>
      Array.isArray(value) && typeof value[0] === "string" && value[0] in nodes ? [value[0]] : []
    )
  const needed = new Set<string>()
  const visit = (id: string) => {
    if (needed.has(id)) return
    needed.add(id)
    linksOf(id).forEach(visit)
  }
  outputs.forEach(visit)
  const order: Array<string> = []
  const done = new Set<string>()
  const remaining = Object.keys(nodes).filter((id) => needed.has(id))
  while (remaining.length > 0) {
    const index = remaining.findIndex((id) => linksOf(id).every((link) => done.has(link)))
    const [next] = remaining.splice(index === -1 ? 0 : index, 1)
    order.push(next!)
    done.add(next!)
  }
  return order
}
