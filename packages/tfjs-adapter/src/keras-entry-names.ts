/**
 * What the `@npyts/tfjs/keras-layers` entry registers, by Keras's names: its layer classes, and the
 * activations with the names tfjs finds them by. One list for the config translator (keras-config.ts,
 * whose messages name the entry where it would help) and the entry itself (keras-layers.ts, which
 * registers them). Free of tfjs imports, so the translator can ask it without loading the entry.
 */

/** Keras activation names that tfjs registers itself, under the same or another name, computing the same function. */
const SAME_IN_TFJS: Readonly<Record<string, string>> = {
  linear: 'linear',
  relu: 'relu',
  relu6: 'relu6',
  elu: 'elu',
  selu: 'selu',
  sigmoid: 'sigmoid',
  softplus: 'softplus',
  softsign: 'softsign',
  tanh: 'tanh',
  softmax: 'softmax',
  log_softmax: 'logSoftmax',
  gelu: 'gelu',
  mish: 'mish',
  // tfjs's `swish` is x·sigmoid(x), Keras's silu (and its alias swish).
  swish: 'swish',
  silu: 'swish',
};

/** Keras 3 activation names → the activation tfjs or the `@npyts/tfjs/keras-layers` entry registers. */
const KERAS3_ACTIVATIONS: Readonly<Record<string, string>> = {
  ...SAME_IN_TFJS,
  hard_silu: 'hardSilu',
  hard_swish: 'hardSwish',
  hard_sigmoid: 'kerasHardSigmoid',
  leaky_relu: 'leakyRelu',
  exponential: 'exponential',
  hard_tanh: 'hardTanh',
  log_sigmoid: 'logSigmoid',
  celu: 'celu',
  tanh_shrink: 'tanhShrink',
  soft_shrink: 'softShrink',
  hard_shrink: 'hardShrink',
  squareplus: 'squareplus',
  sparse_plus: 'sparsePlus',
  sparse_sigmoid: 'sparseSigmoid',
};

/** Keras 2 (legacy `.h5` files) differs: its hard_sigmoid is tfjs's. */
const KERAS2_ACTIVATIONS: Readonly<Record<string, string>> = { ...KERAS3_ACTIVATIONS, hard_sigmoid: 'hardSigmoid' };

/**
 * The name under which tfjs (with `@npyts/tfjs/keras-layers` imported) finds the activation Keras names `name`
 * (what a Keras config's `activation` holds), or `null` where neither has one (`glu`, `sparsemax`,
 * `threshold`, … take arguments or shapes these do not). A config translator writes this name in the
 * tfjs model JSON. Keras 3's `hard_sigmoid` is relu6(x + 3) / 6 and Keras 2's is
 * clip(0.2·x + 0.5, 0, 1) (tfjs's `hardSigmoid`): give the Keras major version the file was written by.
 * @example
 * kerasActivation('hard_silu');          // 'hardSilu'
 * kerasActivation('hard_sigmoid');       // 'kerasHardSigmoid' (Keras 3's function)
 * kerasActivation('hard_sigmoid', 2);    // 'hardSigmoid' (tfjs's, which is Keras 2's)
 * kerasActivation('glu');                // null
 */
export function kerasActivation(name: string, kerasMajor: 2 | 3 = 3): string | null {
  const table = kerasMajor === 2 ? KERAS2_ACTIVATIONS : KERAS3_ACTIVATIONS;
  return Object.hasOwn(table, name) ? table[name]! : null;
}

/**
 * Keras's layers that are the identity at inference, each registered under its Keras class name
 * (Keras 3.15 returns their input unchanged with `training=False`; tested).
 * @example
 * KERAS_INFERENCE_IDENTITIES.includes('RandomFlip');   // true
 */
export const KERAS_INFERENCE_IDENTITIES: readonly string[] = [
  'RandomFlip',
  'RandomRotation',
  'RandomZoom',
  'RandomTranslation',
  'RandomContrast',
  'RandomBrightness',
  'RandomGrayscale',
  'RandomHue',
  'RandomSaturation',
  'RandomSharpness',
  'RandomShear',
  'RandomPosterization',
  'RandomInvert',
  'RandomColorDegeneration',
  'RandomColorJitter',
  'RandomErasing',
  'RandomGaussianBlur',
  'RandomPerspective',
  'RandomElasticTransform',
  'SpatialDropout2D',
  'SpatialDropout3D',
  'ActivityRegularization',
];

/**
 * The Keras class names this entry registers (layers), for a config translator's messages.
 * @example
 * KERAS_LAYER_CLASSES.includes('MultiHeadAttention');   // true
 */
export const KERAS_LAYER_CLASSES: readonly string[] = [
  'Subtract',
  'UnitNormalization',
  'Cropping1D',
  'ZeroPadding1D',
  'UpSampling1D',
  'Normalization',
  'GroupNormalization',
  'EinsumDense',
  'MultiHeadAttention',
  'Conv1DTranspose',
  'GRU',
  ...KERAS_INFERENCE_IDENTITIES,
];

/** tfjs's activation names (its class names, and the snake_case form its JSON writes) → Keras 3's. */
const KERAS3_NAME_OF: ReadonlyMap<string, string> = (() => {
  const out = new Map<string, string>();
  const snake = (name: string): string => name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
  for (const [keras, tfjs] of Object.entries(KERAS3_ACTIVATIONS)) {
    for (const form of [tfjs, snake(tfjs)]) if (!out.has(form)) out.set(form, keras);
  }
  return out;
})();

/**
 * The Keras 3 activation that computes what tfjs's activation `name` computes (its class name or the
 * snake_case form tfjs's JSON writes), or `null` where Keras 3 has none: tfjs's `hardSigmoid` is
 * Keras 2's function, not Keras 3's `hard_sigmoid`. The inverse of {@link kerasActivation}.
 * @example
 * kerasActivationOf('log_softmax');          // 'log_softmax'
 * kerasActivationOf('keras_hard_sigmoid');   // 'hard_sigmoid'
 * kerasActivationOf('hard_sigmoid');         // null (tfjs's hardSigmoid, Keras 2's function)
 */
export function kerasActivationOf(name: string): string | null {
  return KERAS3_NAME_OF.get(name) ?? null;
}
