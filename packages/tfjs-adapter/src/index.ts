/**
 * `@npyts/tfjs` — NumPy arrays and archives as tfjs tensors and models, and back. `@tensorflow/tfjs-core`
 * is a peer dependency; any backend works. Importing it registers the `npz://` load and save routers.
 * @module @npyts/tfjs
 */
import { registerNpzRouters } from './handler.js';

export {
  toTensor,
  fromTensor,
  tensorValues,
  tensorDTypeOf,
  stringArray,
  type ToTensorOptions,
  type TensorDTypeOf,
  type TensorOf,
  type TensorValues,
  type WeightDType,
} from './tensors.js';
export { browserDownload, type NpzSink, type NpzSource, type SourceOptions, type WeightSource } from './sources.js';
export { loadTensors, saveTensors, type NamedTensorMap, type LoadTensorsOptions } from './named-tensors.js';
export type { WeightLike, ModelLike, Weights, WeightKey, WeightNames } from './weights.js';
export {
  assignWeights,
  saveWeights,
  planWeights,
  type AssignWeightsOptions,
  type SaveWeightsOptions,
  type PlanWeightsOptions,
} from './assign.js';
export type { PlannedWeight, PytorchLayoutOptions } from './pytorch.js';
export type { Transform } from './transform.js';
export { checkModel, DEFAULT_RTOL, type CheckModelOptions, type CheckResult } from './check.js';
export { CHECK_PREFIX } from './weights.js';
export type { LayersModelLike, LayerLike, NodeLike, SymbolicLike, LayerShape } from './layers.js';
export { kerasHandler, type KerasHandlerOptions } from './keras.js';
export { npzHandler, registerNpzRouters, MODEL_JSON, NPZ_SCHEME, type NpzHandlerOptions, type TopologySource } from './handler.js';

registerNpzRouters();
