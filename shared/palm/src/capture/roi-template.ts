import { encodeTemplate, type TemplateHand } from '../template.ts';
import { encodeResponses, type PalmCode } from './coding.ts';
import { sharedExtractor } from './extractor.ts';
import type { GrayImage } from './image-io.ts';
import { FEATURE_CHANNELS, FEATURE_GRID } from './model-graph.ts';
import { roiInput } from './roi-input.ts';
import { ROI_ROTATION_ANGLES, ROI_SCALE_VARIANTS, rotateRoi, scaleRoi } from './roi-rotation.ts';

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
  return templateOf(code!, options);
}

/**
 * An already-cropped palm ROI → one template per angle of `angles` (degrees, default
 * ROI_ROTATION_ANGLES, 0° first), then one per zoom of `scales` (default ROI_SCALE_VARIANTS when
 * `angles` searches rotation at all, none for `[0]`): the normalised 128² ROI is rotated or
 * magnified about its centre (bilinear) and all variants go through the feature graph in one
 * ONNX batch. The 0° template equals `extractRoiTemplate(image)`.
 */
export async function extractRoiTemplates(
  image: GrayImage,
  angles: readonly number[] = ROI_ROTATION_ANGLES,
  options: RoiTemplateOptions = {},
  scales: readonly number[] = angles.length > 1 ? ROI_SCALE_VARIANTS : [],
): Promise<Uint8Array[]> {
  const roi = roiInput(image);
  const codes = await codesFromRois([
    ...angles.map((a) => rotateRoi(roi, a)),
    ...scales.map((z) => scaleRoi(roi, z)),
  ]);
  return codes.map((c) => templateOf(c, options));
}

function templateOf(code: PalmCode, options: RoiTemplateOptions): Uint8Array {
  return encodeTemplate({
    version: 1,
    hand: options.hand ?? 'unknown',
    quality: options.quality ?? 100,
    liveness: options.liveness ?? 100,
    ...code,
  });
}
