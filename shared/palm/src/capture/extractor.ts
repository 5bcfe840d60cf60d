import * as ort from 'onnxruntime-node';
import { FEATURE_CHANNELS, FEATURE_GRID, ROI_SIZE } from './model-graph.ts';
import { DEFAULT_MODEL_PATH } from './model-path.ts';

export { DEFAULT_MODEL_PATH };

/** One ONNX Runtime session for the whole process: creating it costs far more than running it. */
export class FeatureExtractor {
  private constructor(private readonly session: ort.InferenceSession) {}

  static async create(model: string | Uint8Array = DEFAULT_MODEL_PATH): Promise<FeatureExtractor> {
    const options: ort.InferenceSession.SessionOptions = {
      intraOpNumThreads: 1,
      interOpNumThreads: 1,
      graphOptimizationLevel: 'all',
    };
    const session =
      typeof model === 'string'
        ? await ort.InferenceSession.create(model, options)
        : await ort.InferenceSession.create(model, options);
    return new FeatureExtractor(session);
  }

  /** ROIs (each ROI_SIZE² floats) → responses, FEATURE_CHANNELS × GRID² floats per ROI. */
  async responses(rois: Float32Array[]): Promise<Float32Array> {
    const n = rois.length;
    const plane = ROI_SIZE * ROI_SIZE;
    // one ROI (the capture path) is fed as it is: the session only reads it
    let input = n === 1 ? rois[0] : undefined;
    if (!input || input.length !== plane) {
      input = new Float32Array(n * plane);
      for (const [i, r] of rois.entries()) input.set(r, i * plane);
    }
    const feeds = { roi: new ort.Tensor('float32', input, [n, 1, ROI_SIZE, ROI_SIZE]) };
    const out = await this.session.run(feeds);
    const t = out.responses;
    if (!t || t.data.length !== n * FEATURE_CHANNELS * FEATURE_GRID * FEATURE_GRID) {
      throw new Error('palm model returned an unexpected output');
    }
    return t.data as Float32Array;
  }

  async release(): Promise<void> {
    await this.session.release();
  }
}

let shared: Promise<FeatureExtractor> | undefined;
export function sharedExtractor(): Promise<FeatureExtractor> {
  shared ??= FeatureExtractor.create();
  return shared;
}
