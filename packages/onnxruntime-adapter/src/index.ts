/**
 * `@npyts/onnxruntime` — npyts arrays as ONNX Runtime tensors and back, and weight files
 * (.safetensors, .pt, .npz) swapped into an exported `.onnx` model, and sessions checked against
 * PyTorch's outputs module by module. `onnxruntime-common` is a peer
 * dependency: install `onnxruntime-node` or `onnxruntime-web` beside it.
 * @module @npyts/onnxruntime
 */
export { toOrtTensor, fromOrtTensor, ortTypeOf, type OrtType, type OrtTensorLike, type ToOrtTensorOptions } from './tensors.js';
export { checkSession, DEFAULT_RTOL, type CheckSessionOptions, type CheckSessionReport, type SessionLike } from './check.js';
export type { ModelInput } from './model.js';
export { withWeights, type WeightInput, type WithWeightsOptions, type WithWeightsResult, type ExternalDataFile, type WeightSessionOptions } from './weights.js';
