/**
 * `@npyts/onnxruntime` — npyts arrays as ONNX Runtime tensors and back, and weight files
 * (.safetensors, .pt, .npz) swapped into an exported `.onnx` model. `onnxruntime-common` is a peer
 * dependency: install `onnxruntime-node` or `onnxruntime-web` beside it.
 * @module @npyts/onnxruntime
 */
export { toOrtTensor, fromOrtTensor, ortTypeOf, type OrtType, type OrtTensorLike, type ToOrtTensorOptions } from './tensors.js';
export { withWeights, type WeightInput, type WithWeightsOptions, type WithWeightsResult } from './weights.js';
