/**
 * `@npyts/tfjs` — NumPy arrays and archives as tfjs tensors and models, and back. `@tensorflow/tfjs-core`
 * is a peer dependency; any backend works. Importing it registers the `npz://` load and save routers.
 * @module @npyts/tfjs
 */
import { registerNpzRouters } from './handler.js';

export {
  toTensor, fromTensor, tensorValues, tensorDTypeOf, stringArray,
  type ToTensorOptions, type TensorDTypeOf, type TensorOf, type TensorValues, type WeightDType,
} from './tensors.js';
export { type AnyArchive, type NpzSource, type SourceOptions } from './sources.js';
export { loadTensors, saveTensors, type NamedTensorMap, type LoadTensorsOptions } from './named-tensors.js';
export {
  assignWeights, saveWeights, browserDownload,
  type WeightLike, type ModelLike, type Weights, type WeightKey, type WeightNames, type AssignWeightsOptions, type SaveWeightsOptions, type NpzSink,
} from './weights.js';
export { npzHandler, registerNpzRouters, MODEL_JSON, NPZ_SCHEME, type NpzHandlerOptions, type TopologySource } from './handler.js';

registerNpzRouters();
