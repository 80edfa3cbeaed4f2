import type * as tfl from '@tensorflow/tfjs-layers';
import type { AnyArchive } from '@npyts/tfjs';

/** The demo's CNN as tfjs layers: demo/train_cnn.py's network, channels-last. */
export function digitsCnn(): tfl.Sequential;

/** What {@link runDigitsCnn} found on the held-out digits. */
export interface DigitsCnnResult {
  n: number;
  correct: number;
  agree: number;
  torchCorrect: number;
  maxAbsDiff: number;
}

/** Assign the archive's PyTorch weights to the twin (checked) and classify its held-out digits. */
export function runDigitsCnn(archive: AnyArchive): Promise<DigitsCnnResult>;
