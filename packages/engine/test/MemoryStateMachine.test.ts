import * as Layer from "effect/Layer"
import * as TaskStorage from "../src/TaskStorage.js"
import { stateMachineProperty } from "./StateMachineProperty.js"

stateMachineProperty("memory", (billing) => TaskStorage.layerMemory().pipe(Layer.provide(billing)), 300)
