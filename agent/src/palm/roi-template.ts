import { encodeTemplate, type TemplateHand } from '@palmid/shared/palm/template.ts';
import { encodeResponses, type PalmCode } from './coding.ts';
import { sharedExtractor } from './extractor.ts';
import type { GrayImage } from './image-io.ts';
import { FEATURE_CHANNELS, FEATURE_GRID } from './model-graph.ts';
import { roiInput } from './roi-input.ts';

export interface RoiTemplateOptions {
  hand?: TemplateHand;
  quality?: number;
  liveness?: number;
}

/** Normalised ROIs (128² floats) → palm codes, in one ONNX batch. */
export async function codesFromRois(rois: Float32Array[]): Promise<PalmCode[]> {
  if (rois.length === 0) return [];
  const extractor = await sharedExtractor();
  const responses = await extractor.responses(rois);
  const per = FEATURE_CHANNELS * FEATURE_GRID * FEATURE_GRID;
  return rois.map((_, i) => encodeResponses(responses, i * per));
}

/** An already-cropped palm ROI image (any size, gain or padding) → binary template. */
export async function extractRoiTemplate(
  image: GrayImage,
  options: RoiTemplateOptions = {},
): Promise<Uint8Array> {
  const [code] = await codesFromRois([roiInput(image)]);
  return encodeTemplate({
    version: 1,
    hand: options.hand ?? 'unknown',
    quality: options.quality ?? 100,
    liveness: options.liveness ?? 100,
    ...code!,
  });
}
