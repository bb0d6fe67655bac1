import * as Layer from "effect/Layer"
import * as TaskStorage from "../src/TaskStorage.js"
import { stateMachineProperty } from "./StateMachineProperty.js"

stateMachineProperty("memory", (clock, billing) => TaskStorage.layerMemory({ clock: clock.now }).pipe(Layer.provide(billing)), 300)
