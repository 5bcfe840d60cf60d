/**
 * Stage 7, code: the feature model's Gabor responses of the ROI (`extractResponses`, ONNX), then
 * the competitive code, its mask and the 1:N signature, packed with the header into a template
 * (`runCode`).
 */
import { encodeTemplate, type TemplateCoding } from '../../template.ts';
import { encodeResponses, MASK_KEEP } from '../coding.ts';
import { sharedExtractor } from '../extractor.ts';

export interface CodeParams {
  /**
   * share of the usable cells kept as reliable by their winner margin (1: all of them) —
   * docs/lab/matcher.md, "Fragile-bit mask (`MASK_KEEP`) and the trusted-share rescaling"
   */
  maskKeep: number;
  /**
   * which scales the code holds (gabor.ts `CODING_SCALES`): `fine` on the visible-light print
   * profiles measured on real palms, `wide` elsewhere — docs/palm-pipeline.md, "Template codings"
   */
  coding: TemplateCoding;
}

export const DEFAULT_CODE_PARAMS: CodeParams = { maskKeep: MASK_KEEP, coding: 'wide' };

/** The feature model's responses of one ROI crop (the shared ONNX session). */
export async function extractResponses(roi: Float32Array): Promise<Float32Array> {
  const extractor = await sharedExtractor();
  return extractor.responses([roi]);
}

export interface CodeInput {
  /** the responses of `extractResponses` */
  responses: Float32Array;
  /** template cells whose filters read outside the frame (masked), from the ROI stage; null when none */
  outside: Uint8Array | null;
  /** the side the header carries (`unknown` where the side is only a label) */
  hand: 'left' | 'right' | 'unknown';
  /** 0–100, from the quality stage */
  quality: number;
  /** 0–100, from the liveness stage */
  liveness: number;
}

/** The encoded template (version 1), in the profile's coding. */
export function runCode(input: CodeInput, params: CodeParams = DEFAULT_CODE_PARAMS): Uint8Array {
  const code = encodeResponses(
    input.responses,
    0,
    params.maskKeep,
    input.outside ?? undefined,
    params.coding,
  );
  return encodeTemplate({
    version: 1,
    coding: params.coding,
    hand: input.hand,
    quality: input.quality,
    liveness: input.liveness,
    ...code,
  });
}
